"""Few-shot demonstrations for the Actor (`ActorPolicy(shots=...)`), retrieved from a dataset built by
`scalehop dataset build`: its `hf/` folder (`DatasetDict.save_to_disk`), one split per task type.

Every single-step row is one demonstration, every step of a multi-step row one more (the steps before it are its
history), every page-QA row a `stop "answer"`. A task row that kept its goal page (`goal_observation_text`) adds
the demonstration that ends it: on that page, after all of its actions, `ACTION: stop` (`stop "answer"` when the
row has an `answer`: an information-seeking task, `synthesis.answers`). A demonstration is a
(prompt, answer) pair in the Actor's own format: the prompt is the Actor's question
(`explorer/roles/prompts/actor.md`) filled with the row's instruction, page and elements, taken from
`observation_text` (the observation's text form); the answer is the Actor's grammar, `ACTION: click [12]` then
`REASON: ...`, which `explorer.roles.actor.parse_action` reads back.
A row whose action the grammar cannot write (a typed text with a double quote, a select without its option) is
left out. `ShotRetriever(intent, obs)` returns the k demonstrations whose instruction is closest to the intent
(cosine similarity of MiniLM embeddings), closest first; ties keep the dataset's order, so the steps of one
multi-step task stay in order.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from explorer.errors import ConfigError
from explorer.models.grammar import REASON_CHARS
from explorer.records import Observation
from explorer.roles.actor import ANSWER_REASON, MAX_SHOWN, STOP_REASON, actor_question
from explorer.roles.shortlist import shortlist

Embed = Callable[[Sequence[str]], np.ndarray]  # texts -> one row per text (normalized here)
BUILD = "scalehop dataset build RUN_DIR... --out {folder}"
_PAGE = re.compile(r"^Page: (.*) \| (\S+)$")
_ELEMENT = re.compile(r"^\[(\d+)\]")
_COLUMNS = {
    "single_step": ["instruction", "observation_text", "action", "action_text", "reasoning"],
    "multi_step": ["instruction", "steps"],
    "page_qa": ["question", "answer", "observation_text"],
}
# newer columns (older datasets lack them)
_OPTIONAL = ["page_texts", "goal_observation_text", "goal_page_texts", "answer"]


@dataclass(frozen=True)
class Demonstration:
    """One demonstration: the instruction it is retrieved by, and the (prompt, answer) pair the Actor reads."""

    instruction: str
    prompt: str
    answer: str
    split: str = "single_step"  # the dataset split it comes from: single_step, multi_step or page_qa


def action_answer(action: Mapping, reasoning: str = "") -> str | None:
    """A dataset action (a dict of `explorer.records.Action`'s fields) as the Actor's answer, `ACTION: ...` then
    `REASON: ...`; None when the grammar cannot write it."""
    kind, mark = action.get("kind"), action.get("mark")
    at = f" [{mark}]" if mark is not None else ""
    if kind in ("click", "hover", "type", "select") and mark is None:
        return None
    if kind in ("click", "hover", "back"):
        line = f"{kind}{at}"
    elif kind == "type":
        text = _quoted(action.get("text"))
        line = None if text is None else f"type{at} {text}" + (" enter" if action.get("press_enter") else "")
    elif kind == "select":
        option = _quoted(action.get("option"))
        line = None if option is None else f"select{at} {option}"
    elif kind == "scroll":
        line = f"scroll{at} {action.get('direction') or 'down'}"
    elif kind == "goto":
        url = (action.get("url") or "").strip()
        line = f"goto {url}" if url and " " not in url else None
    elif kind == "stop":
        answer = action.get("answer")
        line = "stop" if not answer else (None if _quoted(answer) is None else f"stop {_quoted(answer)}")
    else:
        line = None
    reason = _clipped(" ".join((reasoning or "").split()), REASON_CHARS)
    return None if line is None else f"ACTION: {line}\nREASON: {reason or 'It moves the task forward.'}"


def _clipped(text: str, limit: int) -> str:
    """`text` cut to at most `limit` characters, at a word boundary where there is one: the Actor's grammar writes
    at most REASON_CHARS of reason, so it learns and is shown no longer ones."""
    if len(text) <= limit:
        return text
    cut = text[: limit + 1].rsplit(" ", 1)[0]
    return (cut if cut and len(cut) <= limit else text[:limit]).rstrip(" ,;:")


def _quoted(value: str | None) -> str | None:
    """`"value"` on one line, or None when empty or holding a double quote (the grammar has no escapes)."""
    value = " ".join((value or "").split())
    return None if not value or '"' in value else f'"{value}"'


def demo_prompt(
    instruction: str,
    observation_text: str,
    history: Sequence[str] = (),
    mark: int | None = None,
    texts: Sequence[str] = (),
) -> str:
    """The Actor's question for a dataset page, written by the live Actor's own `actor_question`: the task, the
    page's title, path and headings, its text blocks, the earlier steps and the MAX_SHOWN element lines of
    `observation_text` closest to the instruction (`explorer.roles.shortlist`; the line of `mark`, the acted-on
    element, among them)."""
    lines = observation_text.splitlines()
    head = [line for line in lines if not _ELEMENT.match(line)]
    elements = [line for line in lines if _ELEMENT.match(line)]
    keep = next((i for i, line in enumerate(elements) if mark is not None and line.startswith(f"[{mark}]")), None)
    shown = [elements[i] for i in shortlist(instruction, elements, MAX_SHOWN, keep=keep)]
    return actor_question(instruction, _page(head), texts, history, shown)[1]["content"]


def _page(head: list[str]) -> str:
    """`Page: "title" (path)` and the headings line, as `explorer.roles.context.page_summary` writes them."""
    out = []
    for line in head:
        page = _PAGE.match(line)
        if page:
            path = re.sub(r"^https?://[^/]+", "", page.group(2)) or "/"
            out.append(f'Page: "{page.group(1)}" ({path})')
        elif line.startswith("Headings: "):
            out.append("Headings: " + " / ".join(h[:60] for h in line[len("Headings: ") :].split(" / ")[:2]))
    return "\n".join(out) or "Page: (unknown)"


def demonstrations(splits: Mapping[str, Iterable[Mapping]]) -> list[Demonstration]:
    """The demonstrations of a dataset's rows (`split name -> rows`), in split and row order."""
    out: list[Demonstration] = []
    for row in splits.get("single_step", ()):
        _add(out, "single_step", row["instruction"], row, row["action"], row["reasoning"])
        _add_stop(out, "single_step", row, [row["action_text"]])
    for row in splits.get("multi_step", ()):
        history: list[str] = []
        for step in _steps(row["steps"]):
            _add(out, "multi_step", row["instruction"], step, step["action"], step["reasoning"], history)
            history.append(step["action_text"])
        _add_stop(out, "multi_step", row, history)
    for row in splits.get("page_qa", ()):
        _add(out, "page_qa", row["question"], row, {"kind": "stop", "answer": row["answer"]}, ANSWER_REASON)
    return out


def _add(
    out: list,
    split: str,
    instruction: str,
    page: Mapping,
    action: Mapping,
    reasoning: str,
    history: Sequence[str] = (),
) -> None:
    """Append the demonstration of one page (a row or step with `observation_text` and maybe `page_texts`) and
    action, unless the grammar cannot write the action."""
    answer = action_answer(action, reasoning)
    if answer is not None and instruction:
        texts = page.get("page_texts") or ()
        prompt = demo_prompt(instruction, page["observation_text"], history, action.get("mark"), texts)
        out.append(Demonstration(instruction, prompt, answer, split))


def _add_stop(out: list, split: str, row: Mapping, history: Sequence[str]) -> None:
    """Append the demonstration that ends a task: on the page its actions reach (the row's goal page, when the
    dataset kept it), after those actions, the Actor stops, with the row's `answer` when it has one."""
    if row.get("goal_observation_text"):
        goal = {"observation_text": row["goal_observation_text"], "page_texts": row.get("goal_page_texts")}
        if answer := row.get("answer"):
            _add(out, split, row["instruction"], goal, {"kind": "stop", "answer": answer}, ANSWER_REASON, history)
        else:
            _add(out, split, row["instruction"], goal, {"kind": "stop"}, STOP_REASON, history)


def _steps(steps) -> list[Mapping]:
    """A multi-step row's steps as a list of dicts (a `Sequence` feature reads back as a dict of lists)."""
    if isinstance(steps, Mapping):
        keys = list(steps)
        return [dict(zip(keys, values, strict=True)) for values in zip(*steps.values(), strict=True)]
    return list(steps)


def _split(folder: Path) -> Iterable[Mapping]:
    """One saved split's rows, only the columns read here (no images decoded); an empty split is empty: its
    save_to_disk wrote no shard, which `datasets.load_from_disk` cannot read back."""
    import datasets

    if folder.name not in _COLUMNS or not json.loads((folder / "state.json").read_text()).get("_data_files"):
        return []
    ds = datasets.Dataset.load_from_disk(str(folder))
    columns = _COLUMNS[folder.name]
    if not all(c in ds.column_names for c in columns):
        return []
    return ds.select_columns(columns + [c for c in _OPTIONAL if c in ds.column_names])


def load_demonstrations(folder: str | Path) -> list[Demonstration]:
    """The demonstrations of the dataset in `folder` (a `scalehop dataset build` output, or its hf/ folder);
    a missing, unreadable or empty dataset is a one-line ConfigError naming the folder and the command."""
    folder = Path(folder)
    hf = folder if (folder / "dataset_dict.json").is_file() else folder / "hf"
    build = BUILD.format(folder=folder)
    if not (hf / "dataset_dict.json").is_file():
        raise ConfigError(f"--dataset {folder}: no dataset there (no hf/ folder): build one with `{build}`")
    try:
        splits = {name: _split(hf / name) for name in json.loads((hf / "dataset_dict.json").read_text())["splits"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]
        raise ConfigError(f"--dataset {folder}: cannot read hf/ ({first}): rebuild it with `{build}`") from None
    demos = demonstrations(splits)
    if not demos:
        raise ConfigError(
            f"--dataset {folder}: no single-step, multi-step or page-QA rows to show the Actor: build one with "
            f"`{build}` from runs that kept samples"
        )
    return demos


class ShotRetriever:
    """`(intent, obs) -> [(prompt, answer), ...]`: the k demonstrations whose instruction is closest to the
    intent (`embed`: texts -> rows, by default the MiniLM `explorer.models.Embedder().embed`)."""

    def __init__(self, demos: Sequence[Demonstration], k: int, embed: Embed | None = None) -> None:
        _check_k(k)
        if embed is None:
            from explorer.models import Embedder

            embed = Embedder().embed
        self.demos, self.k, self.embed = list(demos), k, embed
        rows = {text: i for i, text in enumerate(dict.fromkeys(d.instruction for d in self.demos))}
        instructions = list(rows)
        self._index = [rows[d.instruction] for d in self.demos]
        self._vectors = _normalized(embed(instructions)) if instructions else np.zeros((0, 1), dtype=np.float32)
        self._cache: dict[str, list[tuple[str, str]]] = {}

    @classmethod
    def from_dataset(cls, folder: str | Path, k: int, embed: Embed | None = None) -> ShotRetriever:
        """A retriever over the dataset in `folder` (see `load_demonstrations`)."""
        _check_k(k)  # before loading anything
        return cls(load_demonstrations(folder), k, embed)

    def ranked(self, intent: str) -> list[Demonstration]:
        """The k demonstrations closest to `intent`, closest first (ties: dataset order)."""
        if not self.demos:
            return []
        scores = self._vectors @ _normalized(self.embed([intent]))[0]
        order = sorted(range(len(self.demos)), key=lambda i: -float(scores[self._index[i]]))
        return [self.demos[i] for i in order[: self.k]]

    def __call__(self, intent: str, obs: Observation | None = None) -> list[tuple[str, str]]:
        """The (prompt, answer) pairs for a step toward `intent` (the page `obs` does not change the choice)."""
        if intent not in self._cache:
            self._cache[intent] = [(d.prompt, d.answer) for d in self.ranked(intent)]
        return list(self._cache[intent])


def _check_k(k: int) -> None:
    """At least one demonstration per step."""
    if k < 1:
        raise ConfigError(f"--shots {k}: retrieve at least one demonstration (0: zero-shot, no --dataset)")


def _normalized(rows: np.ndarray) -> np.ndarray:
    """Rows scaled to unit length (a zero row stays zero)."""
    rows = np.asarray(rows, dtype=np.float32)
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return rows / np.where(norms == 0, 1.0, norms)

"""Few-shot demonstrations from a dataset folder (`evals.shots`): retrieval order, the Actor's answer grammar,
the prompt, and the errors.

The dataset is a tiny one written here with `datasets.Dataset.from_list(...).save_to_disk`, with the columns of
`datasets/schemas/*.json` that the retriever reads. The embedding is a deterministic fake passed in (word counts
over a small vocabulary) on purpose: it makes the retrieval order computable by hand and keeps this tier free of
model weights; the real MiniLM `Embedder().embed` is the default `scalehop eval --shots` uses. (The prompts'
element lines are ordered by the Actor's shortlist, ranked here by conftest's word counts.)
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest

from datasets import Dataset, DatasetDict
from evals.shots import ShotRetriever, action_answer, load_demonstrations
from explorer.errors import ConfigError
from explorer.records import Action, Element
from explorer.roles.actor import actor_messages, parse_action

VOCAB = ("jacket", "cart", "boot", "search", "price", "sort")
HOME = "\n".join(
    [
        "Page: Home · Tiny Shop | http://shop.test/",
        "Headings: Tiny Shop / Jackets / Boots",
        '[1] link "Jackets" -> /c/jackets',
        '[2] link "Boots" -> /c/boots',
        '[4] searchbox "Search"',
        '[5] combobox "Sort by" = "Name" options: Name | Price',
    ]
)
JACKETS = "\n".join(
    [
        "Page: Jackets · Tiny Shop | http://shop.test/c/jackets",
        "Headings: Jackets",
        '[1] link "Home" -> /',
        '[2] link "Rain jacket" -> /p/1',
    ]
)
JACKET = 'Page: Rain jacket · Tiny Shop | http://shop.test/p/1\n[1] link "Home" -> /\n[2] button "Add to cart"'
BOOTS = 'Page: Boots · Tiny Shop | http://shop.test/c/boots\n[1] link "Trail boot" -> /p/2\nText: Trail boot $80'


def fake_embed(texts: Sequence[str]) -> np.ndarray:
    """Word counts over VOCAB (a stand-in for MiniLM: see the module doc)."""
    return np.array([[t.lower().count(w) for w in VOCAB] for t in texts], dtype=np.float32)


def action(kind: str, mark: int | None = None, label: str = "", **fields) -> dict:
    """A dataset action: every field of `explorer.records.Action`, as the export writes it."""
    return Action(kind=kind, mark=mark, label=label, **fields).model_dump()


def single(instruction: str, page: str, act: dict, reasoning: str) -> dict:
    """A single_step row (only the columns the retriever reads)."""
    text = Action(**act).describe()
    return {
        "instruction": instruction,
        "observation_text": page,
        "action": act,
        "action_text": text,
        "reasoning": reasoning,
    }


def step(page: str, act: dict, reasoning: str) -> dict:
    """One step of a multi_step row."""
    return {"observation_text": page, "action": act, "action_text": Action(**act).describe(), "reasoning": reasoning}


SINGLE = [
    single("Open the rain jacket page", JACKETS, action("click", 2, 'link "Rain jacket"'), "It links the jacket."),
    single("Search for boots", HOME, action("type", 4, 'searchbox "Search"', text="boots", press_enter=True), "Find."),
    single("Sort by price", HOME, action("select", 5, 'combobox "Sort by"', option="Price"), "Cheapest first."),
    single("Search for a quote", HOME, action("type", 4, 'searchbox "Search"', text='say "hi"'), "Unwritable."),
]
MULTI = [
    {
        "instruction": "Put a rain jacket in the cart",
        "steps": [
            step(HOME, action("click", 1, 'link "Jackets"'), "Jackets are listed there."),
            step(JACKETS, action("click", 2, 'link "Rain jacket"'), "That is the jacket."),
            step(JACKET, action("click", 2, 'button "Add to cart"'), "It adds the jacket to the cart."),
        ],
    }
]
QA = [{"question": "What does the trail boot cost?", "answer": "$80", "observation_text": BOOTS}]


def write_dataset(folder: Path, single_rows=SINGLE, multi_rows=MULTI, qa_rows=QA) -> Path:
    """A dataset folder as `scalehop dataset build` leaves it (hf/ only); an empty list writes an empty split."""
    empty = {"single_step": ["instruction"], "multi_step": ["instruction"], "page_qa": ["question"]}
    rows = {"single_step": single_rows, "multi_step": multi_rows, "page_qa": qa_rows}
    splits = {
        name: Dataset.from_list(r) if r else Dataset.from_dict({c: [] for c in empty[name]}) for name, r in rows.items()
    }
    DatasetDict(splits).save_to_disk(str(folder / "hf"))
    return folder


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """The tiny dataset folder."""
    return write_dataset(tmp_path_factory.mktemp("dataset"))


def shown_elements(prompt: str) -> list[Element]:
    """The elements a demonstration's prompt lists, as the Actor would be shown them."""
    out = []
    for m in re.finditer(r'^\[(\d+)\] (\w+)(?: "([^"]*)")?(?: = "[^"]*" options: (.*))?', prompt, re.MULTILINE):
        options = tuple(o.strip() for o in m.group(4).split("|")) if m.group(4) else ()
        mark, role, name = int(m.group(1)), m.group(2), m.group(3) or ""
        out.append(elem(mark, role, name, options))
    return out


def test_retrieval_order_closest_first_with_multi_step_history(dataset):
    retriever = ShotRetriever.from_dataset(dataset, k=4, embed=fake_embed)
    shots = retriever("Add a rain jacket to the cart", None)
    # cosine: the multi-step instruction (jacket + cart) 1.0, "Open the rain jacket page" 0.71, the rest 0
    assert len(shots) == 4
    assert [p.splitlines()[0] for p, _ in shots] == ["Task: Put a rain jacket in the cart"] * 3 + [
        "Task: Open the rain jacket page"
    ]
    histories = [re.search(r"^Earlier steps: (.*)$", p, re.MULTILINE).group(1) for p, _ in shots]
    assert histories == ["none", 'click link "Jackets"', 'click link "Jackets"; click link "Rain jacket"', "none"]
    assert [a.splitlines()[0] for _, a in shots] == ["ACTION: click [1]"] + ["ACTION: click [2]"] * 3
    assert retriever("Search the shop for boots", None)[0][1].startswith('ACTION: type [4] "boots" enter')
    assert retriever("What does the boot cost?", None)[0][1].startswith('ACTION: stop "$80"')
    assert retriever("price sort", None)[0][1].startswith('ACTION: select [5] "Price"')
    assert len(ShotRetriever.from_dataset(dataset, k=50, embed=fake_embed)("anything", None)) == 7  # all kept rows


def test_answers_parse_back_to_the_dataset_action(dataset):
    demos = load_demonstrations(dataset)
    assert len(demos) == 7  # 3 single-step (one unwritable: a quote in the typed text), 3 steps, 1 page QA
    wanted = [(r["action"], r["reasoning"]) for r in SINGLE[:3]] + [
        (s["action"], s["reasoning"]) for s in MULTI[0]["steps"]
    ]
    wanted.append((action("stop", answer="$80"), "The page shows the answer."))
    for demo, (act, reasoning) in zip(demos, wanted, strict=True):
        parsed = parse_action(demo.answer, shown_elements(demo.prompt))
        assert parsed is not None, demo
        got, reason = parsed
        for field in ("kind", "mark", "text", "press_enter", "option", "answer"):
            assert getattr(got, field) == act[field], (field, demo.answer)
        assert reason == reasoning


def test_a_task_that_kept_its_goal_page_ends_with_stop_there(tmp_path):
    """Reverse construction keeps the page a task's actions reach; the Actor's demonstrations then end each task
    with `ACTION: stop` on that page, after all of its actions, so a trained Actor learns when it is done."""
    jackets = single("Open the Jackets page", HOME, action("click", 1, 'link "Jackets"'), "Jackets are there.")
    jackets |= {"goal_observation_text": JACKETS, "goal_page_texts": ["Rain jacket $120"]}
    path = {**MULTI[0], "goal_observation_text": JACKET + "\nText: In your cart: 1", "goal_page_texts": []}
    demos = load_demonstrations(write_dataset(tmp_path, [jackets], [path], []))
    answers = [d.answer.splitlines()[0] for d in demos]
    assert answers == ["ACTION: click [1]", "ACTION: stop"] + ["ACTION: click [1]"] + ["ACTION: click [2]"] * 2 + [
        "ACTION: stop"
    ]
    stop, last = demos[1].prompt, demos[-1].prompt
    assert 'Page: "Jackets · Tiny Shop" (/c/jackets)' in stop and "Rain jacket $120" in stop
    assert re.search(r"^Earlier steps: click link \"Jackets\"$", stop, re.MULTILINE)
    history = 'click link "Jackets"; click link "Rain jacket"; click button "Add to cart"'
    assert f"Earlier steps: {history}" in last and 'Page: "Rain jacket · Tiny Shop" (/p/1)' in last
    assert parse_action(demos[-1].answer, shown_elements(last))[0].kind == "stop"


def test_prompt_is_the_actors_question(dataset):
    demo = load_demonstrations(dataset)[0]
    assert demo.prompt.splitlines() == [
        "Task: Open the rain jacket page",
        'Page: "Jackets · Tiny Shop" (/c/jackets)',
        "Headings: Jackets",
        "Earlier steps: none",
        "Elements:",
        '[2] link "Rain jacket" -> /p/1',  # the shortlist: closest to the task first
        '[1] link "Home" -> /',
    ]
    # the Actor places the shots as earlier turns, between its system text and its question
    turns = actor_messages("Buy boots", _page_obs(), [], shots=[(demo.prompt, demo.answer)])
    assert [m["role"] for m in turns] == ["system", "user", "assistant", "user"]
    assert turns[2]["content"] == demo.answer


def _page_obs():
    from explorer.records import Observation

    return Observation(
        url="http://shop.test/",
        title="Tiny Shop",
        elements=[],
        screenshot=b"",
        som_screenshot=b"",
        text="",
        viewport=(1, 1),
    )


def test_action_answer_covers_the_grammar():
    cases = {
        "hover": (action("hover", 3), "ACTION: hover [3]"),
        "scroll": (action("scroll", direction="up"), "ACTION: scroll up"),
        "scroll in": (action("scroll", 4, direction="down"), "ACTION: scroll [4] down"),
        "back": (action("back"), "ACTION: back"),
        "goto": (action("goto", url="http://shop.test/cart"), "ACTION: goto http://shop.test/cart"),
        "stop": (action("stop"), "ACTION: stop"),
    }
    for name, (act, line) in cases.items():
        assert action_answer(act, "why").splitlines() == [line, "REASON: why"], name
        assert parse_action(action_answer(act, "why"), [elem(3), elem(4)]) is not None, name
    assert action_answer(action("click", None)) is None  # a click needs its mark
    assert action_answer(action("select", 5, option=None)) is None
    assert action_answer(action("type", 4, text="a\nb")).startswith('ACTION: type [4] "a b"')


def elem(mark: int, role: str = "link", name: str = "", options: tuple[str, ...] = ()) -> Element:
    """An element of a fake page (geometry does not matter here)."""
    return Element(
        mark=mark, tag=role, role=role, name=name, options=options, bbox=(0, 0, 1, 1), point=(0, 0), key=f"k{mark}"
    )


def test_missing_or_empty_dataset_is_one_line_naming_folder_and_command(tmp_path):
    for folder in (tmp_path / "nope", write_dataset(tmp_path / "empty", [], [], [])):
        with pytest.raises(ConfigError) as err:
            ShotRetriever.from_dataset(folder, k=2, embed=fake_embed)
        message = str(err.value)
        assert "\n" not in message and str(folder) in message and "scalehop dataset build" in message
    with pytest.raises(ConfigError, match="--shots 0"):
        ShotRetriever.from_dataset(tmp_path / "nope", k=0, embed=fake_embed)


def test_an_information_seeking_task_ends_with_its_answer(tmp_path):
    """A row with an `answer` (synthesis.answers) ends on its goal page with `stop "answer"`, which the Actor's
    parser reads back as a stop carrying that answer."""
    path = {**MULTI[0], "instruction": "What is the price of the rain jacket?", "answer": "$120"}
    path |= {"goal_observation_text": JACKET, "goal_page_texts": ["Rain jacket", "$120"]}
    demos = load_demonstrations(write_dataset(tmp_path, [], [path], []))
    last = demos[-1]
    assert last.answer.splitlines()[0] == 'ACTION: stop "$120"' and "Text: $120" in last.prompt
    action, _ = parse_action(last.answer, shown_elements(last.prompt))
    assert action.kind == "stop" and action.answer == "$120"

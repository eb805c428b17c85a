"""Judge an agent's episode against a task's WebArena checks: string_match, url_match and program_html.

The semantics are those of WebArena's `evaluation_harness/evaluators.py` (web-arena-x/webarena: `StringEvaluator`,
`URLEvaluator`, `HTMLContentEvaluator`, `EvaluatorComb`): answers are cleaned (stripped, one pair of surrounding
quotes dropped, lower-cased); `exact_match` compares cleaned strings; `must_include` is containment of each cleaned
phrase (a lone one-character phrase must be a whole token, so "0" is not found in "10"); URLs match "GOLD in PRED";
every listed eval type must pass (the scores multiply). Where this module departs from WebArena it says so:

- `fuzzy_match` is judged locally, by sentence-embedding similarity at least `FUZZY_THRESHOLD` (0.75, the cosine
  of all-MiniLM-L6-v2, `explorer.models.Embedder().similarity`), where WebArena asks GPT-4. Embeddings barely tell
  16 from 30, so every number the reference states must also appear in the answer. They are a weaker judge than
  an LLM: a bare "Ridgeline" scores about 0.5 against "Ridgeline makes the vest", and "Yes" about 0.7 against "No".
- `program_html` opens a URL target in a new page of the agent's own browser context (its cookies, its cart) and
  closes it after, where WebArena navigates the agent's page; `last` reads the agent's page itself when the
  context still shows the final URL. An empty locator reads the page's text (`document.body.innerText`), where
  WebArena reads its HTML. WebArena's `func:` helpers are refused when tasks load (`evals.tasks`).
"""

from __future__ import annotations

import contextlib
import html
import math
import re
from collections import defaultdict
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import parse_qs, urlparse

from playwright.async_api import Error as PlaywrightError
from pydantic import BaseModel

from evals.tasks import HtmlCheck, RequiredContents, Task

if TYPE_CHECKING:
    from playwright.async_api import BrowserContext

Similarity = Callable[[str, str], float]
FUZZY_THRESHOLD = 0.75
PAGE_TEXT = "document.body.innerText"
_OR = re.compile(r"\s*\|OR\|\s*")
_TOKEN = re.compile(r"\w+(?:[.,]\w+)*|[^\w\s]")
_NUMBER = re.compile(r"\d+(?:,\d{3})*(?:\.\d+)?")


class CheckResult(BaseModel):
    """One eval type's outcome: score 1.0 (passed) or 0.0, and why, in one line."""

    eval_type: str
    score: float
    reason: str

    @property
    def passed(self) -> bool:
        """Whether the check passed (score 1)."""
        return self.score >= 1.0


class EvalVerdict(BaseModel):
    """A task's verdict: success only if every listed eval type passed; `reason` names the first that failed."""

    task_id: int | str
    success: bool
    score: float
    reason: str
    checks: list[CheckResult]


async def evaluate_task(
    task: Task,
    answer: str | None,
    last_url: str | None,
    context: BrowserContext | None = None,
    similarity: Similarity | None = None,
    fuzzy_threshold: float = FUZZY_THRESHOLD,
) -> EvalVerdict:
    """Run every eval type of `task` on the episode's end and combine them as WebArena does (a product).

    `answer` is the agent's `stop` answer (None: it gave none), `last_url` its page's URL at the end, `context` its
    Playwright BrowserContext (needed only for program_html; `BrowserSession.context`), `similarity` the embedder
    for fuzzy_match (default: `explorer.models.Embedder().similarity`, loaded only when a task needs it).
    """
    checks = []
    for eval_type in task.eval.eval_types:
        if eval_type == "string_match":
            checks.append(string_match(task, answer, similarity, fuzzy_threshold))
        elif eval_type == "url_match":
            checks.append(url_match(task.eval.reference_url or "", last_url))
        else:
            checks.append(await program_html(task.eval.program_html, last_url, context))
    score = math.prod(c.score for c in checks)
    failed = next((c for c in checks if not c.passed), None)
    reason = f"{failed.eval_type}: {failed.reason}" if failed else "passed: " + "; ".join(c.reason for c in checks)
    return EvalVerdict(task_id=task.task_id, success=score >= 1.0, score=score, reason=reason, checks=checks)


# ---- string_match --------------------------------------------------------------------------------------------------
def clean_answer(text: str) -> str:
    """WebArena's clean_answer: strip, drop one pair of surrounding quotes, lower-case."""
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "'\"":
        text = text[1:-1]
    return text.lower()


def exact_match(ref: str, pred: str) -> bool:
    """The cleaned strings are equal."""
    return clean_answer(pred) == clean_answer(ref)


def must_include(ref: str, pred: str, tokenize: bool = False) -> bool:
    """The cleaned `ref` is in the cleaned `pred`; with `tokenize`, a one-character ref must be a whole token."""
    ref, pred = clean_answer(ref), clean_answer(pred)
    if tokenize and len(ref) == 1:
        return ref in _TOKEN.findall(pred)
    return ref in pred


def fuzzy_match(ref: str, pred: str, similarity: Similarity, threshold: float = FUZZY_THRESHOLD) -> str | None:
    """None if `pred` means `ref` (its numbers all present, similarity >= threshold), else why not."""
    if not pred.strip():
        return None if not ref.strip() else "empty answer"
    missing = _numbers(ref) - _numbers(pred)
    if missing:
        return f"answer {_cut(pred)} lacks {', '.join(sorted(missing))} of {_cut(ref)}"
    score = similarity(pred, ref)
    if score < threshold:
        return f"answer {_cut(pred)} is not close to {_cut(ref)} (similarity {score:.2f} < {threshold})"
    return None


def string_match(
    task: Task, answer: str | None, similarity: Similarity | None = None, threshold: float = FUZZY_THRESHOLD
) -> CheckResult:
    """WebArena's StringEvaluator on the agent's answer: every reference approach given must hold."""
    if answer is None:
        return CheckResult(eval_type="string_match", score=0.0, reason="no answer")
    refs = task.eval.reference_answers
    pred = clean_answer(answer)
    problems: list[str | None] = []
    if refs.exact_match is not None and not exact_match(refs.exact_match, pred):
        problems.append(f"answer {_cut(pred)} is not {_cut(clean_answer(refs.exact_match))}")
    for phrase in refs.must_include or []:
        if not must_include(phrase, pred, tokenize=len(refs.must_include) == 1):
            problems.append(f"answer {_cut(pred)} does not include {_cut(clean_answer(phrase))}")
    if refs.fuzzy_match == "N/A":
        problems.append(_not_achievable(pred, task.eval.string_note, similarity, threshold))
    elif refs.fuzzy_match:
        sim = similarity or _default_similarity()
        problems += [fuzzy_match(ref, pred, sim, threshold) for ref in refs.fuzzy_match]
    problem = next((p for p in problems if p), None)
    if problem:
        return CheckResult(eval_type="string_match", score=0.0, reason=problem)
    return CheckResult(eval_type="string_match", score=1.0, reason=f"answer {_cut(pred)} matches")


def _not_achievable(pred: str, note: str | None, similarity: Similarity | None, threshold: float) -> str | None:
    """WebArena's "N/A" reference: the answer is N/A, or (its ua_match) gives the reason the task's string_note does."""
    if exact_match("N/A", pred):
        return None
    if note and (similarity or _default_similarity())(pred, note) >= threshold:
        return None
    return f"answer {_cut(pred)} is not N/A (the task cannot be done)"


def _default_similarity() -> Similarity:
    from explorer.models import Embedder

    return Embedder().similarity


def _numbers(text: str) -> set[str]:
    """The numbers in `text`, normalized: "$1,234.50" -> "1234.5", "007" -> "7"."""
    found = set()
    for number in _NUMBER.findall(text):
        whole, _, fraction = number.replace(",", "").partition(".")
        fraction = fraction.rstrip("0")
        found.add((whole.lstrip("0") or "0") + ("." + fraction if fraction else ""))
    return found


# ---- url_match -----------------------------------------------------------------------------------------------------
def url_match(reference_url: str, url: str | None) -> CheckResult:
    """WebArena's URLEvaluator ("GOLD in PRED"): a reference's host+path lies within the final URL's, and every query
    parameter the references name carries one of their values (WebArena pools these over the `|OR|` alternatives)."""
    if not url:
        return CheckResult(eval_type="url_match", score=0.0, reason="no final URL")
    bases, wanted = [], defaultdict(set)
    for ref in _OR.split(reference_url.strip()):
        base, query = _parse_url(ref)
        bases.append(base)
        for key, values in query.items():
            wanted[key].update(values)
    pred_base, pred_query = _parse_url(url)
    problems = [] if any(base in pred_base for base in bases) else [f"{url} is not under {' or '.join(bases)}"]
    for key, values in sorted(wanted.items()):
        got = pred_query.get(key, [])
        if not values.intersection(got):
            problems.append(f"{url} has {key}={'|'.join(got) or '(none)'}, not {key}={'|'.join(sorted(values))}")
    if problems:
        return CheckResult(eval_type="url_match", score=0.0, reason=problems[0])
    return CheckResult(eval_type="url_match", score=1.0, reason=f"{url} matches {reference_url}")


def _parse_url(url: str) -> tuple[str, dict[str, list[str]]]:
    parsed = urlparse(url.strip().rstrip("/"))
    return (parsed.netloc + parsed.path).rstrip("/"), parse_qs(parsed.query)


# ---- program_html --------------------------------------------------------------------------------------------------
async def program_html(targets: list[HtmlCheck], last_url: str | None, context: BrowserContext | None) -> CheckResult:
    """WebArena's HTMLContentEvaluator: each target's page, read by its locator, holds its required contents."""
    if context is None:
        raise ValueError("program_html reads pages in the agent's browser context: pass its BrowserContext")
    for number, target in enumerate(targets, 1):
        text, problem = await read_target(target, last_url, context)
        problem = problem or contents_problem(target.required_contents, text)
        if problem:
            where = f"target {number} ({target.url}{', ' + _cut(target.locator) if target.locator.strip() else ''})"
            return CheckResult(eval_type="program_html", score=0.0, reason=f"{where}: {problem}")
    return CheckResult(eval_type="program_html", score=1.0, reason=f"{len(targets)} page check(s) hold")


async def read_target(target: HtmlCheck, last_url: str | None, context: BrowserContext) -> tuple[str, str | None]:
    """(what the target's locator selects, None) or ("", why its page could not be read); HTML entities unescaped.

    `last` is the agent's final page: its live page in `context` if one still shows `last_url`, else that URL
    opened anew. A URL target opens in a new page of `context`, closed after. A locator that throws selects "".
    """
    url = last_url if target.url == "last" else target.url
    if not url:
        return "", "no final URL"
    live = [p for p in context.pages if target.url == "last" and p.url == url]
    page = live[-1] if live else await context.new_page()
    try:
        if not live:
            try:
                await page.goto(url, wait_until="load")
            except PlaywrightError as exc:
                return "", f"{url} did not open ({str(exc).strip().splitlines()[0]})"
        for action in target.prep_actions:
            with contextlib.suppress(PlaywrightError):
                await page.evaluate(f"() => {action}")
        try:
            value = await page.evaluate(f"() => {target.locator.strip() or PAGE_TEXT}")
        except PlaywrightError:
            value = None
    finally:
        if not live:
            with contextlib.suppress(PlaywrightError):
                await page.close()
    return html.unescape("" if value is None else str(value)), None


def contents_problem(contents: RequiredContents, text: str) -> str | None:
    """None if `text` holds `contents` (exact_match, else every must_include item, each may list ` |OR| ` options)."""
    if contents.exact_match is not None:
        if exact_match(contents.exact_match, text):
            return None
        return f"found {_cut(clean_answer(text))}, not {_cut(clean_answer(contents.exact_match))}"
    for item in contents.must_include or []:
        if not any(must_include(option, text) for option in _OR.split(item)):
            return f"{_cut(clean_answer(item))} not in {_cut(clean_answer(text))}"
    return None


def _cut(text: str, limit: int = 70) -> str:
    """`text` on one line, quoted, shortened to `limit` characters."""
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")

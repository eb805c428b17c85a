"""Benchmark tasks in WebArena's config format: the typed `Task`, loading with site placeholders, `--site` args.

A task file is a JSON list of WebArena task objects (or one object). The documented subset is typed; every other
field (`storage_state`, `intent_template`, `instantiation_dict`, ...) is kept as an extra. URLs may name sites by
placeholder, `__SHOP__` or `__SHOPPING_ADMIN__`: `load_tasks` fills them from a `name -> base URL` mapping, the
one `parse_site_args` builds from `--site shop=http://127.0.0.1:8700` arguments.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, field_validator, model_validator

from explorer.config import validated
from explorer.errors import ConfigError

EVAL_TYPES = ("url_match", "string_match", "program_html")
URL_NOTE = "GOLD in PRED"  # the only url_note WebArena's URL evaluator knows
PLACEHOLDER = re.compile(r"__([A-Z][A-Z0-9_]*?)__")
HTTP_URL = re.compile(r"^https?://")  # what a site URL or a program_html target must start with


class _Open(BaseModel):
    """A part of WebArena's format: unknown fields are kept, not refused."""

    model_config = ConfigDict(extra="allow")


class ReferenceAnswers(_Open):
    """What the agent's final answer is compared with (`string_match`)."""

    exact_match: str | None = None
    must_include: list[str] | None = None
    fuzzy_match: list[str] | Literal["N/A"] | None = None


class RequiredContents(_Open):
    """What a `program_html` target must show: `exact_match` (a string) or `must_include` (a list)."""

    exact_match: str | None = None
    must_include: list[str] | None = None

    @model_validator(mode="after")
    def _one_given(self) -> RequiredContents:
        if self.exact_match is None and self.must_include is None:
            raise ValueError("give exact_match (a string) or must_include (a list of strings)")
        return self


class HtmlCheck(_Open):
    """One `program_html` target: a page (`last` or a URL), a JS expression to read in it, what it must contain."""

    url: str
    locator: str = ""
    required_contents: RequiredContents
    prep_actions: list[str] = []

    @field_validator("url", "locator")
    @classmethod
    def _no_helper_calls(cls, value: str) -> str:
        if value.startswith("func:"):
            raise ValueError("'func:' calls WebArena's Python helpers, not supported: give 'last', a URL, or JS")
        return value


class TaskEval(_Open):
    """The task's `eval` block; each listed eval type must pass (WebArena multiplies their scores)."""

    eval_types: list[str]
    reference_answers: ReferenceAnswers | None = None
    reference_url: str | None = None
    url_note: str | None = URL_NOTE
    program_html: list[HtmlCheck] = []
    string_note: str | None = None

    @field_validator("eval_types")
    @classmethod
    def _supported(cls, types: list[str]) -> list[str]:
        if not types:
            raise ValueError(f"list at least one eval type: {', '.join(EVAL_TYPES)}")
        for t in types:
            if t not in EVAL_TYPES:
                raise ValueError(f"eval type {t!r} is not supported: use {', '.join(EVAL_TYPES)}")
        return types

    @field_validator("url_note")
    @classmethod
    def _gold_in_pred(cls, note: str | None) -> str:
        if note not in (None, "", URL_NOTE):
            raise ValueError(f"url_note {note!r} is not supported: use {URL_NOTE!r} (or leave it out)")
        return URL_NOTE

    @model_validator(mode="after")
    def _has_references(self) -> TaskEval:
        answers = self.reference_answers
        if "string_match" in self.eval_types and not (
            answers and (answers.exact_match is not None or answers.must_include is not None or answers.fuzzy_match)
        ):
            raise ValueError("string_match needs reference_answers: exact_match, must_include or fuzzy_match")
        if "url_match" in self.eval_types and not (self.reference_url or "").strip():
            raise ValueError("url_match needs a reference_url")
        if "program_html" in self.eval_types and not self.program_html:
            raise ValueError("program_html needs at least one {url, locator, required_contents} target")
        return self


class Task(_Open):
    """One benchmark task in WebArena's config format (`split`: which part of a bundled suite it belongs to)."""

    task_id: int | str
    sites: list[str] = []
    start_url: str
    intent: str
    require_login: bool = False
    require_reset: bool = False
    eval: TaskEval
    split: Literal["dev", "test"] | None = None

    def with_sites(self, sites: Mapping[str, str], where: str = "task") -> Task:
        """A copy with every `__NAME__` in its URLs replaced by `sites[name]`; checks the URLs it ends with."""

        def fill(text: str) -> str:
            return fill_placeholders(text, sites, where)

        checks = [c.model_copy(update={"url": fill(c.url)}) for c in self.eval.program_html]
        for check in checks:
            if check.url != "last" and not HTTP_URL.match(check.url):
                raise ConfigError(f"{where}: program_html url {check.url!r}: use 'last' or an http(s) URL")
        reference = fill(self.eval.reference_url) if self.eval.reference_url else self.eval.reference_url
        evaluation = self.eval.model_copy(update={"reference_url": reference, "program_html": checks})
        return self.model_copy(update={"start_url": fill(self.start_url), "eval": evaluation})


def fill_placeholders(text: str, sites: Mapping[str, str], where: str = "task") -> str:
    """`text` with `__NAME__` replaced by `sites[name.lower()]` (no trailing slash); a missing one is a ConfigError."""

    def base(match: re.Match[str]) -> str:
        name = match.group(1).lower()
        if name not in sites:
            raise ConfigError(f"{where}: no URL for {match.group(0)}: pass --site {name}=URL")
        return sites[name].rstrip("/")

    return PLACEHOLDER.sub(base, text)


def parse_site_args(args: Sequence[str]) -> dict[str, str]:
    """`["shop=http://127.0.0.1:8700", ...]` -> `{"shop": "http://127.0.0.1:8700"}` (names lower-cased)."""
    sites: dict[str, str] = {}
    for arg in args:
        name, sep, url = arg.partition("=")
        name, url = name.strip().lower(), url.strip()
        if not sep or not name or not HTTP_URL.match(url):
            raise ConfigError(f"--site {arg!r}: use NAME=URL, e.g. --site shop=http://127.0.0.1:8700")
        if sites.get(name, url) != url:
            raise ConfigError(f"--site {name} is given twice ({sites[name]} and {url}): give each site once")
        sites[name] = url
    return sites


def load_tasks(source: str | Path | Sequence[Mapping] | Mapping, sites: Mapping[str, str] | None = None) -> list[Task]:
    """Tasks from a JSON file (a list, or one object) or from parsed objects, with URL placeholders filled.

    Errors are one-line ConfigErrors naming the file, the task id and the fix: an unmapped placeholder, an
    unsupported eval type, a check without its references, a task id used twice.
    """
    name, data = _read(source)
    items = [data] if isinstance(data, Mapping) else data
    if not isinstance(items, list) or not all(isinstance(item, Mapping) for item in items):
        raise ConfigError(f"{name}: expected a JSON list of task objects (or one task object)")
    mapping = {key.lower(): url for key, url in (sites or {}).items()}
    tasks: list[Task] = []
    seen: set[int | str] = set()
    for index, raw in enumerate(items):
        where = f"{name}: task {raw.get('task_id', f'#{index + 1}')}"
        task = validated(lambda raw=raw: Task.model_validate(raw), where)
        if task.task_id in seen:
            raise ConfigError(f"{name}: task id {task.task_id!r} appears twice: task ids must be unique in a file")
        seen.add(task.task_id)
        tasks.append(task.with_sites(mapping, where))
    return tasks


def _read(source: str | Path | Sequence[Mapping] | Mapping) -> tuple[str, object]:
    if not isinstance(source, str | Path):
        return "tasks", list(source) if not isinstance(source, Mapping) else source
    path = Path(source)
    if not path.is_file():
        raise ConfigError(f"{path}: no such task file (give a JSON file of WebArena-format tasks)")
    try:
        return str(path), json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{path}: cannot parse JSON: {exc}") from None

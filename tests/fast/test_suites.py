"""The bundled task suites (evals/suites/*.json) without a browser: every file loads, each site has at least 40 tasks
with both splits in every category, ids are unique, placeholders are the site's own, a do-nothing agent's URL and
answer fail, what the checks name exists in the seeded content (each URL answers 200 and each answer stands on its
evidence page, both rendered in-process by the site classes), and regenerating writes identical files. The live
sites, an oracle and a do-nothing agent in real Chromium are in tests/test_suites.py."""

from __future__ import annotations

import html
import json
import re
from urllib.parse import parse_qs, urlsplit

import pytest

from evals.evaluators import url_match
from evals.suites import (
    CATEGORIES,
    FOLDER,
    SITE_NAMES,
    SPLITS,
    build_suite,
    load_suite,
    main,
    render_suite,
    suite_names,
)
from evals.tasks import PLACEHOLDER, Task
from explorer.errors import ConfigError
from sites.classifieds import ClassifiedsSite
from sites.forum import ForumSite
from sites.server import Request
from sites.shop import ShopSite

BASES = {"shop": "http://shop.test", "forum": "http://forum.test", "classifieds": "http://classifieds.test"}
SITES = {"shop": ShopSite, "forum": ForumSite, "classifieds": ClassifiedsSite}
# instantiation ids and the seeded name each must carry: key -> (name key, the name in the site's data)
NAMED = {
    "pid": ("product", lambda site, i: site.data.products[i].name),
    "tid": ("title", lambda site, i: site.data.threads[i].title),
    "lid": ("title", lambda site, i: site.seeded[i].title),
}
_TAG = re.compile(r"<script.*?</script>|<style.*?</style>|<[^>]+>", re.S)


@pytest.fixture(scope="module")
def suites() -> dict[str, list[Task]]:
    """Every site's whole suite, placeholders filled with made-up base URLs."""
    return {site: load_suite(f"bundled:{site}", BASES) for site in SITE_NAMES}


@pytest.fixture(scope="module")
def sites():
    """Each bundled site, seeded as `serve_sites` seeds it, to render pages in-process."""
    return {name: cls(seed=0) for name, cls in SITES.items()}


def get(site, url: str) -> tuple[int, str]:
    """GET `url` (its `__SITE__` placeholder in front) from `site` in-process: (status, HTML)."""
    parts = urlsplit(PLACEHOLDER.sub("", url))
    response = site.dispatch(Request("GET", parts.path or "/", parse_qs(parts.query, keep_blank_values=True)))
    return response.status, response.body.decode()


def text(page: str) -> str:
    """A page's text as the checks compare it: tags dropped, entities decoded, spaces collapsed, lower-cased."""
    return " ".join(html.unescape(_TAG.sub(" ", page)).split()).lower()


def raw_tasks(site: str) -> list[dict]:
    return json.loads((FOLDER / f"{site}.json").read_text(encoding="utf-8"))


def test_every_suite_loads_and_splits_partition_the_whole(suites):
    assert suite_names() == [f"bundled:{s}{p}" for s in SITE_NAMES for p in ("", ":dev", ":test")]
    for site, tasks in suites.items():
        assert len(tasks) >= 40, site
        dev, test = (load_suite(f"bundled:{site}:{split}", BASES) for split in SPLITS)
        assert {t.split for t in dev} == {"dev"} and {t.split for t in test} == {"test"}
        assert sorted(t.task_id for t in dev + test) == sorted(t.task_id for t in tasks)
        assert abs(len(dev) - len(test)) <= len(CATEGORIES)  # about half and half


def test_categories_splits_steps_and_resets(suites):
    for site, tasks in suites.items():
        for category in CATEGORIES:
            mine = [t for t in tasks if t.category == category]
            assert {t.split for t in mine} == set(SPLITS), (site, category)
        for t in tasks:
            assert t.category in CATEGORIES and t.sites == [site] and t.start_url == BASES[site]
            assert isinstance(t.steps_hint, int) and t.steps_hint >= 1, t.task_id
            assert t.category != "multi-step" or 2 <= t.steps_hint <= 6, t.task_id
            assert t.require_reset == ("program_html" in t.eval.eval_types), t.task_id
            assert t.intent == t.intent_template.format(**t.instantiation_dict)
            assert t.intent_template_id.startswith(f"{site}/")
        assert any(t.eval.reference_answers and t.eval.reference_answers.fuzzy_match for t in tasks), site


def test_task_ids_are_unique_across_the_suites(suites):
    ids = [t.task_id for tasks in suites.values() for t in tasks]
    assert len(ids) == len(set(ids))


def test_placeholders_are_the_sites_own():
    for site in SITE_NAMES:
        found = set(PLACEHOLDER.findall((FOLDER / f"{site}.json").read_text(encoding="utf-8")))
        assert found == {site.upper()}, site
        with pytest.raises(ConfigError, match=f"no URL for __{site.upper()}__"):
            load_suite(f"bundled:{site}", {})


@pytest.mark.parametrize("name", ["shop", "bundled", "bundled:shop:train", "bundled:mall", "webarena:shop"])
def test_an_unknown_suite_is_refused(name):
    with pytest.raises(ConfigError, match="unknown suite"):
        load_suite(name, BASES)


def test_a_do_nothing_agent_fails_url_and_answer_checks(suites):
    """The cheap half of tests/test_suites.py's trivial baseline: staying on the start URL and answering nothing."""
    for tasks in suites.values():
        for t in tasks:
            if t.eval.reference_url:
                assert not url_match(t.eval.reference_url, t.start_url).passed, t.task_id
            if t.eval.reference_answers:  # string_match fails on no answer; the oracle reads the evidence page
                assert t.evidence_url.startswith(BASES[t.sites[0]] + "/"), t.task_id


@pytest.mark.parametrize("site_name", SITE_NAMES)
def test_checks_name_what_the_seeded_sites_show(sites, site_name):
    site = sites[site_name]
    for raw in raw_tasks(site_name):
        ev, values, tid = raw["eval"], raw["instantiation_dict"], raw["task_id"]
        urls = [u for u in ev["reference_url"].split(" |OR| ") if u] + [h["url"] for h in ev["program_html"]]
        urls += [raw["evidence_url"]] if "evidence_url" in raw else []
        for url in [u for u in urls if u != "last"]:
            status, page = get(site, url)
            assert status == 200 and 'class="error"' not in page, (tid, url, status)
        refs = ev["reference_answers"]
        if refs:
            shown = text(get(site, raw["evidence_url"])[1])
            wanted = [refs.get("exact_match")] + (refs.get("must_include") or [])
            wanted += ev["reference_answer_raw_annotation"].split(", ")
            for phrase in filter(None, wanted):
                assert phrase.lower() in shown, (tid, phrase, raw["evidence_url"])
        for key, (name_key, name_of) in NAMED.items():
            if key in values:
                assert name_of(site, values[key]) == values[name_key], tid
                assert values[name_key] in raw["intent"] or f"{{{name_key}}}" not in raw["intent_template"], tid
        for pid, _ in values.get("cart", []):
            assert pid in site.data.products, tid


def test_regenerating_writes_identical_files(tmp_path):
    for site in SITE_NAMES:
        assert render_suite(build_suite(site)) == (FOLDER / f"{site}.json").read_text(encoding="utf-8"), site
    assert main(["--check"]) == 0
    assert main(["--check", "--out", str(tmp_path)]) == 1  # nothing there yet: stale
    assert main(["--out", str(tmp_path)]) == 0 and main(["--check", "--out", str(tmp_path)]) == 0

"""WebArena-format tasks and their evaluators' pure logic: loading, placeholders, errors, url_match, string_match.

No browser and no model: fuzzy_match runs on `overlap`, a tiny deterministic word-overlap similarity passed in the
way the harness passes the real embedder. The real MiniLM embedder, program_html in a real page and scripted agents
on the bundled shop are exercised in tests/test_evaluators.py.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from evals.evaluators import contents_problem, evaluate_task, must_include, url_match
from evals.tasks import RequiredContents, Task, load_tasks, parse_site_args
from explorer.errors import ConfigError

DATA = Path(__file__).resolve().parents[1] / "data" / "evals"
SITES = {"shopping_admin": "http://admin.test:7780/", "reddit": "http://forum.test:9999", "gitlab": "http://git.test"}
SHOP = "http://shop.test"


def overlap(a: str, b: str) -> float:
    """Jaccard overlap of the two texts' lower-cased words: 1.0 same words, 0.0 none shared."""
    wa, wb = set(a.lower().split()), set(b.lower().split())
    return len(wa & wb) / len(wa | wb) if wa | wb else 1.0


def task(**evaluation) -> Task:
    """One shop task whose `eval` block is `evaluation` (placeholders filled with SHOP)."""
    raw = {"task_id": 1, "start_url": "__SHOP__", "intent": "Who makes the Glacier Insulated Vest?", "eval": evaluation}
    return load_tasks([raw], {"shop": SHOP})[0]


def answers(**refs) -> Task:
    return task(eval_types=["string_match"], reference_answers=refs)


async def judge(t: Task, answer: str | None = None, url: str | None = None):
    return await evaluate_task(t, answer, url, context=None, similarity=overlap)


# ---- loading -------------------------------------------------------------------------------------------------------
def test_webarena_format_loads_with_placeholders_filled_and_extras_kept():
    tasks = load_tasks(DATA / "webarena_format.json", SITES)
    assert [t.task_id for t in tasks] == [101, 102, 103]
    admin, forum, git = tasks
    assert admin.start_url == "http://admin.test:7780"  # the base URL's trailing slash is dropped
    assert admin.require_login and not admin.require_reset and admin.split is None
    assert admin.eval.reference_answers.exact_match == "Trail Runner Sock"
    assert admin.storage_state == "./.auth/shopping_admin_state.json"  # unknown fields are kept
    assert admin.instantiation_dict == {"n": 1, "year": 2023}
    assert admin.eval.reference_answer_raw_annotation == "Trail Runner Sock"
    assert forum.eval.reference_url == "http://forum.test:9999/f/camping"
    assert forum.eval.url_note == "GOLD in PRED" and forum.eval.program_html[0].url == "last"
    assert git.start_url == "http://git.test/explore"
    assert git.eval.reference_url.count("http://git.test/a11yproject/-/issues") == 2  # both |OR| alternatives


def test_bundled_shop_tasks_load_with_splits():
    tasks = load_tasks(DATA / "shop_tasks.json", {"shop": "http://127.0.0.1:8700/"})
    assert {t.split for t in tasks} == {"dev", "test"}
    cart = [t for t in tasks if t.task_id == "shop-cart-vests"][0]
    assert [c.url for c in cart.eval.program_html] == ["http://127.0.0.1:8700/cart"] * 2 + ["last"]


def test_one_object_and_parsed_objects_load(tmp_path):
    raw = json.loads((DATA / "webarena_format.json").read_text())[0]
    path = tmp_path / "one.json"
    path.write_text(json.dumps(raw))
    assert [t.task_id for t in load_tasks(path, SITES)] == [101]
    assert load_tasks(raw, SITES)[0].intent == raw["intent"]
    assert load_tasks(str(path), {"SHOPPING_ADMIN": "http://x.test"})[0].start_url == "http://x.test"


def test_unmapped_placeholder_names_the_task_and_the_fix():
    with pytest.raises(
        ConfigError, match=r"webarena_format.json: task 102: no URL for __REDDIT__: pass --site reddit="
    ):
        load_tasks(DATA / "webarena_format.json", {"shopping_admin": "http://a.test", "gitlab": "http://g.test"})


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"eval_types": ["string_match", "page_image_query"]}, r"task 7: .*'page_image_query' is not supported: use"),
        ({"eval_types": []}, "task 7: .*at least one eval type"),
        ({"eval_types": ["string_match"], "reference_answers": None}, "task 7: .*string_match needs reference_answers"),
        ({"eval_types": ["url_match"], "reference_url": ""}, "task 7: .*url_match needs a reference_url"),
        ({"eval_types": ["program_html"], "program_html": []}, "task 7: .*program_html needs at least one"),
        ({"url_note": "EXACT"}, r"task 7: .*url_note 'EXACT' is not supported: use 'GOLD in PRED'"),
        (
            {
                "program_html": [
                    {"url": "func:reddit_get_post_url('__last_url__')", "locator": "", "required_contents": {}}
                ]
            },
            "task 7: .*'func:' calls WebArena's Python helpers",
        ),
        (
            {"program_html": [{"url": "last", "locator": "", "required_contents": {}}]},
            "task 7: .*give exact_match .* or must_include",
        ),
        (
            {"program_html": [{"url": "/cart", "locator": "", "required_contents": {"exact_match": "x"}}]},
            "task 7: program_html url '/cart': use 'last' or an http",
        ),
    ],
)
def test_bad_task_is_a_one_line_config_error(tmp_path, change, message):
    evaluation = {"eval_types": ["program_html"], "reference_answers": None, "reference_url": "", **change}
    evaluation.setdefault("program_html", [{"url": "last", "locator": "", "required_contents": {"must_include": []}}])
    path = tmp_path / "bad.json"
    path.write_text(json.dumps([{"task_id": 7, "start_url": "__SHOP__", "intent": "x", "eval": evaluation}]))
    with pytest.raises(ConfigError, match=message) as caught:
        load_tasks(path, {"shop": SHOP})
    assert "\n" not in str(caught.value) and str(caught.value).startswith(str(path))


def test_file_errors_and_duplicate_ids(tmp_path):
    with pytest.raises(ConfigError, match="no such task file"):
        load_tasks(tmp_path / "missing.json")
    broken = tmp_path / "broken.json"
    broken.write_text("[{")
    with pytest.raises(ConfigError, match="broken.json: cannot parse JSON"):
        load_tasks(broken)
    with pytest.raises(ConfigError, match="expected a JSON list of task objects"):
        load_tasks([1, 2])
    twice = json.loads((DATA / "webarena_format.json").read_text())[:1] * 2
    with pytest.raises(ConfigError, match="task id 101 appears twice: task ids must be unique"):
        load_tasks(twice, SITES)


def test_parse_site_args():
    assert parse_site_args(["Shop=http://127.0.0.1:8700", "forum = http://127.0.0.1:8701/"]) == {
        "shop": "http://127.0.0.1:8700",
        "forum": "http://127.0.0.1:8701/",
    }
    for bad in ["shop", "=http://a.test", "shop=127.0.0.1:8700"]:
        with pytest.raises(ConfigError, match="use NAME=URL"):
            parse_site_args([bad])
    with pytest.raises(ConfigError, match="given twice"):
        parse_site_args(["shop=http://a.test", "shop=http://b.test"])


# ---- string_match --------------------------------------------------------------------------------------------------
async def test_exact_match_compares_cleaned_answers():
    t = answers(exact_match="Alder & Pine")
    for good in ["Alder & Pine", "  'alder & pine' ", '"ALDER & PINE"']:
        assert (await judge(t, good)).success, good
    verdict = await judge(t, "Alder and Pine")
    assert (verdict.success, verdict.score) == (False, 0.0)
    assert verdict.reason == "string_match: answer 'alder and pine' is not 'alder & pine'"


async def test_must_include_needs_every_phrase_case_insensitively():
    t = answers(must_include=["Glacier Insulated Vest", "$104.00"])
    assert (await judge(t, "The GLACIER insulated vest costs $104.00.")).success
    verdict = await judge(t, "The Glacier Insulated Vest costs $140.00")
    assert not verdict.success and verdict.reason.endswith("does not include '$104.00'")


def test_a_lone_one_character_phrase_must_be_a_whole_token():
    assert must_include("0", "0 reviews mention it", tokenize=True)
    assert not must_include("0", "10 reviews mention it", tokenize=True)
    assert must_include("0", "10 reviews mention it", tokenize=False)  # several phrases: plain containment


async def test_single_character_reference_uses_tokens_but_two_do_not():
    assert not (await judge(answers(must_include=["6"]), "16 reviews")).success
    assert (await judge(answers(must_include=["6"]), "6 reviews")).success
    assert (await judge(answers(must_include=["6", "reviews"]), "16 reviews")).success


async def test_missing_answer_fails_with_no_answer_and_empty_answer_is_judged():
    verdict = await judge(answers(must_include=["Ridgeline"]), None)
    assert (verdict.success, verdict.reason) == (False, "string_match: no answer")
    assert verdict.checks[0].eval_type == "string_match" and not verdict.checks[0].passed
    assert not (await judge(answers(exact_match="Ridgeline"), "")).success
    assert (await judge(answers(exact_match=""), "")).success


async def test_fuzzy_match_uses_the_given_similarity_and_its_threshold():
    t = answers(fuzzy_match=["Ridgeline makes the Glacier Insulated Vest"])
    assert (await judge(t, "ridgeline makes the glacier insulated vest")).success  # overlap 1.0
    verdict = await judge(t, "Ridgeline makes it")  # overlap 2/7
    assert not verdict.success and "(similarity 0.29 < 0.75)" in verdict.reason
    assert (await evaluate_task(t, "Ridgeline makes it", None, similarity=overlap, fuzzy_threshold=0.25)).success


async def test_fuzzy_match_needs_the_references_numbers():
    t = answers(fuzzy_match=["walking takes 30 min and driving 5 min"])
    verdict = await judge(t, "walking takes 16 min and driving 5 min")  # overlap 6/8: above the threshold
    assert not verdict.success and "lacks 30 of" in verdict.reason
    assert (await judge(t, "walking takes 30.0 min and driving 5 min")).success


async def test_fuzzy_not_achievable_accepts_na_or_the_noted_reason():
    t = task(
        eval_types=["string_match"],
        reference_answers={"fuzzy_match": "N/A"},
        string_note="the shop does not sell tents",
    )
    assert (await judge(t, "N/A")).success
    assert (await judge(t, "The shop does not sell tents")).success  # like WebArena's ua_match, by similarity
    assert not (await judge(t, "The Glacier tent costs $300")).success


# ---- url_match -----------------------------------------------------------------------------------------------------
def test_url_match_gold_in_pred():
    ref = f"{SHOP}/c/jackets?sort=price_asc"
    assert url_match(ref, f"{SHOP}/c/jackets?brand=&max_price=&sort=price_asc").passed  # extra parameters are fine
    assert url_match(f"{SHOP}/c/jackets/", f"{SHOP}/c/jackets").passed  # trailing slashes do not count
    assert url_match(f"{SHOP}/c/jackets", "https://shop.test/c/jackets/page2").passed  # host+path containment
    other = url_match(ref, f"{SHOP}/c/footwear?sort=price_asc")
    assert not other.passed and other.reason == f"{SHOP}/c/footwear?sort=price_asc is not under shop.test/c/jackets"
    assert url_match(ref, None).reason == "no final URL"


def test_url_match_query_parameter_mismatch_fails():
    ref = f"{SHOP}/c/jackets?sort=price_asc"
    wrong = url_match(ref, f"{SHOP}/c/jackets?sort=rating")
    assert (wrong.score, wrong.reason) == (0.0, f"{SHOP}/c/jackets?sort=rating has sort=rating, not sort=price_asc")
    missing = url_match(ref, f"{SHOP}/c/jackets")
    assert not missing.passed and "has sort=(none)" in missing.reason


def test_url_match_or_alternatives():
    ref = f"{SHOP}/p/4 |OR| {SHOP}/search?q=vest"
    assert not url_match(ref, f"{SHOP}/p/4").passed  # WebArena pools the alternatives' query parameters
    assert url_match(ref, f"{SHOP}/search?q=vest").passed
    assert url_match(ref, f"{SHOP}/p/4?q=vest").passed
    plain = f"{SHOP}/p/4 |OR| {SHOP}/p/40"
    assert url_match(plain, f"{SHOP}/p/4").passed and url_match(plain, f"{SHOP}/p/40").passed
    assert not url_match(plain, f"{SHOP}/p/5").passed


def test_url_match_or_pools_query_values_like_webarena():
    git = load_tasks(DATA / "webarena_format.json", SITES)[2]
    ref = git.eval.reference_url
    issues = "http://git.test/a11yproject/-/issues"
    assert url_match(ref, f"{issues}?label_name%5B%5D=bug&state=opened").passed
    assert not url_match(ref, f"{issues}?label_name%5B%5D=bug").passed  # state=opened from the other alternative
    assert not url_match(ref, f"{issues}?label_name%5B%5D=feature&state=opened").passed


# ---- combining, and program_html's content rules -------------------------------------------------------------------
async def test_every_eval_type_must_pass_and_the_reason_names_the_failed_one():
    t = task(
        eval_types=["url_match", "string_match"],
        reference_url="__SHOP__/p/4",
        reference_answers={"must_include": ["$104.00"]},
    )
    good = await judge(t, "It costs $104.00", f"{SHOP}/p/4")
    assert (good.success, good.score, [c.passed for c in good.checks]) == (True, 1.0, [True, True])
    assert good.reason.startswith("passed: ") and good.task_id == 1
    wrong_page = await judge(t, "It costs $104.00", f"{SHOP}/p/3")
    assert (wrong_page.success, wrong_page.score) == (False, 0.0)
    assert wrong_page.reason == f"url_match: {SHOP}/p/3 is not under shop.test/p/4"
    no_answer = await judge(t, None, f"{SHOP}/p/4")
    assert no_answer.reason == "string_match: no answer" and [c.passed for c in no_answer.checks] == [True, False]


async def test_program_html_needs_a_browser_context():
    t = task(
        eval_types=["program_html"],
        program_html=[{"url": "last", "locator": "", "required_contents": {"must_include": ["Your cart"]}}],
    )
    with pytest.raises(ValueError, match="pass its BrowserContext"):
        await evaluate_task(t, None, f"{SHOP}/cart", context=None)


def test_required_contents_exact_and_must_include_with_or():
    assert contents_problem(RequiredContents(exact_match="2"), " 2 ") is None
    assert contents_problem(RequiredContents(exact_match="2"), "2 2") == "found '2 2', not '2'"
    either = RequiredContents(must_include=["Order summary |OR| Your cart is empty", "vest"])
    assert contents_problem(either, "YOUR CART IS EMPTY, no Vest") is None
    assert contents_problem(either, "Order Summary: boots") == "'vest' not in 'order summary: boots'"
    assert contents_problem(RequiredContents(must_include=["0"]), "10 items") is None  # no tokenizing for pages

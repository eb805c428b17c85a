"""Rule Judger v2 with the real MiniLM embedder: the cases only the embedding similarity decides, the audit and the
labelled set. The cases its rules decide (each way the v1 Judger was fooled, next to right predictions that must
still pass) run in the fast tier, tests/fast/test_rule_judger.py, on the helpers defined here."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.audit import audit, floor, load_runs
from explorer.labels import LabelledSet, score
from explorer.pages import SitePages
from explorer.records import ElementBrief, Transition
from explorer.roles import parse_prediction, rule_verdict
from explorer.roles.judger import RULE_JUDGE
from explorer.transition import describe

SHOP = "Oscar - Sandbox"
SHOP_PAGES = [
    (f"All products | {SHOP}", "All products"),
    (f"Your basket | {SHOP}", "Basket"),
    (f"Books | {SHOP}", "Books"),
    (f"Clothing | {SHOP}", "Clothing"),
    (f"The shellcoder's handbook | Books | {SHOP}", "The shellcoder's handbook"),
    (f"Write a review | The shellcoder's handbook | {SHOP}", "Leave a product review"),
    (f"Hacking Exposed | Books | {SHOP}", "Hacking Exposed"),
    (f"Login or register | {SHOP}", "Log In"),
    (SHOP, "Welcome!"),
]


def nav(path: str, title: str, heading: str = "", before: str = "/") -> Transition:
    """A navigation transition, described as the engine describes it."""
    t = Transition(
        url_before=f"http://shop.test{before}",
        url_after=f"http://shop.test{path}",
        url_changed=True,
        title_before="x",
        title_after=title,
        headings_after=[heading] if heading else [],
        ssim=0.5,
        description="",
    )
    return t.model_copy(update={"description": describe(t)})


def in_page(**changes) -> Transition:
    """An in-page transition, described as the engine describes it."""
    t = Transition(
        url_before="http://shop.test/",
        url_after="http://shop.test/",
        url_changed=False,
        title_before="Home",
        title_after="Home",
        ssim=changes.pop("ssim", 0.9),
        description="",
        **changes,
    )
    return t.model_copy(update={"description": describe(t)})


def el(name: str, role: str = "button") -> ElementBrief:
    """An element as a transition mentions it (its name doubles as its key)."""
    return ElementBrief(key=name, role=role, name=name)


def judge_with(similarity):
    """The rule Judger as these cases call it: a prediction's text against a transition, with the name acted on and
    the pages the run has seen (by default the shop's); True when it is judged right."""
    shop = SitePages.of(SHOP_PAGES, "oscar")

    def run(text: str, t: Transition, acted: str = "", known: SitePages | None = shop) -> bool:
        prediction = parse_prediction(f"OUTCOME: {text}")
        verdict = rule_verdict(prediction, t, similarity, acted, pages=known)
        assert verdict.judge == RULE_JUDGE == "rule-v2"
        return verdict.correct

    return run


@pytest.fixture(scope="module")
def judge(similarity):
    """The rule Judger with the real MiniLM similarity."""
    return judge_with(similarity)


BASKET = nav("/basket/", f"Your basket | {SHOP}", "Basket")
PRODUCT = nav(
    "/catalogue/the-shellcoders-handbook_209/",
    f"The shellcoder's handbook | Books | {SHOP}",
    "The shellcoder's handbook",
)
REVIEW = nav(
    "/catalogue/the-shellcoders-handbook_209/reviews/add/",
    f"Write a review | The shellcoder's handbook | {SHOP}",
    "Leave a product review",
)
ALL = nav("/catalogue/", f"All products | {SHOP}", "All products")


MENU = in_page(added=[el("Profile", "link"), el("Settings", "link"), el("Log out", "link")])
REPORT_MENU = in_page(added=[el("Report"), el("Spam", "menuitem")])


@pytest.mark.parametrize(
    "text,t,acted",
    [
        (f'Navigates to "Your basket | {SHOP}".', ALL, ""),  # "Continue shopping" predicted as the basket
        ("Something appears.", MENU, ""),  # names nothing that appeared
        ("Report is a button.", REPORT_MENU, "Report"),  # restates the action
    ],
)
def test_what_the_rules_leave_to_the_embedder_is_judged_wrong(judge, text, t, acted):
    """The cases no rule decides: the real MiniLM similarity must keep them below its thresholds (the rule-decided
    cases are in tests/fast/test_rule_judger.py)."""
    assert not judge(text, t, acted)


# --- the audit and the labelled set, on real transitions of SCALE runs kept in tests/data ---------------------------

DATA = Path(__file__).parent / "data"
RUNS = {run.run: run for run in load_runs(DATA / "judge_runs.json")}


@pytest.mark.parametrize("name", sorted(RUNS))
def test_the_judge_cannot_be_fooled_on_real_runs(similarity, name):
    """The issue's acceptance, per SCALE run (bundled sites and the third-party app): the truth passes, another
    transition's outcome and every know-nothing answer do not."""
    report = audit([RUNS[name]], similarity)
    assert report.transitions >= 30
    assert report.true_accept >= 0.95, report.failures
    assert report.swap_false_accept <= 0.05, report.failures
    assert report.constant_false_accept <= 0.05, (report.constants, report.failures)
    assert set(report.constants) >= {"site name (page)", "nothing changes (in-page)", "root path (page)"}


def test_the_floor_is_the_best_know_nothing_answer(similarity):
    run = RUNS[sorted(RUNS)[0]]
    found = floor(run, similarity)
    assert found.accuracy == max(found.answers.values()) and found.answers[found.answer] == found.accuracy
    assert 0 < found.accuracy < 1  # "Nothing visible changes." is right somewhere, and not everywhere


def test_the_labelled_set_is_what_the_issue_asks_for():
    labelled = LabelledSet.load(DATA / "judge_labels.json")
    assert len(labelled.cases) >= 300 and labelled.rules
    sites = {src.site for src in labelled.sources.values()}
    assert {"shop", "forum", "classifieds", "django-admin"} <= sites
    categories = {c.category for c in labelled.cases}
    assert {"model-base", "paraphrase", "near-miss", "hedge", "adversarial"} <= categories
    assert {c.split for c in labelled.cases} == {"calibration", "report"}
    assert len({c.id for c in labelled.cases}) == len(labelled.cases)


def test_the_judge_agrees_with_the_labels_on_the_report_split(similarity):
    stats = score(LabelledSet.load(DATA / "judge_labels.json"), similarity, "report")
    assert stats.cases >= 150
    assert stats.agreement >= 0.95 and stats.false_positive <= 0.03, stats

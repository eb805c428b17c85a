"""Rule Judger v2, pure logic (fast tier): each way the v1 Judger was fooled is a case here, next to right
predictions that must still pass. The similarity is the real MiniLM embedder."""

from __future__ import annotations

from pathlib import Path

import pytest

from explorer.audit import audit, floor, load_runs
from explorer.claims import hedges, parse_claims
from explorer.labels import LabelledSet, score
from explorer.pages import SitePages, path_segments
from explorer.records import ElementBrief, ElementChange, Prediction, Transition
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
    return ElementBrief(key=name, role=role, name=name)


@pytest.fixture(scope="module")
def judge(similarity):
    pages = SitePages.of(SHOP_PAGES, "oscar")

    def run(text: str, t: Transition, acted: str = "", known: SitePages | None = pages) -> bool:
        prediction = parse_prediction(f"OUTCOME: {text}")
        verdict = rule_verdict(prediction, t, similarity, acted, pages=known)
        assert verdict.judge == RULE_JUDGE == "rule-v2"
        return verdict.correct

    return run


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


@pytest.mark.parametrize("t", [BASKET, PRODUCT, REVIEW, ALL])
def test_the_true_description_is_accepted(judge, t):
    assert judge(t.description, t)


@pytest.mark.parametrize("t", [BASKET, PRODUCT, REVIEW, ALL])
def test_the_site_name_is_no_prediction_of_a_page(judge, t):
    assert not judge(f'Navigates to "{SHOP}".', t)
    assert not judge('Navigates to "Oscar".', t)


def test_the_site_name_is_right_for_the_page_titled_by_it(judge):
    home = nav("/", SHOP, "", before="/basket/")
    assert judge(f'Navigates to "{SHOP}".', home, known=SitePages.of([*SHOP_PAGES[:-1], (SHOP, "")], "oscar"))


def test_a_shared_title_suffix_does_not_make_another_page_right(judge):
    # "Continue shopping" predicted as the basket; "Books" predicted for a product page of that category
    assert not judge(f'Navigates to "Your basket | {SHOP}".', ALL)
    assert not judge('Navigates to "Books".', PRODUCT)
    assert judge(f'Navigates to "The shellcoder\'s handbook | Books | {SHOP}".', PRODUCT)


def test_the_product_page_is_not_its_review_form(judge):
    assert not judge(
        f'Navigates to "The shellcoder\'s handbook | Books | {SHOP}" (/catalogue/the-shellcoders-handbook_209/).',
        REVIEW,
    )
    assert not judge('Navigates to "The shellcoder\'s handbook".', REVIEW)
    assert judge("Opens the form to write a review of this book.", REVIEW)  # `opens` may mean a page: it names it
    assert not judge("A review form pops up over the product page.", REVIEW)  # a pop-up is no new page
    assert judge('Navigates to "Write a review".', REVIEW)


@pytest.mark.parametrize(
    "predicted,real",
    [("/p", "/p/17"), ("/t/1", "/t/12"), ("/catalogue", "/catalogue/books_2/"), ("/p/1", "/p/17")],
)
def test_paths_match_on_whole_segments(judge, predicted, real):
    t = nav(real, f"Something | {SHOP}", "Something")
    assert not judge(f'Navigates to "Something" ({predicted}).', t)
    assert judge(f'Navigates to "Something" ({real}).', t)
    assert judge(f'Navigates to "Something" (http://shop.test{real}).', t)


def test_path_segments_keep_ids_and_drop_empty_ones():
    assert path_segments("/t/12/") == (("t", "12"), "")
    assert path_segments("http://a.test/p/17?tab=2#x") == (("p", "17"), "tab=2")
    assert path_segments("p/17") == path_segments("/p/17")


@pytest.mark.parametrize(
    "text",
    [
        "Navigates to the Books, Clothing, Hacking Exposed or All products page",
        'Navigates to "Books" or "Clothing".',
        "Navigates to either the basket or the books page.",
        "Navigates to the books/clothing page.",
        "Maybe navigates to the Books page.",
    ],
)
def test_a_prediction_naming_several_pages_is_wrong(judge, text):
    books = nav("/catalogue/category/books_2/", f"Books | {SHOP}", "Books")
    assert not judge(text, books)


def test_an_or_inside_the_real_title_is_no_hedge(judge):
    login = nav("/accounts/login/", f"Login or register | {SHOP}", "Log In")
    assert judge(f'Navigates to "Login or register | {SHOP}".', login)


def test_paraphrases_of_the_right_page_pass(judge):
    books = nav("/catalogue/category/books_2/", f"Books | {SHOP}", "Books")
    assert judge("Goes to the Books category page.", books)
    assert judge("Opens the page that lists the books.", books)
    assert judge("Navigates to your shopping basket.", BASKET)
    assert judge("Navigates to the home page.", nav("/", SHOP, "Welcome!", before="/basket/"))


def test_direction_counts(judge):
    appeared = in_page(added=[el("Close"), el("Size chart", "heading")])
    assert judge(appeared.description, appeared)
    assert not judge('Disappears: button "Close".', appeared)
    gone = in_page(removed=[el("Claim offer", "link"), el("Dismiss")])
    assert judge('Disappears: link "Claim offer".', gone)
    assert not judge('Appears: link "Claim offer".', gone)
    assert judge('The promo banner with "Claim offer" goes away.', gone, acted="Dismiss")


def test_the_kind_must_match(judge):
    toggled = in_page(
        changed=[
            ElementChange(
                key="s", role="button", name="Hide phone", field="name", before="Show phone", after="Hide phone"
            )
        ],
        texts_added=["+1 555 0100"],
    )
    assert judge(toggled.description, toggled, acted="Show phone")
    assert judge('The phone number is revealed and the button becomes "Hide phone".', toggled, acted="Show phone")
    assert not judge('Changes: button "Show phone" becomes "Call now".', toggled, acted="Show phone")
    assert not judge("Nothing visible changes.", toggled)
    assert not judge('Disappears: button "Show phone".', toggled, acted="Show phone")


def test_the_named_control_must_be_the_one_that_changed(judge):
    menu = in_page(added=[el("Profile", "link"), el("Settings", "link"), el("Log out", "link")])
    assert judge('A menu drops down with "Profile", "Settings" and "Log out".', menu, acted="guest ▾")
    assert judge('Appears: link "Profile", link "Settings".', menu)
    assert not judge('Appears: textbox "Your reply", button "Post reply".', menu)  # someone else's outcome
    assert not judge('Appears: link "Profile", link "Help".', menu)  # one named control did not appear
    assert not judge("Something appears.", menu)


def test_nothing_changes_is_right_only_when_nothing_does(judge):
    still = in_page(ssim=1.0)
    pixels = in_page(ssim=0.99)
    assert "no control or text" in pixels.description
    assert judge("Nothing visible changes.", still) and judge("Nothing visible changes.", pixels)
    assert judge(still.description, still) and judge(pixels.description, pixels)
    assert not judge('Appears: button "Close".', still)
    assert not judge("Nothing visible changes.", in_page(added=[el("Close")]))


def test_restating_the_action_and_fallbacks_are_wrong(judge, similarity):
    menu = in_page(added=[el("Report"), el("Spam", "menuitem")])
    assert not judge('Appears: [4] button "Report"', menu, acted="Report")
    assert not judge("Report is a button.", menu, acted="Report")
    fallback = Prediction(navigates=False, change="Nothing visible changes.", fallback=True)
    assert not rule_verdict(fallback, in_page(ssim=1.0), similarity).correct


def test_descriptions_of_long_changes_are_accepted(judge):
    t = in_page(
        added=[el(f"Option {i}") for i in range(7)],
        removed=[el(f"Old {i}", "link") for i in range(12)],
        texts_added=["A very long paragraph of text that the description shortens with an ellipsis at the end."],
    )
    assert "…" in t.description and "covered or replaced" in t.description
    assert judge(t.description, t)


def test_claims_and_hedges_parse_the_grammar():
    claims = parse_claims('Appears: link "A", link "B" and 2 more. Disappears: button "C".')
    assert [sorted(c.kinds) for c in claims] == [["appears"], ["disappears"]]
    assert claims[0].quoted == ["A", "B"] and claims[1].quoted == ["C"]
    assert parse_claims("Nothing visible changes.")[0].kinds == {"nothing"}
    assert not hedges("12 controls disappear, the page behind is covered or replaced.")
    assert not hedges("A new tab opens at /docs/a/b.")
    assert hedges("A menu or a dialog opens.") and not hedges("A menu or a dialog opens.", alternatives=False)


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

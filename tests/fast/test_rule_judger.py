"""Rule Judger v2, the cases its rules decide: each way the v1 Judger was fooled, next to right predictions that must
still pass. The similarity is tests/fast/conftest.py's stand-in, which fails a test that consults the embedder (the
cases the embedder decides, the audit and the labelled set are in tests/test_judger.py, with the helpers used here).
"""

from __future__ import annotations

import pytest
from test_judger import ALL, BASKET, MENU, PRODUCT, REPORT_MENU, REVIEW, SHOP, SHOP_PAGES, el, in_page, judge_with, nav

from explorer.claims import hedges, parse_claims
from explorer.pages import SitePages, path_segments
from explorer.records import ElementChange, Prediction
from explorer.roles import rule_verdict

BOOKS = nav("/catalogue/category/books_2/", f"Books | {SHOP}", "Books")
TOGGLED = in_page(
    changed=[
        ElementChange(key="s", role="button", name="Hide phone", field="name", before="Show phone", after="Hide phone")
    ],
    texts_added=["+1 555 0100"],
)
APPEARED = in_page(added=[el("Close"), el("Size chart", "heading")])
GONE = in_page(removed=[el("Claim offer", "link"), el("Dismiss")])
STILL, PIXELS = in_page(ssim=1.0), in_page(ssim=0.99)


@pytest.fixture(scope="module")
def judge(similarity):
    """The rule Judger with the fast tier's similarity (which refuses to be called)."""
    return judge_with(similarity)


@pytest.mark.parametrize("t", [BASKET, PRODUCT, REVIEW, ALL])
def test_the_true_description_is_accepted(judge, t):
    assert judge(t.description, t)


@pytest.mark.parametrize("t", [BASKET, PRODUCT, REVIEW, ALL])
@pytest.mark.parametrize("text", [f'Navigates to "{SHOP}".', 'Navigates to "Oscar".'])
def test_the_site_name_is_no_prediction_of_a_page(judge, t, text):
    assert not judge(text, t)


def test_the_site_name_is_right_for_the_page_titled_by_it(judge):
    home = nav("/", SHOP, "", before="/basket/")
    assert judge(f'Navigates to "{SHOP}".', home, known=SitePages.of([*SHOP_PAGES[:-1], (SHOP, "")], "oscar"))


@pytest.mark.parametrize(
    "text,right",
    [
        ('Navigates to "Books".', False),  # the category of the product, not the product page
        (f'Navigates to "The shellcoder\'s handbook | Books | {SHOP}".', True),
    ],
)
def test_a_shared_title_suffix_does_not_make_another_page_right(judge, text, right):
    assert judge(text, PRODUCT) == right


@pytest.mark.parametrize(
    "text,right",
    [
        (
            f'Navigates to "The shellcoder\'s handbook | Books | {SHOP}" (/catalogue/the-shellcoders-handbook_209/).',
            False,
        ),
        ('Navigates to "The shellcoder\'s handbook".', False),
        ("Opens the form to write a review of this book.", True),  # `opens` may mean a page: it names it
        ("A review form pops up over the product page.", False),  # a pop-up is no new page
        ('Navigates to "Write a review".', True),
    ],
)
def test_the_product_page_is_not_its_review_form(judge, text, right):
    assert judge(text, REVIEW) == right


@pytest.mark.parametrize(
    "predicted,real",
    [("/p", "/p/17"), ("/t/1", "/t/12"), ("/catalogue", "/catalogue/books_2/"), ("/p/1", "/p/17")],
)
def test_paths_match_on_whole_segments(judge, predicted, real):
    t = nav(real, f"Something | {SHOP}", "Something")
    assert not judge(f'Navigates to "Something" ({predicted}).', t)
    assert judge(f'Navigates to "Something" ({real}).', t)
    assert judge(f'Navigates to "Something" (http://shop.test{real}).', t)


@pytest.mark.parametrize(
    "url,segments",
    [
        ("/t/12/", (("t", "12"), "")),
        ("http://a.test/p/17?tab=2#x", (("p", "17"), "tab=2")),
        ("p/17", (("p", "17"), "")),
    ],
)
def test_path_segments_keep_ids_and_drop_empty_ones(url, segments):
    assert path_segments(url) == segments


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
    assert not judge(text, BOOKS)


def test_an_or_inside_the_real_title_is_no_hedge(judge):
    login = nav("/accounts/login/", f"Login or register | {SHOP}", "Log In")
    assert judge(f'Navigates to "Login or register | {SHOP}".', login)


@pytest.mark.parametrize(
    "text,t",
    [
        ("Goes to the Books category page.", BOOKS),
        ("Opens the page that lists the books.", BOOKS),
        ("Navigates to your shopping basket.", BASKET),
        ("Navigates to the home page.", nav("/", SHOP, "Welcome!", before="/basket/")),
    ],
)
def test_paraphrases_of_the_right_page_pass(judge, text, t):
    assert judge(text, t)


@pytest.mark.parametrize(
    "text,t,acted,right",
    [
        (APPEARED.description, APPEARED, "", True),
        ('Disappears: button "Close".', APPEARED, "", False),
        ('Disappears: link "Claim offer".', GONE, "", True),
        ('Appears: link "Claim offer".', GONE, "", False),
        ('The promo banner with "Claim offer" goes away.', GONE, "Dismiss", True),
    ],
)
def test_direction_counts(judge, text, t, acted, right):
    assert judge(text, t, acted) == right


@pytest.mark.parametrize(
    "text,right",
    [
        (TOGGLED.description, True),
        ('The phone number is revealed and the button becomes "Hide phone".', True),
        ('Changes: button "Show phone" becomes "Call now".', False),
        ("Nothing visible changes.", False),
        ('Disappears: button "Show phone".', False),
    ],
)
def test_the_kind_must_match(judge, text, right):
    assert judge(text, TOGGLED, acted="Show phone") == right


@pytest.mark.parametrize(
    "text,acted,right",
    [
        ('A menu drops down with "Profile", "Settings" and "Log out".', "guest ▾", True),
        ('Appears: link "Profile", link "Settings".', "", True),
        ('Appears: textbox "Your reply", button "Post reply".', "", False),  # someone else's outcome
        ('Appears: link "Profile", link "Help".', "", False),  # one named control did not appear
    ],
)
def test_the_named_control_must_be_the_one_that_changed(judge, text, acted, right):
    assert judge(text, MENU, acted) == right


@pytest.mark.parametrize(
    "text,t,right",
    [
        ("Nothing visible changes.", STILL, True),
        ("Nothing visible changes.", PIXELS, True),
        (STILL.description, STILL, True),
        (PIXELS.description, PIXELS, True),
        ('Appears: button "Close".', STILL, False),
        ("Nothing visible changes.", in_page(added=[el("Close")]), False),
    ],
)
def test_nothing_changes_is_right_only_when_nothing_does(judge, text, t, right):
    assert judge(text, t) == right


def test_a_pixel_change_alone_is_described_as_such():
    assert "no control or text" in PIXELS.description and STILL.description == "Nothing visible changes."


def test_restating_the_action_and_fallbacks_are_wrong(judge, similarity):
    assert not judge('Appears: [4] button "Report"', REPORT_MENU, acted="Report")
    fallback = Prediction(navigates=False, change="Nothing visible changes.", fallback=True)
    assert not rule_verdict(fallback, STILL, similarity).correct


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

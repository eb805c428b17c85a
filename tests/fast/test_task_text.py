"""Task text of reverse construction: searches read as searches, the facts a page states
(`synthesis.templates.page_facts`), and the information-seeking tasks that ask for them at the end of a navigation
task's path (`synthesis.answers.answer_tasks`)."""

from __future__ import annotations

from explorer.records import Action
from explorer.roles.actor import SHOWN_TEXTS
from synthesis.answers import answer_tasks
from synthesis.records import Lineage, MultiStepTask, PathStep, SingleStepTask
from synthesis.rows import messages
from synthesis.templates import intent, page_facts, path_instruction
from tests.fast.conftest import page

PRODUCT = ["CASCADE CO.", "Timber Cooler", "$45.95", "Color: Midnight", "Free shipping over $75", "30-day returns"]
LISTING = ["Filter", "Coolers", "12 products", "Timber Cooler", "$45.95", "Ice Box", "$80.00"]


def obs(texts: list[str], heading: str = "Timber Cooler"):
    """A page whose main heading is `heading` and whose text blocks are `texts`."""
    return page("/p/1", f"{heading} · Tiny Shop", [heading], [], (250, 250, 250), texts)


def test_a_product_page_states_its_price_and_labelled_facts():
    assert page_facts("Timber Cooler", obs(PRODUCT)) == [
        ('What is the price of "Timber Cooler"?', "$45.95"),
        ('What is the color of "Timber Cooler"?', "Midnight"),
    ]


def test_a_list_has_no_price_but_states_its_count():
    """A page showing several prices has no price of its own, even when the first text blocks show only one; nor
    has a list whose items cost the same, or a list of one: its price follows the item's name, not the heading."""
    assert page_facts("Coolers", obs(LISTING, "Coolers")) == [('How many products does "Coolers" show?', "12")]
    same = ["Sale", "2 products", "Mug", "$19.99", "Cup", "$19.99"]
    assert page_facts("Sale", obs(same, "Sale")) == [('How many products does "Sale" show?', "2")]
    assert page_facts("Results", obs(["Results", "Timber Cooler", "$45.95"], "Results")) == []


def test_only_short_values_the_actor_reads_count_once_per_question():
    """A fact below the blocks the Actor reads is not asked; nor is a sentence with a colon, a value with a double
    quote (the Actor's grammar cannot write it); a question asked twice keeps its first answer."""
    filler = [f"block {i}" for i in range(SHOWN_TEXTS)]
    assert page_facts("X", obs([*filler, "Color: Red"])) == []
    assert page_facts("X", obs([*filler[:-1], "Color: Red"])) == [('What is the color of "X"?', "Red")]
    sentences = [
        "Use the demo account: username demo, password demo.",
        "Bob: I agree with this",
        "Tip: Use code SAVE10 at checkout.",
        'Screen: 15" display',
    ]
    assert page_facts("X", obs(sentences)) == []
    assert page_facts("X", obs(["Color: Red", "Color: Blue"])) == [('What is the color of "X"?', "Red")]


def task(kind: str, facts: list[tuple[str, str]], goal: str = "Page: Timber Cooler"):
    """A single- or multi-step draft reaching a goal page that states `facts`."""
    act = Action(kind="click", mark=2, label='link "Timber Cooler"')
    common = {
        "id": "ab12" if kind == "single" else "cd34",
        "site": "shop",
        "lineage": Lineage(run_id="r", node_ids=["a", "b"]),
        "instruction": 'Open the "Timber Cooler" page.',
        "goal_observation_text": goal,
        "goal_page_texts": PRODUCT,
        "goal_facts": facts,
    }
    if kind == "single":
        return SingleStepTask(
            **common, url="/", title="Home", observation_text="Page: Home", screenshot="s", som_screenshot="s",
            action=act, action_text=act.describe(), target=None, outcome="it opens", reasoning="It links there.",
        )  # fmt: skip
    step = PathStep(node_id="a", url="/", title="Home", observation_text="Page: Home", screenshot="s", action=act,
                    action_text=act.describe(), outcome="it opens", reasoning="It links there.")  # fmt: skip
    return MultiStepTask(**common, start_url="/", goal_url="/p/1", goal_title="Timber Cooler", goal_screenshot="s",
                         steps=[step, step])  # fmt: skip


def test_each_task_whose_goal_states_a_fact_gets_one_question_about_it():
    facts = page_facts("Timber Cooler", obs(PRODUCT))
    plain = task("multi", [])
    made = answer_tasks([task("single", facts), task("multi", facts), plain])
    assert len(made) == 2 and {t.task_type for t in made} == {"single_step", "multi_step"}
    for t in made:
        assert (t.instruction, t.answer) in facts and t.id not in ("ab12", "cd34")
        assert t.goal_observation_text == "Page: Timber Cooler" and t.goal_facts == [] and not t.fallback
    assert made[1].steps == task("multi", facts).steps  # the same actions
    assert answer_tasks(made) == []  # an information-seeking task is not asked again
    assert made == answer_tasks([task("single", facts), task("multi", facts)])  # stable


def test_a_fact_shown_before_the_last_action_is_not_asked():
    """Where a page on the way already shows the answer, the Actor should answer there, not act on: no task."""
    shown = task("single", [('What is the price of "Timber Cooler"?', "$45.95")])
    assert answer_tasks([shown.model_copy(update={"page_texts": ["Timber Cooler", "$45.95"]})]) == []
    path = task("multi", [('What is the color of "Timber Cooler"?', "Midnight")])
    step = path.steps[1].model_copy(update={"page_texts": ["Color: Midnight"]})
    assert answer_tasks([path.model_copy(update={"steps": [path.steps[0], step]})]) == []


def test_the_sft_view_of_a_task_ends_with_a_stop_on_its_goal_page():
    """The chat view ends each task that kept its goal page with `stop` there, with the answer when it asks."""
    parent = task("multi", [('What is the price of "Timber Cooler"?', "$45.95")])
    made = answer_tasks([parent])[0]
    chat = messages(made)
    assert chat[-2]["content"] == "Page: Timber Cooler"
    assert chat[-1]["content"].endswith('ACTION: stop and answer "$45.95"')
    assert len(chat) == 1 + 2 * 3  # system, two steps, the answer
    assert messages(parent)[-1]["content"].endswith("ACTION: stop") and len(messages(parent)) == len(chat)


def test_a_submitted_search_reads_as_a_search():
    """Text typed and submitted in a search field is a search (`Search for "tent".`), as a user asks for it; text
    typed in another field, or not submitted, is still entered in that field."""
    search = Action(kind="type", mark=5, label='searchbox "Search products"', text="tent", press_enter=True)
    home = Action(kind="click", mark=1, label='link "Home"')
    assert intent(search, None) == 'search for "tent"'
    assert path_instruction("Search results", [(home, None), (search, None)], [True, True]) == 'Search for "tent".'
    name = Action(kind="type", mark=2, label='textbox "Name"', text="Ana", press_enter=True)
    typed = search.model_copy(update={"press_enter": False})
    assert intent(name, None) == 'enter "Ana" in the Name field'
    assert intent(typed, None) == 'enter "tent" in the Search products field'

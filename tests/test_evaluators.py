"""WebArena-format evaluators on the bundled shop in real Chromium: per eval type, one scripted agent that solves
its task (success) and one that does not (failure). program_html reads pages in the agent's own browser context
(the cart it filled), and fuzzy_match is judged by the real MiniLM embedder."""

from __future__ import annotations

from pathlib import Path

import pytest

from evals.evaluators import FUZZY_THRESHOLD, evaluate_task
from evals.tasks import load_tasks
from explorer.records import Action

TASKS = Path(__file__).resolve().parent / "data" / "evals" / "shop_tasks.json"


@pytest.fixture(scope="module")
def tasks(site_urls):
    """The bundled shop tasks by id, their __SHOP__ placeholders pointing at the served shop."""
    return {t.task_id: t for t in load_tasks(TASKS, site_urls)}


async def act_on(session, name: str, kind: str = "click", role: str | None = None, **fields):
    """Observe, find the element whose name starts with `name` (scrolling down to it) and act on it."""
    for _ in range(8):
        obs = await session.observe()
        found = [e for e in obs.elements if e.name.startswith(name) and role in (None, e.role)]
        if found:
            outcome = await session.act(Action.on(found[0], kind, **fields), obs)
            assert outcome.ok, outcome.error
            return outcome
        await session.act(Action(kind="scroll", direction="down"))
    raise AssertionError(f"no element named {name!r} on {session.page.url}")


async def sort_jackets(session, order: str) -> None:
    """The agent opens the jackets and applies the sort order `order`."""
    await act_on(session, "Jackets", role="link")
    await act_on(session, "Sort by", "select", option=order)
    await act_on(session, "Apply filters")


async def open_jacket(session, product: str) -> dict[str, str]:
    """The agent opens `product` from the jackets and reads its page: its name, brand and price."""
    await act_on(session, "Jackets", role="link")
    await act_on(session, product, role="link")
    read = {}
    for field, css in [("name", "h1"), ("brand", ".eyebrow"), ("price", ".price")]:
        read[field] = (await session.page.text_content(f".product-info {css}")).strip()
    return read


async def buy(session, product: str, quantity: int) -> None:
    """The agent puts `quantity` of `product` in its cart (the shop then shows the cart)."""
    await open_jacket(session, product)
    await act_on(session, "Quantity", "type", text=str(quantity))
    await act_on(session, "Add to cart")


async def test_url_match_sorting_right_and_wrong(open_session, tasks):
    task = tasks["shop-sort-jackets"]
    right, wrong = await open_session("shop"), await open_session("shop")
    await sort_jackets(right, "Price: low to high")
    await sort_jackets(wrong, "Top rated")
    solved = await evaluate_task(task, None, right.page.url, right.context)
    assert solved.success and solved.score == 1.0, solved.reason
    failed = await evaluate_task(task, None, wrong.page.url, wrong.context)
    assert not failed.success and failed.score == 0.0
    assert failed.reason.startswith("url_match: ") and "has sort=rating, not sort=price_asc" in failed.reason


async def test_string_match_exact_answer_from_the_page(open_session, tasks):
    task = tasks["shop-jacket-brand"]
    right, wrong = await open_session("shop"), await open_session("shop")
    brand = (await open_jacket(right, "Coastal Shell Jacket"))["brand"]
    other = (await open_jacket(wrong, "Alpine Puffer Jacket"))["brand"]  # the wrong product's brand
    solved = await evaluate_task(task, brand, right.page.url, right.context)
    assert solved.success, solved.reason
    failed = await evaluate_task(task, other, wrong.page.url, wrong.context)
    assert not failed.success and failed.reason == "string_match: answer 'northwind' is not 'alder & pine'"
    silent = await evaluate_task(task, None, right.page.url, right.context)
    assert not silent.success and silent.reason == "string_match: no answer"


async def test_url_and_must_include_on_the_right_product_page(open_session, tasks):
    task = tasks["shop-vest-price"]
    right, wrong = await open_session("shop"), await open_session("shop")
    vest = await open_jacket(right, "Glacier Insulated Vest")
    fjord = await open_jacket(wrong, "Fjord Trail Jacket")
    solved = await evaluate_task(task, f"The vest costs {vest['price']}.", right.page.url, right.context)
    assert solved.success and [c.eval_type for c in solved.checks] == ["url_match", "string_match"], solved.reason
    failed = await evaluate_task(task, f"It costs {fjord['price']}.", wrong.page.url, wrong.context)
    assert not failed.success and [c.passed for c in failed.checks] == [False, False]
    assert failed.reason.startswith("url_match: ") and "/p/4" in failed.reason
    assert "does not include '$104.00'" in failed.checks[1].reason


async def test_program_html_reads_the_cart_in_the_agents_own_context(open_session, tasks):
    task = tasks["shop-cart-vests"]
    right, wrong, bystander = await open_session("shop"), await open_session("shop"), await open_session("shop")
    await buy(right, "Glacier Insulated Vest", 2)
    await buy(wrong, "Coastal Shell Jacket", 2)
    assert right.page.url.endswith("/cart")
    solved = await evaluate_task(task, None, right.page.url, right.context)
    assert solved.success and solved.reason == "passed: 3 page check(s) hold", solved.reason
    assert len(right.context.pages) == 1 and right.page.url.endswith("/cart")  # its pages closed, the agent's kept
    failed = await evaluate_task(task, None, wrong.page.url, wrong.context)
    assert not failed.success and failed.reason.startswith("program_html: target 1 (")
    assert "'glacier insulated vest' not in 'product price quantity total" in failed.reason
    # the same final URL judged in another visitor's context: its cart is empty, so the table is not there
    elsewhere = await evaluate_task(task, None, right.page.url, bystander.context)
    assert not elsewhere.success and "'glacier insulated vest' not in ''" in elsewhere.reason


async def test_program_html_last_reads_the_live_page(open_session, tasks):
    task = tasks["shop-cart-vests"].model_copy(deep=True)
    task.eval.program_html = task.eval.program_html[2:]  # only the `last` target: "Order summary" or an empty cart
    session = await open_session("shop")
    await buy(session, "Glacier Insulated Vest", 1)
    assert (await evaluate_task(task, None, session.page.url, session.context)).success
    await session.page.evaluate("document.querySelector('.summary').remove()")  # only the live page changes
    gone = await evaluate_task(task, None, session.page.url, session.context)
    assert not gone.success and "'order summary |or| your cart is empty' not in" in gone.reason


async def test_fuzzy_match_with_the_real_embedder(open_session, tasks, similarity):
    task = tasks["shop-vest-brand"]
    right, wrong = await open_session("shop"), await open_session("shop")
    vest = await open_jacket(right, "Glacier Insulated Vest")
    coat = await open_jacket(wrong, "Coastal Shell Jacket")
    said = f"The {vest['name']} is made by {vest['brand']}."
    solved = await evaluate_task(task, said, right.page.url, right.context, similarity)
    assert solved.success, solved.reason
    assert similarity(said.lower(), task.eval.reference_answers.fuzzy_match[0]) >= FUZZY_THRESHOLD
    mistaken = f"The {coat['name']} is made by {coat['brand']}."
    failed = await evaluate_task(task, mistaken, wrong.page.url, wrong.context, similarity)
    assert not failed.success and failed.reason.startswith("string_match: answer 'the coastal shell jacket is made by")
    assert "is not close to 'Ridgeline makes the Glacier Insulated Vest' (similarity 0." in failed.reason

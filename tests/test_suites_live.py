"""The bundled task suites on the live bundled sites in real Chromium.

An oracle, scripted per form and otherwise going to the reference page (or the page that shows the answer, where it
checks that the answer stands in the page and then gives it), solves the first task of every template and at least
three tasks of every category on every site: `evaluate_task` says success. A do-nothing agent, which stays on the
start URL and answers nothing, fails every task of every suite: no task passes for free. Each task that changes state
starts from a reset site (`<base>__reset`) and a fresh visitor, as the harness runs it.
"""

from __future__ import annotations

import pytest

from evals.evaluators import evaluate_task
from evals.suites import CATEGORIES, SITE_NAMES, load_suite
from evals.tasks import Task

PER_CATEGORY = 3
SLOW = {"navigation_ms": 15000, "action_ms": 8000}  # a loaded 2-core machine


def sample(tasks: list[Task]) -> list[Task]:
    """The first task of every template, topped up to PER_CATEGORY tasks per category, in file order."""
    keep = set({t.intent_template_id: t.task_id for t in reversed(tasks)}.values())
    for category in CATEGORIES:
        mine = [t.task_id for t in tasks if t.category == category]
        extra = [i for i in mine if i not in keep][: max(0, PER_CATEGORY - len(keep.intersection(mine)))]
        keep.update(extra)
    return [t for t in tasks if t.task_id in keep]


# ---- the oracle's forms (Playwright on the session's page) ---------------------------------------------------------
async def goto(page, url: str) -> None:
    await page.goto(url, wait_until="load")


async def submit(page, selector: str) -> None:
    """Click `selector` and wait for the page it loads."""
    async with page.expect_navigation(wait_until="load"):
        await page.click(selector)


async def press(page, url: str, selector: str) -> None:
    """Open `url` and submit the form of the button `selector`."""
    await goto(page, url)
    await submit(page, selector)


async def fill_cart(page, base: str, v: dict) -> None:
    """Put `cart` ([pid, quantity] pairs) in the cart from the product pages; then set the quantity `update_to`."""
    for pid, qty in v["cart"]:
        await goto(page, f"{base}/p/{pid}")
        await page.fill("form.buy input[name=quantity]", str(qty))
        await submit(page, "form.buy button[type=submit]")
    if "update_to" in v:
        row = f".cart-table form:has(input[name=pid][value='{v['cart'][0][0]}'])"
        await page.fill(f"{row} input.qty", str(v["update_to"]))
        await submit(page, f"{row} button[type=submit]")


async def pay(page, base: str, v: dict) -> None:
    await fill_cart(page, base, v)
    await goto(page, f"{base}/checkout")
    await page.check(f"input[name=delivery][value={v['delivery']}]")
    await submit(page, "form[action='/checkout/pay'] button[type=submit]")


async def log_in(page, base: str, v: dict) -> None:
    await goto(page, f"{base}/login")
    await page.fill("input[name=username]", v["username"])
    await page.fill("input[name=password]", v["password"])
    await submit(page, "form[action='/login'] button[type=submit]")


async def log_in_again(page, base: str, v: dict) -> None:
    await goto(page, f"{base}/logout")
    await log_in(page, base, v)


async def reply(page, base: str, v: dict) -> None:
    await goto(page, f"{base}/t/{v['tid']}")
    await page.click("button[data-open=reply-dialog]")
    await page.fill("#reply-dialog textarea[name=body]", v["text"])
    await submit(page, "#reply-dialog button[type=submit]")


async def settings(page, base: str, v: dict) -> None:
    await goto(page, f"{base}/settings")
    if "theme" in v:
        await page.select_option("select[name=theme]", v["theme"])
    if "signature" in v:
        await page.fill("textarea[name=signature]", v["signature"])
    await submit(page, "form[action='/settings'] button[type=submit]")


async def report(page, base: str, v: dict) -> None:
    """Report the first post of thread `tid` (forum) or the ad `lid` (classifieds) for `reason`."""
    await goto(page, f"{base}/t/{v['tid']}" if "tid" in v else f"{base}/l/{v['lid']}")
    await page.click("button[data-open=report-dialog]")
    await page.check(f"#report-dialog input[value={v['reason']}]")
    await submit(page, "#report-dialog button[type=submit]")


async def delete_own(page, base: str, v: dict) -> None:
    await press(
        page, f"{base}/t/{v['tid']}", "article.post:has(user-card[data-name=guest_demo]) form.inline-form button"
    )


async def contact(page, base: str, v: dict) -> None:
    await goto(page, f"{base}/l/{v['lid']}")
    for field in ("name", "email"):
        await page.fill(f"#contact input[name={field}]", v[field])
    await page.fill("#contact textarea[name=message]", v["message"])
    await submit(page, "#contact button[type=submit]")


async def save(page, base: str, v: dict) -> None:
    await press(page, f"{base}/l/{v['lid']}", "form[action$='/save'] button")


async def post_ad(page, base: str, v: dict) -> None:
    await goto(page, f"{base}/post")
    await page.fill("input[name=title]", v["title"])
    await page.select_option("select[name=category]", v["cat"])
    await page.select_option("select[name=region]", v["region_slug"])
    await page.fill("input[name=price]", v["price"])
    await page.fill("textarea[name=description]", v["description"])
    await submit(page, "form[action='/post'] button[type=submit]")
    await submit(page, "form[action='/post/publish'] button[type=submit]")


FORMS = {
    "shop/cart_add": fill_cart,
    "shop/cart_update": fill_cart,
    "shop/two_to_cart": fill_cart,
    "shop/best_rated_to_cart": fill_cart,
    "shop/pay": pay,
    "shop/login": log_in,
    "forum/reply": reply,
    "forum/reply_pinned": reply,
    "forum/theme": settings,
    "forum/signature": settings,
    "forum/report": report,
    "forum/login_as": log_in_again,
    "forum/delete": delete_own,
    "classifieds/contact": contact,
    "classifieds/save": save,
    "classifieds/save_cheapest": save,
    "classifieds/post_ad": post_ad,
    "classifieds/report": report,
}


async def oracle(page, base: str, task: Task) -> str | None:
    """Do the task as its checks were derived: the form, else the reference page (or the page with the answer);
    return the reference answer after checking that the page shows what it rests on."""
    if task.intent_template_id in FORMS:
        await FORMS[task.intent_template_id](page, base, task.instantiation_dict)
    else:
        await goto(page, task.eval.reference_url.split(" |OR| ")[0] or task.evidence_url)
    refs = task.eval.reference_answers
    if refs is None:
        return None
    shown = " ".join((await page.evaluate("document.body.textContent")).split()).lower()
    for fact in [refs.exact_match, *(refs.must_include or []), *task.eval.reference_answer_raw_annotation.split(", ")]:
        assert fact is None or fact.lower() in shown, f"{task.task_id}: {fact!r} is not on {page.url}"
    return refs.exact_match or ", ".join(refs.must_include or []) or refs.fuzzy_match[0]


@pytest.mark.parametrize("site", SITE_NAMES)
async def test_an_oracle_solves_every_template_and_category(site, site_urls, open_session, similarity):
    tasks = load_suite(f"bundled:{site}", site_urls)
    assert all(t.intent_template_id in FORMS for t in tasks if "program_html" in t.eval.eval_types)
    chosen = sample(tasks)
    for category in CATEGORIES:
        wanted = min(PER_CATEGORY, sum(t.category == category for t in tasks))
        assert sum(t.category == category for t in chosen) >= wanted, category
    session = await open_session(site, timeouts=SLOW)
    failed = []
    for task in chosen:
        await session.reset()
        answer = await oracle(session.page, site_urls[site].rstrip("/"), task)
        verdict = await evaluate_task(task, answer, session.page.url, session.context, similarity)
        if not verdict.success:
            failed.append(f"{task.task_id}: {verdict.reason}")
    assert not failed, "\n".join(failed)


@pytest.mark.parametrize("site", SITE_NAMES)
async def test_a_do_nothing_agent_fails_every_task(site, site_urls, open_session):
    tasks = load_suite(f"bundled:{site}", site_urls)
    session = await open_session(site, timeouts=SLOW)
    passed = []
    for task in tasks:
        if task.require_reset:
            await session.reset()
        await goto(session.page, task.start_url)
        verdict = await evaluate_task(task, None, session.page.url, session.context)
        if verdict.success or verdict.score > 0:
            passed.append(f"{task.task_id}: {verdict.reason}")
    assert not passed, "\n".join(passed)

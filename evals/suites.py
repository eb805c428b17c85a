"""Bundled task suites: WebArena-format tasks on the bundled shop, forum and classifieds, generated from their seeds.

`python -m evals.suites` writes `evals/suites/<site>.json` (committed; `--check` only compares) from the content the
sites serve with their default seed (`serve_sites(seed=0)`): every answer, URL and page check is computed from
`sites.content.build_shop`, `sites.forum_content.build_forum` and `sites.classifieds_content.build_classifieds`,
and instances are drawn with a fixed `random.Random`, so regenerating writes identical files. Each site gets tasks
in five categories (`navigation`, `search` (search, filter and sort), `form`, `info`, `multi-step`), split into `dev`
and `test` by alternating within each category. Extra fields, all kept by `evals.tasks.Task`: `category`,
`steps_hint` (the UI actions (clicks, typing, selections) an oracle needs from `start_url`, the final answer not
counted), `intent_template`, `intent_template_id`, `instantiation_dict` (the template's values and the ids behind
them), `evidence_url` (answer tasks: a page that shows the answer) and, in `eval`, WebArena's
`reference_answer_raw_annotation`. An agent is shown only `intent`.

`load_suite("bundled:shop:dev", {"shop": url})` loads a suite with its placeholders (`__SHOP__`, `__FORUM__`,
`__CLASSIFIEDS__`) filled; `suite_names()` lists the names.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple
from urllib.parse import urlencode

from evals.tasks import URL_NOTE, Task, fill_placeholders, load_tasks
from explorer.errors import ConfigError
from sites import classifieds as cl
from sites import forum as fo
from sites import shop as sh
from sites.classifieds_content import build_classifieds
from sites.content import build_shop, money, nice_date
from sites.forum_content import DEMO_USER, USER_NAMES, build_forum, month_events

SITE_NAMES = ("shop", "forum", "classifieds")
CATEGORIES = ("navigation", "search", "form", "info", "multi-step")
SPLITS = ("dev", "test")
SEED = 0  # the seed `serve_sites` and `scalehop sites serve` use
PREFIX = "bundled"
FOLDER = Path(__file__).resolve().parent / "suites"
_SHORT = {"navigation": "nav", "search": "search", "form": "form", "info": "info", "multi-step": "multi"}

# program_html locators: JS expressions read in the target page
CART_LINES = "document.querySelector('.cart-table').innerText"
CART_QTYS = "[...document.querySelectorAll('.cart-table input.qty')].map(e => e.value).join(' ')"
MAIN_TEXT = "document.querySelector('main').innerText"
LAST_POST = (
    "(p => p.querySelector('user-card').dataset.name + ' wrote: ' + p.querySelector('.post-body').innerText)"
    "([...document.querySelectorAll('article.post')].pop())"
)
DEMO_POSTS = f"String(document.querySelectorAll('article.post user-card[data-name=\"{DEMO_USER}\"]').length)"


# ---- loading -------------------------------------------------------------------------------------------------------
def suite_names() -> list[str]:
    """Every bundled suite name: `bundled:<site>` and `bundled:<site>:<split>`."""
    return [f"{PREFIX}:{site}{part}" for site in SITE_NAMES for part in ("", *(f":{s}" for s in SPLITS))]


def load_suite(name: str, sites: Mapping[str, str]) -> list[Task]:
    """The tasks of suite `name` (`bundled:<site>[:<split>]`), their URLs filled from `sites` (name -> base URL)."""
    if name not in suite_names():
        raise ConfigError(f"unknown suite {name!r}: use one of {', '.join(suite_names())}")
    _, site, *split = name.split(":")
    with resources.as_file(resources.files("evals") / "suites" / f"{site}.json") as path:
        tasks = load_tasks(path, sites)
    mapping = {key.lower(): url for key, url in sites.items()}
    tasks = [_with_evidence(t, mapping) for t in tasks if not split or t.split == split[0]]
    return tasks


def _with_evidence(task: Task, sites: Mapping[str, str]) -> Task:
    """`task` with the placeholder of its `evidence_url` (an extra field load_tasks leaves as it is) filled too."""
    evidence = getattr(task, "evidence_url", None)
    if not evidence:
        return task
    return task.model_copy(update={"evidence_url": fill_placeholders(evidence, sites, f"task {task.task_id}")})


# ---- building blocks -----------------------------------------------------------------------------------------------
def exact(value: str) -> dict:
    """A reference the answer (or the page contents) must equal."""
    return {"exact_match": value}


def include(*phrases: str) -> dict:
    """A reference the answer (or the page contents) must hold each phrase of."""
    return {"must_include": list(phrases)}


def fuzzy(sentence: str) -> dict:
    """A reference the answer must mean (judged by embeddings, its numbers present)."""
    return {"fuzzy_match": [sentence]}


def best(items: Iterable, key: Callable) -> Any:
    """The item with the smallest `key`, or None when two share it (a person could not tell which is meant)."""
    ranked = sorted(items, key=key)
    if not ranked or (len(ranked) > 1 and key(ranked[0]) == key(ranked[1])):
        return None
    return ranked[0]


def lone(number: int, numbers: Iterable[int]) -> bool:
    """Whether no other id starts with `number`'s digits: url_match would find /p/1 inside /p/12 ("GOLD in PRED")."""
    return not any(str(n).startswith(str(number)) for n in numbers if n != number)


def price_text(cents: int) -> str:
    """A classifieds price as its pages show it."""
    return "Free" if cents == 0 else money(cents)


def _anything(_: object) -> bool:
    return True


class _Pool:
    """A shuffled supply: `take(test)` hands out the next item that passes `test`, each item once."""

    def __init__(self, items: Iterable, rng: random.Random):
        self.items = list(items)
        rng.shuffle(self.items)

    def take(self, test: Callable[[Any], bool] = _anything) -> Any:
        found = next(item for item in self.items if test(item))
        self.items.remove(found)
        return found

    def some(self, count: int, test: Callable[[Any], bool] = _anything) -> list:
        return [self.take(test) for _ in range(count)]


class _Kind(NamedTuple):
    """A kind of item tasks are about (products, threads, ads, members...): where they come from, the template values
    and UI actions (from the start page) that reach one, and its page."""

    pool: _Pool
    values: Callable[[Any], dict]
    steps: Callable[[Any], int]
    page: Callable[[Any], str]


class _Ask(NamedTuple):
    """One template asked about `count` items of a kind (those passing `only`): `answer(item)` makes a string_match
    task shown on the item's page, no answer a url_match task to reach the page; `more`: actions after reaching it;
    `raw(item)`: the fact, where the reference is a sentence."""

    template_id: str
    template: str
    answer: Callable[[Any], dict] | None = None
    count: int = 1
    more: int = 0
    only: Callable[[Any], bool] = _anything
    raw: Callable[[Any], str] | None = None


class _Suite:
    """One site's tasks as plain JSON objects, in the order they are added."""

    def __init__(self, site: str, seed: int = SEED):
        self.site = site
        self.base = f"__{site.upper()}__"
        self.rng = random.Random(f"suites:{site}:{seed}")
        self.tasks: list[dict] = []

    def pool(self, items: Iterable) -> _Pool:
        """A pool of `items`, shuffled by this suite's generator."""
        return _Pool(items, self.rng)

    def url(self, path: str, **query: object) -> str:
        """`__SITE__<path>?<query>` (None and "" values left out)."""
        pairs = [(k, v) for k, v in query.items() if v not in (None, "")]
        return self.base + path + ("?" + urlencode(pairs) if pairs else "")

    def cased(self, path: str, key: str, term: str) -> list[str]:
        """`path?key=term` typed in lower case or capitalized (url_match compares query values exactly)."""
        return [self.url(path, **{key: t}) for t in dict.fromkeys([term.lower(), term.capitalize()])]

    def add(
        self,
        category: str,
        template_id: str,
        template: str,
        values: dict,
        steps: int,
        *,
        url: str | Sequence[str] = (),
        answer: dict | None = None,
        evidence: str = "",
        raw: str = "",
        checks: Sequence[tuple[str, str, dict]] = (),
    ) -> None:
        """One task: `url` (one URL, or |OR| alternatives) -> url_match; `answer` -> string_match (with the page that
        shows it, `evidence`, and the `raw` fact); `checks`, each (URL or "last", locator, contents) -> program_html.
        A task with checks changes state, so it requires a reset."""
        assert bool(answer) == bool(evidence), "an answer task names the page that shows its answer"
        same = [t["intent_template"] for t in self.tasks if t["intent_template_id"] == f"{self.site}/{template_id}"]
        assert same in ([], [template] * len(same)), f"template id {template_id} names two templates"
        urls = [url] if isinstance(url, str) else list(url)
        types = [t for t, on in (("url_match", urls), ("string_match", answer), ("program_html", checks)) if on]
        evaluation = {
            "eval_types": types,
            "reference_answers": answer,
            "reference_url": " |OR| ".join(urls),
            "program_html": [{"url": u, "locator": loc, "required_contents": c} for u, loc, c in checks],
            "url_note": URL_NOTE,
        }
        if answer:
            first = next(iter(answer.values()))
            evaluation["reference_answer_raw_annotation"] = raw or (first if isinstance(first, str) else first[0])
        number = 1 + sum(t["category"] == category for t in self.tasks)
        task = {
            "task_id": f"{self.site}-{_SHORT[category]}-{number:02d}",
            "sites": [self.site],
            "split": None,
            "category": category,
            "steps_hint": steps,
            "require_login": False,
            "require_reset": bool(checks),
            "start_url": self.base,
            "intent_template": template,
            "intent_template_id": f"{self.site}/{template_id}",
            "instantiation_dict": values,
            "intent": template.format(**values),
            **({"evidence_url": evidence} if evidence else {}),
            "eval": evaluation,
        }
        self.tasks.append(task)

    def about(self, category: str, kind: _Kind, *rows: _Ask) -> None:
        """The tasks of `rows`, each about items taken from `kind`'s pool."""
        for row in rows:
            for item in kind.pool.some(row.count, row.only):
                page, steps, values = kind.page(item), kind.steps(item) + row.more, kind.values(item)
                raw = row.raw(item) if row.raw else ""
                found = {"answer": row.answer(item), "evidence": page, "raw": raw} if row.answer else {"url": page}
                self.add(category, row.template_id, row.template, values, steps, **found)

    def fixed(self, category: str, template_id: str, template: str, steps: int, path: str, answer: dict | None = None):
        """A task on one page of the site: reach `path` (url_match) or, with `answer`, read it there."""
        found = {"answer": answer, "evidence": self.url(path)} if answer else {"url": self.url(path)}
        self.add(category, template_id, template, {}, steps, **found)

    def finish(self) -> list[dict]:
        """The tasks with their splits: dev and test alternate within each category (stratified, deterministic)."""
        for category in CATEGORIES:
            for index, task in enumerate(t for t in self.tasks if t["category"] == category):
                task["split"] = SPLITS[index % 2]
        return self.tasks


# ---- shop ----------------------------------------------------------------------------------------------------------
def _shop(seed: int) -> list[dict]:
    s, data = _Suite("shop", seed), build_shop(seed)
    cats = {c["slug"]: c["name"] for c in data.categories}
    in_cat = {slug: [p for p in data.products.values() if p.category == slug] for slug in cats}
    made_by = {
        (c, b): [p for p in in_cat[c] if p.brand == b] for c in cats for b in sorted({p.brand for p in in_cat[c]})
    }
    specs = {p.id: dict(p.specs) for p in data.products.values()}
    words = {p.id: f"{p.name} {p.brand} {cats[p.category]}".lower() for p in data.products.values()}

    def hits(term: str) -> list:  # the shop's search: every word in the name, brand or category
        return [p for p in data.products.values() if all(w in words[p.id] for w in term.split())]

    def steps(p) -> int:  # the category link, its second page if there, the product
        return 2 + in_cat[p.category].index(p) // sh.PER_PAGE

    def cart(lines: list[tuple], **more) -> tuple[dict, list[tuple]]:
        """The instantiation that puts `lines` ((product, quantity)) in the cart, and the cart's checks."""
        texts = [t for p, q in lines for t in (p.name, money(p.price * q))]
        qtys = exact(" ".join(str(q) for _, q in lines))
        checks = [("__SHOP__/cart", CART_LINES, include(*texts)), ("__SHOP__/cart", CART_QTYS, qtys)]
        return {"cart": [[p.id, q] for p, q in lines], **more}, checks

    products = _Kind(
        s.pool(data.products.values()), lambda p: {"product": p.name, "pid": p.id}, steps, lambda p: s.url(f"/p/{p.id}")
    )
    categories = _Kind(s.pool(cats), lambda c: {"category": cats[c]}, lambda _: 1, lambda c: s.url(f"/c/{c}"))
    helps = _Kind(
        s.pool(["about", "shipping", "returns"]),
        lambda h: {"page": sh.INFO_PAGES[h]},
        lambda _: 1,
        lambda h: s.url(f"/info/{h}"),
    )
    clear = lambda p: lone(p.id, data.products)  # noqa: E731 - a product page that url_match can tell apart
    terms = s.pool(
        t for t in ("tent", "boot", "stove", "pack", "kettle", "shoe", "harbor", "cedar") if len(hits(t)) > 1
    )

    s.about("navigation", categories, _Ask("category", "Open the {category} category.", count=3))
    s.about("navigation", products, _Ask("product", "Open the product page of the {product}.", count=3, only=clear))
    s.about("navigation", helps, _Ask("help", 'Open the shop\'s "{page}" help page.', count=2))
    s.fixed("navigation", "cart", "Open your shopping cart.", 1, "/cart")
    s.fixed("navigation", "login_page", "Go to the shop's log-in page.", 1, "/login")
    second = categories._replace(steps=lambda _: 2, page=lambda c: s.url(f"/c/{c}", page=2))
    s.about("navigation", second, _Ask("page2", "Open the second page of the {category} category."))

    for term in terms.some(3):
        s.add("search", "search", 'Search the shop for "{term}".', {"term": term}, 2, url=s.cased("/search", "q", term))
    for slug, brand in s.rng.sample(sorted(made_by), 2):
        v, url = {"brand": brand, "category": cats[slug]}, s.url(f"/c/{slug}", brand=brand)
        s.add("search", "brand", "Show only {brand} products in the {category} category.", v, 3, url=url)
    capped = [
        (c, cap)
        for c in cats
        for cap in sh.PRICE_CAPS
        if 0 < sum(p.price <= cap * 100 for p in in_cat[c]) < len(in_cat[c])
    ]
    for slug, cap in s.rng.sample(capped, 2):
        v, url = {"category": cats[slug], "cap": cap}, s.url(f"/c/{slug}", max_price=cap)
        s.add("search", "cap", "Show the {category} products that cost at most ${cap}.", v, 3, url=url)
    orders = {"price_asc": "price, lowest first", "price_desc": "price, highest first", "rating": "rating, best first"}
    for sort in s.rng.sample(sorted(orders), 2):
        slug = s.rng.choice(sorted(cats))
        v, url = {"category": cats[slug], "order": orders[sort]}, s.url(f"/c/{slug}", sort=sort)
        s.add("search", "sort", "Sort the {category} category by {order}.", v, 3, url=url)
    slug, brand = s.rng.choice(sorted(made_by))
    v, url = {"brand": brand, "category": cats[slug]}, s.url(f"/c/{slug}", brand=brand, sort="price_desc")
    s.add("search", "brand_sort", "Show the {brand} products in {category}, the most expensive first.", v, 4, url=url)

    for qty in (2, 3, 4):
        p = products.pool.take()
        v, checks = cart([(p, qty)], qty=qty, product=p.name)
        s.add("form", "cart_add", "Add {qty} of the {product} to your cart.", v, steps(p) + 2, checks=checks)
    for qty in (3, 5):
        p = products.pool.take()
        v, _ = cart([(p, 1)], product=p.name, qty=qty, update_to=qty)
        template = "Put one {product} in your cart, then change its quantity in the cart to {qty}."
        s.add("form", "cart_update", template, v, steps(p) + 3, checks=cart([(p, qty)])[1])
    hello = ("__SHOP__/", "document.querySelector('.account-nav').innerText", include("Hi, demo"))
    template = "Log in to the shop as {username} (the password is {password})."
    s.add("form", "login", template, {"username": "demo", "password": "demo"}, 4, checks=[hello])
    for qty, delivery, option in ((2, "express", "express delivery"), (3, "pickup", "in-store pick-up")):
        p = products.pool.take()
        v, _ = cart([(p, qty)], qty=qty, product=p.name, option=option, delivery=delivery)
        done = include("Thank you for your order!", f"({qty} items) is confirmed for {delivery} delivery")
        s.add("form", "pay", "Buy {qty} of the {product} with {option}.", v, steps(p) + 5, checks=[("last", "", done)])

    s.about(
        "info",
        products,
        _Ask("price", "What is the price of the {product}?", lambda p: include(money(p.price)), 3),
        _Ask(
            "maker_name",
            "Which brand makes the {product}? Answer with the brand's name only.",
            lambda p: exact(p.brand),
            2,
        ),
        _Ask("ratings", "How many ratings does the {product} have?", lambda p: include(str(p.rating_count))),
        _Ask(
            "maker",
            "Who makes the {product}?",
            lambda p: fuzzy(f"{p.brand} makes the {p.name}"),
            2,
            raw=lambda p: p.brand,
        ),
    )
    for spec, how in (("SKU", exact), ("Material", exact), ("Weight", include), ("Warranty", include)):
        p = products.pool.take()
        v = {**products.values(p), "spec": spec if spec == "SKU" else spec.lower()}
        template = "According to its specifications, what is the {spec} of the {product}?"
        s.add("info", "spec", template, v, steps(p) + 1, answer=how(specs[p.id][spec]), evidence=products.page(p))
    s.fixed("info", "express_cost", "How much does express shipping cost?", 1, "/info/shipping", include("$14.95"))
    template = "Within how many days can unworn items be returned for a full refund?"
    s.fixed("info", "returns", template, 1, "/info/returns", include("30"))

    for slug in [c for c in s.rng.sample(sorted(cats), len(cats)) if best(in_cat[c], lambda p: p.price)][:2]:
        template = "Which product is the cheapest in the {category} category? Answer with its name."
        answer, evidence = exact(best(in_cat[slug], lambda p: p.price).name), s.url(f"/c/{slug}", sort="price_asc")
        s.add("multi-step", "cheapest", template, {"category": cats[slug]}, 3, answer=answer, evidence=evidence)
    for slug, brand in s.rng.sample(
        [k for k, ps in made_by.items() if len(ps) > 1 and best(ps, lambda p: -p.price)], 2
    ):
        template = "Which {brand} product in the {category} category costs the most? Answer with its name."
        answer = exact(best(made_by[slug, brand], lambda p: -p.price).name)
        v, evidence = {"brand": brand, "category": cats[slug]}, s.url(f"/c/{slug}", brand=brand, sort="price_desc")
        s.add("multi-step", "brand_priciest", template, v, 4, answer=answer, evidence=evidence)
    term = terms.take()
    template = 'Search the shop for "{term}" and tell me how many products it finds.'
    answer, evidence = include(str(len(hits(term)))), s.url("/search", q=term)
    s.add("multi-step", "search_count", template, {"term": term}, 2, answer=answer, evidence=evidence)
    term = terms.take(lambda t: clear(hits(t)[0]))
    template = 'Search the shop for "{term}" and open the first product in the results.'
    s.add("multi-step", "search_open", template, {"term": term}, 3, url=products.page(hits(term)[0]))
    one, two = products.pool.some(2)
    v, checks = cart([(one, 1), (two, 1)], first=one.name, second=two.name)
    template = "Put one {first} and one {second} in your cart."
    s.add("multi-step", "two_to_cart", template, v, steps(one) + steps(two) + 2, checks=checks)
    for slug in [c for c in s.rng.sample(sorted(cats), len(cats)) if best(in_cat[c], lambda p: -p.rating)][:2]:
        top = best(in_cat[slug], lambda p: -p.rating)
        v, checks = cart([(top, 1)], category=cats[slug], product=top.name)
        template = "Find the best-rated product in the {category} category and add one to your cart."
        s.add("multi-step", "best_rated_to_cart", template, v, 5, checks=checks)
    slug = s.rng.choice(sorted(cats))
    template = (
        "Sort the {category} category by price from low to high, go to its second page and tell me the name of the"
        " first product there."
    )
    answer = exact(sorted(in_cat[slug], key=lambda p: (p.price, p.id))[sh.PER_PAGE].name)
    evidence = s.url(f"/c/{slug}", sort="price_asc", page=2)
    s.add("multi-step", "page2_first", template, {"category": cats[slug]}, 4, answer=answer, evidence=evidence)
    return s.finish()


# ---- forum ---------------------------------------------------------------------------------------------------------
def _forum(seed: int) -> list[dict]:
    s, data = _Suite("forum", seed), build_forum(seed)
    boards, posts = {b["slug"]: b["name"] for b in data.boards}, data.posts
    counts = {name: sum(p.author == name for plist in posts.values() for p in plist) for name in data.users}
    texts = {
        t.id: (t.title + " " + " ".join(" ".join(p.paragraphs) for p in posts[t.id])).lower()
        for t in data.threads.values()
    }

    def listed(slug: str, sort: str = "latest") -> list:  # a board's threads in the order the board lists them
        threads = [t for t in data.threads.values() if t.board == slug]
        if sort == "top":
            threads.sort(key=lambda t: (-t.score, t.id))
        else:
            threads.sort(key=lambda t: (posts[t.id][-1].when, t.id), reverse=True)
        return sorted(threads, key=lambda t: not t.pinned)

    def steps(t) -> int:  # the board link, its page if not the first, the thread
        return 2 + min(1, listed(t.board).index(t) // fo.PER_PAGE)

    def last_thread(name: str):  # the thread of the member's most recent post, as their profile lists it
        mine = [(p.when, p.id, t) for t in data.threads.values() for p in posts[t.id] if p.author == name]
        return max(mine, key=lambda post: post[:2])[2]

    def month(moves: int) -> tuple[int, int, str, str]:  # `moves` months after the calendar's first: y, m, name, value
        year, index = divmod(fo.START_MONTH[0] * 12 + fo.START_MONTH[1] - 1 + moves, 12)
        return year, index + 1, f"{fo.MONTH_NAMES[index]} {year}", f"{year:04d}-{index + 1:02d}"

    def reply_checks(t, text: str) -> list[tuple]:
        return [(at(t), LAST_POST, include(f"{DEMO_USER} wrote:", text))]

    at = lambda t: s.url(f"/t/{t.id}")  # noqa: E731
    clear = lambda t: lone(t.id, data.threads)  # noqa: E731 - a thread page that url_match can tell apart
    threads = _Kind(
        s.pool(t for t in data.threads.values() if not t.pinned), lambda t: {"title": t.title, "tid": t.id}, steps, at
    )
    members = _Kind(s.pool(USER_NAMES), lambda n: {"member": n}, lambda _: 2, lambda n: s.url(f"/u/{n}"))
    pinned = s.pool(
        t for t in data.threads.values() if t.pinned and [p.author for p in posts[t.id]].count(DEMO_USER) == 1
    )  # a pinned thread where guest_demo wrote only the reply, not the first post
    slugs = s.pool(boards)
    by_board = _Kind(slugs, lambda b: {"board": boards[b]}, lambda _: 1, lambda b: s.url(f"/f/{b}"))
    terms = s.pool(
        t
        for t in ("sourdough", "compost", "grout", "podcast", "bookshelf", "pickles", "library")
        if any(t in x for x in texts.values())
    )

    s.about("navigation", by_board, _Ask("board", "Open the {board} board.", count=3))
    s.fixed("navigation", "members", "Open the list of forum members.", 1, "/members")
    s.fixed("navigation", "events", "Open the events calendar.", 1, "/events")
    s.about("navigation", members, _Ask("profile", "Open the profile of the member {member}.", count=2))
    s.about("navigation", threads, _Ask("thread", 'Open the thread "{title}".', count=2, only=clear))
    s.fixed("navigation", "settings", "Open your forum settings.", 2, "/settings")

    for term in terms.some(3):
        s.add(
            "search", "search", 'Search the forum for "{term}".', {"term": term}, 2, url=s.cased("/search", "q", term)
        )
    top = by_board._replace(steps=lambda _: 2, page=lambda b: s.url(f"/f/{b}", sort="top"))
    s.about("search", top, _Ask("top", "Show the threads of the {board} board sorted by top score.", count=2))
    second = by_board._replace(pool=s.pool(boards), steps=lambda _: 2, page=lambda b: s.url(f"/f/{b}", page=2))
    s.about("search", second, _Ask("page2", "Show the second page of the {board} board.", count=2))
    for moves in (1, -1, 2):
        _, _, name, value = month(moves)
        v, url = {"month": name}, s.url("/events", month=value)
        s.add("search", "month", "Show the events calendar for {month}.", v, 1 + abs(moves), url=url)
    slug = s.rng.choice(sorted(boards))
    template = "Show the second page of the {board} board, sorted by top score."
    s.add("search", "top_page2", template, {"board": boards[slug]}, 3, url=s.url(f"/f/{slug}", sort="top", page=2))

    replies = ["Thanks for the tips, I will try this weekend.", "Great idea, I did the same last year."]
    replies += ["Could you share a photo of the result?"]
    for t, text in zip(threads.pool.some(3), replies, strict=True):
        v = {**threads.values(t), "text": text}
        s.add(
            "form", "reply", 'Reply to the thread "{title}" with: {text}', v, steps(t) + 3, checks=reply_checks(t, text)
        )
    theme = ("__FORUM__/settings", "document.querySelector('select[name=theme]').value", exact("dark"))
    s.add("form", "theme", "Switch the forum to the {theme} theme.", {"theme": "dark"}, 4, checks=[theme])
    signature = "Happy to help - Sam"
    sign = ("__FORUM__/settings", "document.querySelector('textarea[name=signature]').value", exact(signature))
    s.add("form", "signature", 'Set your forum signature to "{signature}".', {"signature": signature}, 4, checks=[sign])
    t = threads.pool.take(clear)
    v, flash = {**threads.values(t), "reason": "spam"}, [("last", "", include("Thanks for the report"))]
    template = 'Report the first post of the thread "{title}" as spam.'
    s.add("form", "report", template, v, steps(t) + 3, url=at(t), checks=flash)
    who = ("__FORUM__/", "document.querySelector('.user-btn').innerText", include("trail_tester"))
    template = "Log out of the forum, then log in again as {username} (the password is {password})."
    s.add("form", "login_as", template, {"username": "trail_tester", "password": "demo"}, 6, checks=[who])
    t = pinned.take()
    mine = [(at(t), DEMO_POSTS, exact("0"))]
    s.add(
        "form", "delete", 'Delete your own post in the thread "{title}".', threads.values(t), steps(t) + 1, checks=mine
    )

    s.about(
        "info",
        threads,
        _Ask("starter", 'Who started the thread "{title}"?', lambda t: exact(t.author), 2),
        _Ask("views", 'How many views does the thread "{title}" have?', lambda t: include(str(t.views))),
    )
    s.about(
        "info",
        members,
        _Ask("location", "In which city does the member {member} live?", lambda n: exact(data.users[n]["location"]), 2),
        _Ask("joined", "When did {member} join the forum?", lambda n: include(data.users[n]["joined"])),
        _Ask(
            "bio",
            "What does {member} say about themselves in their profile's About section?",
            lambda n: fuzzy(data.users[n]["bio"]),
            more=1,
        ),
    )
    t = threads.pool.take()
    row = listed(t.board).index(t) // fo.PER_PAGE + 1  # the page of the board that lists it, with its replies
    answer, evidence = include(str(len(posts[t.id]) - 1)), s.url(f"/f/{t.board}", page=row if row > 1 else None)
    template = 'How many replies does the thread "{title}" have?'
    s.add("info", "replies", template, threads.values(t), steps(t) - 1, answer=answer, evidence=evidence)
    name = members.pool.take()
    template, answer = "How many posts has {member} written?", include(str(counts[name]))
    s.add("info", "posts", template, {"member": name}, 1, answer=answer, evidence=s.url("/members"))
    first, second = s.rng.sample(month_events(seed, *fo.START_MONTH), 2)  # one event a day at the most
    v = {"day": first["day"], "month": month(0)[2]}
    template = "Which event takes place on {day} {month}?"
    s.add("info", "event", template, v, 1, answer=exact(first["title"]), evidence=s.url("/events"))
    v = {"event": second["title"], "day": second["day"], "month": month(0)[2]}
    template = "Where is the {event} on {day} {month} held?"
    s.add("info", "place", template, v, 2, answer=exact(second["place"]), evidence=s.url("/events"))
    rule = fuzzy("Hide plot twists behind a Show spoiler button.")
    s.fixed("info", "spoiler_rule", "What does the forum's rule about spoilers ask you to do?", 1, "/", rule)

    ranked = [b for b in s.rng.sample(sorted(boards), len(boards)) if best(listed(b, "top")[1:], lambda t: -t.score)]
    for slug in ranked[:2]:
        template = (
            "Which thread of the {board} board has the highest score, not counting the pinned thread? Give its title."
        )
        answer, evidence = exact(listed(slug, "top")[1].title), s.url(f"/f/{slug}", sort="top")
        s.add("multi-step", "top_thread", template, {"board": boards[slug]}, 2, answer=answer, evidence=evidence)
    term = terms.take()
    template = 'Search the forum for "{term}" and tell me how many threads it finds.'
    answer = include(str(sum(term in x for x in texts.values())))
    s.add("multi-step", "search_count", template, {"term": term}, 2, answer=answer, evidence=s.url("/search", q=term))
    t = threads.pool.take()
    template, answer = 'In which board is the thread "{title}"?', exact(boards[t.board])
    s.add("multi-step", "thread_board", template, threads.values(t), 2, answer=answer, evidence=at(t))
    t = threads.pool.take()
    template = 'In which city does the member who started the thread "{title}" live?'
    answer, evidence = exact(data.users[t.author]["location"]), s.url(f"/u/{t.author}")
    s.add("multi-step", "starter_city", template, threads.values(t), steps(t) + 1, answer=answer, evidence=evidence)
    year, number, name, value = month(1)
    event = s.rng.choice(month_events(seed, year, number))
    v = {"event": event["title"], "day": event["day"], "month": name}
    evidence = s.url("/events", month=value)
    s.add(
        "multi-step",
        "event_host",
        "Who hosts the {event} on {day} {month}?",
        v,
        3,
        answer=exact(event["host"]),
        evidence=evidence,
    )
    t = pinned.take()
    text = "Welcome, everyone! Glad to be here."
    v = {**threads.values(t), "board": boards[t.board], "text": text}
    template = "Open the pinned thread of the {board} board and reply to it with: {text}"
    s.add("multi-step", "reply_pinned", template, v, 5, checks=reply_checks(t, text))
    slug = s.rng.choice([b for b in sorted(boards) if clear(listed(b, "top")[fo.PER_PAGE])])
    template = "Sort the {board} board by top score, go to its second page and open the first thread listed there."
    s.add(
        "multi-step", "top_page2_open", template, {"board": boards[slug]}, 4, url=at(listed(slug, "top")[fo.PER_PAGE])
    )
    name = members.pool.take(lambda n: clear(last_thread(n)))
    template = "Open {member}'s profile, then open the thread of their most recent post."
    s.add("multi-step", "recent_post", template, {"member": name}, 3, url=at(last_thread(name)))
    return s.finish()


# ---- classifieds ---------------------------------------------------------------------------------------------------
def _classifieds(seed: int) -> list[dict]:
    s, ads = _Suite("classifieds", seed), build_classifieds(seed)
    cats, regions = cl.CATEGORIES, cl.REGION_NAMES
    titles = [x.title for x in ads.values()]

    def found(cat: str = "", region: str = "", cap: int | None = None) -> list:  # the site's filters
        return [
            x
            for x in ads.values()
            if cat in ("", x.category) and region in ("", x.region) and (cap is None or x.price <= cap * 100)
        ]

    def steps(x) -> int:  # the category link, its page if not the first, the ad
        newest = sorted(found(x.category), key=lambda y: (y.posted, y.id), reverse=True)
        return 2 + min(1, newest.index(x) // cl.PER_PAGE)

    def cheapest(items: list) -> Any:
        return best(items, lambda x: x.price)

    at = lambda x: s.url(f"/l/{x.id}")  # noqa: E731
    clear = lambda x: lone(x.id, ads)  # noqa: E731 - an ad page that url_match can tell apart
    listings = _Kind(
        s.pool(x for x in ads.values() if titles.count(x.title) == 1),
        lambda x: {"title": x.title, "lid": x.id},
        steps,
        at,
    )
    slugs = s.pool(cats)
    by_cat = _Kind(slugs, lambda c: {"category": cats[c]}, lambda _: 1, lambda c: s.url("/search", cat=c))
    by_region = _Kind(
        s.pool(regions), lambda r: {"region": regions[r]}, lambda _: 1, lambda r: s.url("/search", region=r)
    )
    pairs = s.pool((c, r) for c in sorted(cats) for r in sorted(regions) if len(found(c, r)) > 1)
    capped = [(c, cap) for c in sorted(cats) for cap in cl.PRICE_CAPS if 0 < len(found(c, cap=cap)) < len(found(c))]

    s.about("navigation", by_cat, _Ask("category", "Show the ads in the {category} category.", count=2))
    s.about("navigation", listings, _Ask("listing", 'Open the ad "{title}".', count=3, only=clear))
    s.fixed("navigation", "saved", "Open your saved ads.", 1, "/saved")
    s.fixed("navigation", "post", "Open the form for posting a new ad.", 1, "/post")
    s.about("navigation", by_region, _Ask("region", "Show all ads from {region}.", count=2))
    s.fixed("navigation", "page2", "Open the second page of all ads.", 2, "/search?page=2")

    for slug, region in pairs.some(3):
        v, url = {"category": cats[slug], "region": regions[region]}, s.url("/search", cat=slug, region=region)
        s.add("search", "cat_region", "Show the {category} ads in {region}.", v, 3, url=url)
    for slug, cap in s.rng.sample(capped, 2):
        v, url = {"category": cats[slug], "cap": cap}, s.url("/search", cat=slug, max_price=cap, sort="price_asc")
        s.add("search", "cap_sorted", "Show the {category} ads for at most ${cap}, cheapest first.", v, 4, url=url)
    s.fixed("search", "by_price", "Show all ads sorted by price, highest first.", 2, "/search?sort=price_desc")
    region_caps = [(r, cap) for r in regions for cap in cl.PRICE_CAPS if 0 < len(found("", r, cap)) < len(found("", r))]
    for region, cap in s.rng.sample(region_caps, 2):
        v, url = {"region": regions[region], "cap": cap}, s.url("/search", region=region, max_price=cap)
        s.add("search", "region_cap", "Show the ads in {region} that cost at most ${cap}.", v, 3, url=url)
    second = by_cat._replace(steps=lambda _: 2, page=lambda c: s.url("/search", cat=c, page=2))
    s.about("search", second, _Ask("category_page2", "Open the second page of the {category} ads.", count=2))

    senders = [("Sam Rivers", "sam@example.com", "Is this still available?")]
    senders += [("Ana Lopes", "ana@example.org", "Could I pick it up on Saturday?")]
    senders += [("Kim Park", "kim@example.net", "Would you take a lower price?")]
    for x, (name, email, message) in zip(listings.pool.some(3), senders, strict=True):
        v = {**listings.values(x), "message": message, "name": name, "email": email}
        thanks = include(f"Thanks, {name}!", x.title, f"was sent to {x.seller}")
        template = 'Send the seller of "{title}" the message "{message}", with your name {name} and the email {email}.'
        s.add("form", "contact", template, v, steps(x) + 4, checks=[("last", "", thanks)])
    for x in listings.pool.some(2):
        saved = [("__CLASSIFIEDS__/saved", MAIN_TEXT, include(x.title))]
        s.add(
            "form", "save", 'Save the ad "{title}" to your saved ads.', listings.values(x), steps(x) + 1, checks=saved
        )
    new_ads = [("Blue folding bike", "bikes", "harbourside", "85", "Folds small, new tyres, kept indoors all year.")]
    new_ads += [
        ("Pine coffee table", "furniture", "eastgate", "40", "Solid pine, a few scratches on the top, pick-up only.")
    ]
    for title, slug, region, price, text in new_ads:
        assert title not in titles
        v = {"title": title, "category": cats[slug], "region": regions[region], "price": price, "description": text}
        v |= {"cat": slug, "region_slug": region}
        shown = [(s.url("/search", cat=slug, region=region), MAIN_TEXT, include(title, money(int(price) * 100)))]
        template = (
            'Post an ad titled "{title}" in {category}, {region}, for ${price}, with the description: {description}'
        )
        s.add("form", "post_ad", template, v, 8, checks=shown)
    x = listings.pool.take(clear)
    v = {**listings.values(x), "reason": "scam"}
    flash = [("last", "", include("Thanks, our team will review this ad."))]
    s.add("form", "report", 'Report the ad "{title}" as a scam.', v, steps(x) + 3, url=at(x), checks=flash)

    s.about(
        "info",
        listings,
        _Ask("price", 'How much does "{title}" cost?', lambda x: include(price_text(x.price)), 3),
        _Ask("seller", 'Who is selling "{title}"?', lambda x: exact(x.seller), 2),
        _Ask("condition", 'What condition is "{title}" in?', lambda x: exact(x.condition)),
        _Ask("area", 'In which area is "{title}" offered?', lambda x: exact(regions[x.region])),
        _Ask("ad_id", 'What is the ad ID of "{title}"?', lambda x: exact(f"CM-{x.id:05d}")),
        _Ask("phone", 'What is the phone number of the seller of "{title}"?', lambda x: include(x.phone), more=1),
        _Ask("posted", 'On which date was "{title}" posted?', lambda x: include(nice_date(x.posted))),
        _Ask(
            "who_where",
            'Who sells "{title}", and in which area?',
            lambda x: fuzzy(f"{x.seller} sells it in {regions[x.region]}"),
            2,
            raw=lambda x: f"{x.seller}, {regions[x.region]}",
        ),
    )

    for slug, region in pairs.some(2, lambda cr: cheapest(found(*cr))):
        v, answer = {"category": cats[slug], "region": regions[region]}, exact(cheapest(found(slug, region)).title)
        evidence = s.url("/search", cat=slug, region=region, sort="price_asc")
        s.add(
            "multi-step",
            "cheapest",
            "What is the cheapest {category} ad in {region}? Give its title.",
            v,
            4,
            answer=answer,
            evidence=evidence,
        )
    slug = slugs.take(lambda c: best(found(c), lambda x: -x.price))
    answer = include(price_text(best(found(slug), lambda x: -x.price).price))
    evidence = s.url("/search", cat=slug, sort="price_desc")
    template = "How much does the most expensive {category} ad cost?"
    s.add("multi-step", "priciest", template, {"category": cats[slug]}, 3, answer=answer, evidence=evidence)
    slug, cap = s.rng.choice([(c, cap) for c, cap in capped if len(found(c, cap=cap)) > 1])
    counted = [("count", "How many {category} ads are there in {region}?", (c, r, None)) for c, r in pairs.some(2)]
    counted += [("cap_count", "How many {category} ads cost at most ${cap}?", (slug, "", cap))]
    for template_id, template, (cat, region, cap) in counted:
        v = {"category": cats[cat], **({"region": regions[region]} if region else {}), **({"cap": cap} if cap else {})}
        answer, evidence = (
            include(str(len(found(cat, region, cap)))),
            s.url("/search", cat=cat, region=region, max_price=cap),
        )
        s.add("multi-step", template_id, template, v, 3, answer=answer, evidence=evidence)
    slug = s.rng.choice([c for c in sorted(cats) if cheapest(found(c))])
    low = cheapest(found(slug))
    saved = [("__CLASSIFIEDS__/saved", MAIN_TEXT, include(low.title))]
    v = {**listings.values(low), "category": cats[slug]}
    s.add(
        "multi-step",
        "save_cheapest",
        "Find the cheapest {category} ad and save it to your saved ads.",
        v,
        5,
        checks=saved,
    )
    region = s.rng.choice([r for r in regions if best(found("", r), lambda x: -int(x.posted.replace("-", "")))])
    latest = max(found("", region), key=lambda x: x.posted)
    template, answer = "Who is selling the newest ad in {region}?", exact(latest.seller)
    s.add("multi-step", "newest_seller", template, {"region": regions[region]}, 2, answer=answer, evidence=at(latest))
    region = s.rng.choice([r for r in sorted(regions) if cheapest(found("", r)) and clear(cheapest(found("", r)))])
    url = at(cheapest(found("", region)))
    s.add("multi-step", "open_cheapest", "Open the cheapest ad in {region}.", {"region": regions[region]}, 4, url=url)
    return s.finish()


# ---- files ---------------------------------------------------------------------------------------------------------
BUILDERS: dict[str, Callable[[int], list[dict]]] = {"shop": _shop, "forum": _forum, "classifieds": _classifieds}


def build_suite(site: str, seed: int = SEED) -> list[dict]:
    """The tasks of `site`'s bundled suite as JSON objects, computed from the site's content for `seed`."""
    return BUILDERS[site](seed)


def render_suite(tasks: list[dict]) -> str:
    """A suite's file text: indented JSON, one trailing newline."""
    return json.dumps(tasks, indent=2, ensure_ascii=False) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m evals.suites [--check] [--out DIR]`: write every site's suite (or only compare, exit 1 if stale)."""
    parser = argparse.ArgumentParser(prog="python -m evals.suites", description=main.__doc__)
    parser.add_argument("--check", action="store_true", help="compare with the files instead of writing them")
    parser.add_argument("--out", type=Path, default=FOLDER, help=f"the folder (default: {FOLDER})")
    args = parser.parse_args(argv)
    stale = []
    for site in SITE_NAMES:
        path, text = args.out / f"{site}.json", render_suite(build_suite(site))
        if args.check:
            stale += [] if path.is_file() and path.read_text(encoding="utf-8") == text else [str(path)]
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"{path}: {len(json.loads(text))} tasks")
    if stale:
        print(f"stale: {', '.join(stale)}: run python -m evals.suites", file=sys.stderr)
    return 1 if stale else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Corner Market: classifieds with dropdown filters, listing pages, contact form, ad posting and a prize trap."""

from __future__ import annotations

import re

from sites import art
from sites.classifieds_content import CLASSIFIED_CATEGORIES, CONDITIONS, REGIONS, Listing, build_classifieds
from sites.content import money, nice_date
from sites.server import Request, Response, Site, int_arg, paginate, redirect, safe_next

PER_PAGE = 12
PRICE_CAPS = [25, 50, 100, 250, 500, 1000]
SORTS = {"newest": "Newest first", "price_asc": "Price: low to high", "price_desc": "Price: high to low"}
REPORT_REASONS = {
    "scam": "Looks like a scam",
    "sold": "Item already sold",
    "wrong-category": "Wrong category",
    "offensive": "Offensive content",
}
_EMAIL_RE = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s.]+$")
_PRICE_RE = re.compile(r"^\d{1,7}(\.\d{1,2})?$")
CATEGORIES = {slug: name for slug, name, *_ in CLASSIFIED_CATEGORIES}
GLYPHS = {slug: glyph for slug, _, glyph, *_ in CLASSIFIED_CATEGORIES}
REGION_NAMES = dict(REGIONS)


class ClassifiedsSite(Site):
    """Classifieds: saved ads per visitor; published ads, messages and reports are shared."""

    name = "classifieds"
    title = "Corner Market"

    def __init__(self, seed: int = 0, slow_seconds: float = 30.0):
        self.seeded: dict[int, Listing] = build_classifieds(seed)
        super().__init__(seed, slow_seconds)

    def setup_routes(self) -> None:
        """Register the classifieds routes."""
        r = self.route
        r("/", self.home)
        r("/search", self.search)
        r(r"/l/(?P<lid>\d{1,9})", self.listing)
        r(r"/l/(?P<lid>\d{1,9})/contact", self.contact, ("POST",))
        r(r"/l/(?P<lid>\d{1,9})/report", self.report, ("POST",))
        r(r"/l/(?P<lid>\d{1,9})/save", self.save, ("POST",))
        r("/saved", self.saved)
        r("/share", self.share)
        r("/post", self.post, ("GET", "POST"))
        r("/post/publish", self.publish, ("POST",))
        r("/spin-to-win", self.spin)

    def reset_state(self) -> None:
        """Forget published ads, messages and reports."""
        self.added: dict[int, Listing] = {}
        self.messages: list[dict] = []
        self.reports: list[tuple[int, str]] = []

    def new_session(self) -> dict:
        """A fresh visitor with no saved ads."""
        return {"saved": []}

    def context(self, req: Request) -> dict:
        """Shared template data."""
        return {
            "categories": CATEGORIES,
            "regions": REGION_NAMES,
            "caps": PRICE_CAPS,
            "sorts": SORTS,
            "money": money,
            "nice_date": nice_date,
            "saved_count": len((req.session or {}).get("saved", [])),
        }

    def all_listings(self) -> list[Listing]:
        """Seeded plus published listings."""
        with self.lock:
            return list(self.seeded.values()) + list(self.added.values())

    def _listing(self, lid: str) -> Listing | None:
        n = int(lid) if str(lid).isdigit() else -1
        with self.lock:
            return self.seeded.get(n) or self.added.get(n)

    # -- browsing ----------------------------------------------------------------------------
    def home(self, req: Request) -> Response:
        """Home: filter form of dropdowns, category tiles, latest listings."""
        items = self.all_listings()
        latest = sorted(items, key=lambda x: (x.posted, x.id), reverse=True)[:12]
        counts = {slug: sum(1 for x in items if x.category == slug) for slug in CATEGORIES}
        pics = {slug: art.picture(f"cat-{slug}", g, art.stable_hue(slug), 120, 90) for slug, g in GLYPHS.items()}
        return self.render(
            req, "classifieds/home.html", latest=latest, counts=counts, f=_blank_filters(), cat_pics=pics
        )

    def search(self, req: Request) -> Response:
        """Filtered, sorted, paginated results."""
        f, errors = _filters(req)
        items = [
            x
            for x in self.all_listings()
            if (not f["cat"] or x.category == f["cat"])
            and (not f["region"] or x.region == f["region"])
            and (f["cap"] is None or x.price <= f["cap"] * 100)
        ]
        if f["sort"] == "price_asc":
            items.sort(key=lambda x: (x.price, x.id))
        elif f["sort"] == "price_desc":
            items.sort(key=lambda x: (-x.price, x.id))
        else:
            items.sort(key=lambda x: (x.posted, x.id), reverse=True)
        page_items, page, pages = paginate(items, int_arg(req.arg("page"), 1), PER_PAGE)
        return self.render(
            req,
            "classifieds/search.html",
            f=f,
            errors=errors,
            listings=page_items,
            total=len(items),
            page=page,
            pages=pages,
        )

    def listing(self, req: Request, errors: dict | None = None, values: dict | None = None) -> Response:
        """Listing detail: gallery, phone reveal, contact form, report modal, share popup, map link."""
        x = self._listing(req.params["lid"])
        if x is None:
            return self.not_found(req, "This ad was removed or never existed.")
        similar = [y for y in self.all_listings() if y.category == x.category and y.id != x.id][:4]
        return self.render(
            req,
            "classifieds/listing.html",
            x=x,
            similar=similar,
            errors=errors or {},
            values=values or {"name": "", "email": "", "message": ""},
            reasons=REPORT_REASONS,
            saved=x.id in req.session["saved"],
            cat_name=CATEGORIES[x.category],
            region_name=REGION_NAMES.get(x.region, x.region),
        )

    def saved(self, req: Request) -> Response:
        """The visitor's saved ads."""
        items = [x for x in (self._listing(str(i)) for i in req.session["saved"]) if x]
        return self.render(req, "classifieds/saved.html", listings=items)

    def share(self, req: Request) -> Response:
        """Share popup for a listing."""
        x = self._listing(req.arg("l"))
        if x is None:
            return self.not_found(req, "Nothing to share.")
        return self.render(
            req,
            "share.html",
            name=x.title,
            heading="Share this ad",
            picture=x.photo(uid="s"),
            price="Free" if x.price == 0 else money(x.price),
            link=f"/l/{x.id}",
        )

    # -- actions -----------------------------------------------------------------------------
    def contact(self, req: Request) -> Response:
        """POST name, email, message to the seller; errors re-render the listing."""
        x = self._listing(req.params["lid"])
        if x is None:
            return self.not_found(req, "This ad was removed or never existed.")
        values = {k: req.value(k).strip() for k in ("name", "email", "message")}
        errors = {}
        if not values["name"] or len(values["name"]) > 60:
            errors["name"] = "Please enter your name."
        if not _EMAIL_RE.match(values["email"]):
            errors["email"] = "Please enter a valid email address, like you@example.com."
        if len(values["message"]) < 5:
            errors["message"] = "Your message is too short."
        elif len(values["message"]) > 2000:
            errors["message"] = "Messages are limited to 2000 characters."
        if errors:
            return self.listing(req, errors, values)
        with self.lock:
            self.messages.append({"listing": x.id, **values})
        return self.render(req, "classifieds/thanks.html", x=x, name=values["name"])

    def report(self, req: Request) -> Response:
        """POST reason: report a listing."""
        x = self._listing(req.params["lid"])
        if x is None:
            return self.not_found(req, "This ad was removed or never existed.")
        reason = req.value("reason")
        if reason in REPORT_REASONS:
            with self.lock:
                self.reports.append((x.id, reason))
            req.session["flash"] = "Thanks, our team will review this ad."
        else:
            req.session["flash"] = "Please choose a reason to report this ad."
        return redirect(f"/l/{x.id}")

    def save(self, req: Request) -> Response:
        """POST: toggle the listing in the visitor's saved ads."""
        x = self._listing(req.params["lid"])
        if x is None:
            return self.not_found(req, "This ad was removed or never existed.")
        with self.lock:
            saved = req.session["saved"]
            if x.id in saved:
                saved.remove(x.id)
                req.session["flash"] = "Removed from your saved ads."
            else:
                saved.append(x.id)
                req.session["flash"] = "Saved! Find it under Saved."
        return redirect(safe_next(req.value("next"), f"/l/{x.id}"))

    def post(self, req: Request) -> Response:
        """GET: the "Post an ad" form. POST: validate, then show the preview (or the form with errors)."""
        values = {k: req.value(k).strip() for k in ("title", "category", "region", "price", "description")}
        if req.method == "GET" or req.value("edit"):
            return self.render(req, "classifieds/post.html", values=values, errors={})
        errors = _validate_ad(values)
        if errors:
            return self.render(req, "classifieds/post.html", values=values, errors=errors)
        return self.render(req, "classifieds/preview.html", values=values, preview=_ad_from(values, 0))

    def publish(self, req: Request) -> Response:
        """POST the previewed ad: it becomes a real listing (until the next reset)."""
        values = {k: req.value(k).strip() for k in ("title", "category", "region", "price", "description")}
        errors = _validate_ad(values)
        if errors:
            return self.render(req, "classifieds/post.html", values=values, errors=errors)
        with self.lock:
            lid = len(self.seeded) + len(self.added) + 1
            self.added[lid] = _ad_from(values, lid)
        req.session["flash"] = "Your ad is live!"
        return redirect(f"/l/{lid}")

    def spin(self, req: Request) -> Response:
        """The prize trap: an endless alert() loop on load."""
        return self.render(req, "classifieds/spin.html")


def _blank_filters() -> dict:
    return {"cat": "", "region": "", "cap": None, "sort": "newest"}


def _filters(req: Request) -> tuple[dict, list[str]]:
    f, errors = _blank_filters(), []
    cat, region, cap, sort = req.arg("cat"), req.arg("region"), req.arg("max_price"), req.arg("sort")
    if cat and cat not in CATEGORIES:
        errors.append("Please choose a category from the list.")
    else:
        f["cat"] = cat
    if region and region not in REGION_NAMES:
        errors.append("Please choose a region from the list.")
    else:
        f["region"] = region
    if cap:
        if cap.isdigit() and 0 < int(cap) < 10**7:
            f["cap"] = int(cap)
        else:
            errors.append("Max price must be a whole number.")
    if sort and sort not in SORTS:
        errors.append("Unknown sort order; showing newest first.")
    elif sort:
        f["sort"] = sort
    return f, errors


def _validate_ad(v: dict) -> dict:
    errors = {}
    v["region"] = v["region"] or REGIONS[0][0]  # optional: the form preselects the first region
    if not 5 <= len(v["title"]) <= 80:
        errors["title"] = "The title needs 5 to 80 characters."
    if v["category"] not in CATEGORIES:
        errors["category"] = "Please choose a category."
    if v["region"] not in REGION_NAMES:
        errors["region"] = "Please choose a region."
    if not _PRICE_RE.match(v["price"]):
        errors["price"] = "Enter a price in dollars, like 40 or 12.50 (0 for free)."
    if not 20 <= len(v["description"]) <= 2000:
        errors["description"] = "The description needs 20 to 2000 characters."
    return errors


def _ad_from(v: dict, lid: int) -> Listing:
    return Listing(
        id=lid,
        title=v["title"],
        category=v["category"],
        glyph=GLYPHS[v["category"]],
        region=v["region"],
        price=round(float(v["price"]) * 100),
        condition=CONDITIONS[1],
        seller="You",
        phone="+1 555 0100 0000",
        posted="2026-12-01",
        description=[v["description"]],
        hue=(len(v["title"]) * 47) % 360,
        photos=1,
    )

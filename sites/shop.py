"""Northwind Outfitters: the demo shop (catalogue, filters, product pages, cart, login, traps)."""

from __future__ import annotations

from sites import art
from sites.content import SHOP_BRANDS, ShopData, build_shop, money
from sites.server import Request, Response, Site, int_arg, paginate, redirect, safe_next

PER_PAGE = 8
MAX_QTY = 99
SORTS = {
    "featured": "Featured",
    "price_asc": "Price: low to high",
    "price_desc": "Price: high to low",
    "rating": "Top rated",
}
PRICE_CAPS = [50, 100, 200, 400]
PROMO_SLUG = "jackets"
INFO_PAGES = {"about": "About us", "shipping": "Shipping", "returns": "Returns", "contact": "Contact"}


class ShopSite(Site):
    """The shop: per-visitor carts and logins, everything else seeded and read-only."""

    name = "shop"
    title = "Northwind Outfitters"

    def __init__(self, seed: int = 0, slow_seconds: float = 30.0):
        self.data: ShopData = build_shop(seed)
        self.cats = {c["slug"]: c for c in self.data.categories}
        super().__init__(seed, slow_seconds)

    def setup_routes(self) -> None:
        """Register the shop's routes."""
        r = self.route
        r("/", self.home)
        r(r"/c/(?P<slug>[a-z0-9-]+)", self.category)
        r(r"/p/(?P<pid>\d{1,9})", self.product)
        r("/search", self.search)
        r("/cart", self.cart)
        r("/cart/add", self.cart_add, ("POST",))
        r("/cart/update", self.cart_update, ("POST",))
        r("/cart/remove", self.cart_remove, ("POST",))
        r("/checkout", self.checkout)
        r("/checkout/pay", self.pay, ("POST",))
        r("/login", self.login, ("GET", "POST"))
        r("/logout", self.logout, ("GET", "POST"))
        r("/share", self.share)
        r("/widget/chat", self.chat)
        r(r"/info/(?P<slug>[a-z]+)", self.info)
        r("/deals/flash", self.flash_deals)
        r("/reviews/all", self.all_reviews)
        r("/account/orders", self.orders_loop)
        r("/catalogue.pdf", self.catalogue)

    def new_session(self) -> dict:
        """A fresh visitor: empty cart, logged out."""
        return {"cart": {}, "user": None, "orders": 0}

    def context(self, req: Request) -> dict:
        """Header data: categories, cart count, user."""
        cart = req.session.get("cart", {}) if req.session else {}
        return {
            "cats": self.data.categories,
            "cart_count": sum(cart.values()),
            "money": money,
            "stars": art.stars,
            "logo": art.logo("N", 168),
            "user": req.session.get("user") if req.session else None,
            "info_pages": INFO_PAGES,
        }

    def _product(self, pid: str):
        return self.data.products.get(int(pid)) if pid.isdigit() else None

    # -- catalogue ---------------------------------------------------------------------------
    def home(self, req: Request) -> Response:
        """Home page: hero, promo banner, chat widget, featured grid, categories."""
        featured = [self.data.products[i] for i in self.data.featured]
        top = sorted(self.data.products.values(), key=lambda p: (-p.rating, p.id))[:3]
        return self.render(req, "shop/home.html", featured=featured, top=top, promo_slug=PROMO_SLUG)

    def category(self, req: Request) -> Response:
        """Category listing with brand / price filters, sort and pagination."""
        cat = self.cats.get(req.params["slug"])
        if cat is None:
            return self.not_found(req, "That category doesn't exist.")
        items = [p for p in self.data.products.values() if p.category == cat["slug"]]
        brands = [b for b in SHOP_BRANDS if any(p.brand == b for p in items)]
        errors = []
        brand, sort, cap_text = req.arg("brand"), req.arg("sort", "featured") or "featured", req.arg("max_price")
        if brand and brand not in brands:
            errors.append(f"No products from “{brand}” in this category.")
            brand = ""
        if sort not in SORTS:
            errors.append("Unknown sort order; showing featured.")
            sort = "featured"
        cap = None
        if cap_text:
            if cap_text.isdigit() and int(cap_text) > 0:
                cap = int(cap_text)
            else:
                errors.append("Max price must be a whole number of dollars.")
        shown = [p for p in items if (not brand or p.brand == brand) and (cap is None or p.price <= cap * 100)]
        shown = _sorted(shown, sort)
        page_items, page, pages = paginate(shown, int_arg(req.arg("page"), 1), PER_PAGE)
        return self.render(
            req,
            "shop/category.html",
            cat=cat,
            products=page_items,
            total=len(shown),
            page=page,
            pages=pages,
            brands=brands,
            brand=brand,
            sort=sort,
            sorts=SORTS,
            cap=cap,
            caps=PRICE_CAPS,
            errors=errors,
            promo=req.arg("promo") == "1",
        )

    def product(self, req: Request) -> Response:
        """Product page with tabs, size-guide modal, FAQ accordion and the add-to-cart form."""
        p = self._product(req.params["pid"])
        if p is None:
            return self.not_found(req, "That product is no longer available.")
        return self._product_page(req, p)

    def _product_page(self, req: Request, p, error: str = "", qty: str = "1") -> Response:
        related = [q for q in self.data.products.values() if q.category == p.category and q.id != p.id][:4]
        return self.render(
            req, "shop/product.html", p=p, cat=self.cats[p.category], related=related, error=error, qty=qty
        )

    def search(self, req: Request) -> Response:
        """Full-text-ish search over name, brand and category."""
        q = req.arg("q").strip()
        words = [w for w in q.lower().split() if w]
        hits = []
        if words:
            for p in self.data.products.values():
                hay = f"{p.name} {p.brand} {self.cats[p.category]['name']}".lower()
                if all(w in hay for w in words):
                    hits.append(p)
        page_items, page, pages = paginate(hits, int_arg(req.arg("page"), 1), PER_PAGE)
        return self.render(req, "shop/search.html", q=q, products=page_items, total=len(hits), page=page, pages=pages)

    def info(self, req: Request) -> Response:
        """Static help pages."""
        slug = req.params["slug"]
        if slug not in INFO_PAGES:
            return self.not_found(req)
        return self.render(req, "shop/info.html", slug=slug, heading=INFO_PAGES[slug])

    # -- cart and checkout -------------------------------------------------------------------
    def cart(self, req: Request, error: str = "", status: int = 200) -> Response:
        """The visitor's cart."""
        lines = [(self.data.products[pid], qty) for pid, qty in req.session["cart"].items()]
        total = sum(p.price * q for p, q in lines)
        return self.render(req, "shop/cart.html", status, lines=lines, total=total, error=error)

    def cart_add(self, req: Request) -> Response:
        """POST pid + quantity: add to the cart, then go to /cart."""
        p = self._product(req.value("pid") or req.value("product_id"))
        if p is None:
            return self.not_found(req, "That product is no longer available.")
        qty = _qty(req.value("quantity", "1"))
        if qty is None or qty == 0:
            return self._product_page(
                req, p, f"Please enter a quantity between 1 and {MAX_QTY}.", req.value("quantity")
            )
        with self.lock:
            cart = req.session["cart"]
            cart[p.id] = min(MAX_QTY, cart.get(p.id, 0) + qty)
        return redirect("/cart")

    def cart_update(self, req: Request) -> Response:
        """POST pid + quantity: set a line's quantity (0 removes it)."""
        p = self._product(req.value("pid"))
        if p is None or p.id not in req.session["cart"]:
            return self.cart(req, "That item is not in your cart.")
        qty = _qty(req.value("quantity"))
        if qty is None:
            return self.cart(req, f"Quantity must be a whole number between 0 and {MAX_QTY}.")
        with self.lock:
            if qty == 0:
                req.session["cart"].pop(p.id, None)
            else:
                req.session["cart"][p.id] = qty
        return redirect("/cart")

    def cart_remove(self, req: Request) -> Response:
        """POST pid: drop a line."""
        p = self._product(req.value("pid"))
        with self.lock:
            if p is not None:
                req.session["cart"].pop(p.id, None)
        return redirect("/cart")

    def checkout(self, req: Request) -> Response:
        """Order summary with a "Pay now" button."""
        lines = [(self.data.products[pid], qty) for pid, qty in req.session["cart"].items()]
        total = sum(p.price * q for p, q in lines)
        return self.render(req, "shop/checkout.html", lines=lines, total=total)

    def pay(self, req: Request) -> Response:
        """POST: pretend to pay, empty the cart, thank the visitor."""
        with self.lock:
            items = sum(req.session["cart"].values())
            req.session["cart"] = {}
            req.session["orders"] += 1
            number = f"NW-{10000 + req.session['orders']}"
        delivery = req.value("delivery", "standard")
        if delivery not in ("standard", "express", "pickup"):
            delivery = "standard"
        return self.render(req, "shop/thanks.html", items=items, number=number, delivery=delivery)

    # -- account -----------------------------------------------------------------------------
    def login(self, req: Request) -> Response:
        """GET shows the form; POST demo/demo logs in, anything else re-renders with an error."""
        nxt = safe_next(req.value("next") or req.arg("next"), "/")
        if req.method == "POST":
            user, pw = req.value("username").strip(), req.value("password")
            if user == "demo" and pw == "demo":
                with self.lock:
                    req.session["user"] = "demo"
                return redirect(nxt)
            return self.render(req, "shop/login.html", error="Invalid username or password.", username=user, next=nxt)
        return self.render(req, "shop/login.html", error="", username="", next=nxt)

    def logout(self, req: Request) -> Response:
        """Log out (the cart stays) and go home."""
        with self.lock:
            req.session["user"] = None
        return redirect("/")

    # -- popups and widgets ------------------------------------------------------------------
    def share(self, req: Request) -> Response:
        """The small share popup window."""
        p = self._product(req.arg("p"))
        if p is None:
            return self.not_found(req, "Nothing to share.")
        return self.render(
            req,
            "share.html",
            name=p.name,
            heading=f"Share “{p.name}”",
            picture=p.image(uid="s"),
            price=money(p.price),
            link=f"/p/{p.id}",
        )

    def chat(self, req: Request) -> Response:
        """The live-chat widget embedded in an iframe on the home page."""
        return self.render(req, "shop/chat.html")

    # -- traps -------------------------------------------------------------------------------
    def flash_deals(self, req: Request) -> Response:
        """A slow page: waits `slow_seconds` before answering."""
        self.stopping.wait(self.slow_seconds)
        deals = sorted(self.data.products.values(), key=lambda p: (p.price, p.id))[:8]
        return self.render(req, "shop/flash.html", products=deals)

    def all_reviews(self, req: Request) -> Response:
        """Always fails with a styled HTTP 500 page."""
        return self.render(
            req,
            "error.html",
            500,
            code=500,
            heading="Reviews are temporarily unavailable",
            message="Our review service returned an error. Please try again later.",
        )

    def orders_loop(self, req: Request) -> Response:
        """A redirect loop: ?n=k always redirects (302) to ?n=k+1."""
        n = int_arg(req.arg("n"), 0, 0, 10**9)
        return redirect(f"/account/orders?n={n + 1}", 302)

    def catalogue(self, req: Request) -> Response:
        """A small PDF served as a download."""
        return Response(
            _pdf("Northwind Outfitters - Catalogue 2026"),
            200,
            "application/pdf",
            [("Content-Disposition", 'attachment; filename="northwind-catalogue.pdf"')],
        )


def _sorted(items: list, sort: str) -> list:
    if sort == "price_asc":
        return sorted(items, key=lambda p: (p.price, p.id))
    if sort == "price_desc":
        return sorted(items, key=lambda p: (-p.price, p.id))
    if sort == "rating":
        return sorted(items, key=lambda p: (-p.rating, p.id))
    return items


def _qty(text: str) -> int | None:
    text = (text or "").strip()
    if not text.isdigit() or int(text) > MAX_QTY:
        return None
    return int(text)


def _pdf(title: str) -> bytes:
    """A minimal one-page PDF with a correct xref table."""
    stream = f"BT /F1 24 Tf 72 720 Td ({title}) Tj ET".encode("latin-1")
    objs = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>",
    ]
    out, offsets = bytearray(b"%PDF-1.4\n"), []
    for i, body in enumerate(objs, 1):
        offsets.append(len(out))
        out += b"%d 0 obj\n" % i + body + b"\nendobj\n"
    xref = len(out)
    out += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objs) + 1)
    out += b"".join(b"%010d 00000 n \n" % o for o in offsets)
    out += b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objs) + 1, xref)
    return bytes(out)

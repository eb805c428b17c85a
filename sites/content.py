"""Seeded, deterministic shop content and small shared helpers (no clock, no network)."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from sites import art

MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()


def fixed_date(rng: random.Random, year: int) -> str:
    """A deterministic calendar date in `year`, ISO formatted."""
    return f"{year}-{rng.randint(1, 12):02d}-{rng.randint(1, 28):02d}"


def nice_date(iso: str) -> str:
    """'2025-03-07' -> '7 Mar 2025'."""
    y, m, d = iso[:10].split("-")
    return f"{int(d)} {MONTHS[int(m) - 1]} {y}"


def words(text: str) -> list[str]:
    """Split a "|"-separated word list."""
    return text.split("|")


def money(cents: int) -> str:
    """Cents -> '$1,234.50'."""
    return f"${cents / 100:,.2f}"


# ---------------------------------------------------------------------------------------------- shop
# (slug, title, glyph, (min price, max price) in cents)
SHOP_CATEGORIES = [
    ("jackets", "Jackets", "jacket", (5900, 34900)),
    ("footwear", "Footwear", "boot", (3900, 25900)),
    ("backpacks", "Backpacks", "backpack", (2900, 28900)),
    ("tents", "Tents & Shelter", "tent", (4900, 59900)),
    ("camp-kitchen", "Camp Kitchen", "pot", (900, 18900)),
    ("accessories", "Accessories", "compass", (900, 14900)),
]
_SHOP_NOUNS = {
    "jackets": "Shell Jacket|Down Parka|Fleece Hoodie|Rain Jacket|Softshell Jacket|Insulated Vest|Windbreaker|"
    "Puffer Jacket|Anorak|Trail Jacket",
    "footwear": "Hiking Boot|Trail Runner|Camp Sandal|Approach Shoe|Winter Boot|Mid Boot|Wading Shoe|Gaiter|"
    "Hut Slipper|Mountain Boot",
    "backpacks": "Daypack 22L|Trekking Pack 45L|Summit Pack 30L|Hydration Pack|Duffel 60L|Travel Pack 40L|"
    "Sling Bag|Climbing Pack|Hip Pack|Rolltop Pack",
    "tents": "Two-Person Tent|Ultralight Tent|Family Tent|Bivy Shelter|Tarp|Hammock|Dome Tent|Tunnel Tent|"
    "Footprint|Canopy",
    "camp-kitchen": "Stove|Cook Set|Kettle|Camp Mug|Spork Set|Water Filter|Cooler|Coffee Press|Skillet|Bottle",
    "accessories": "Headlamp|Trekking Poles|Compass|Beanie|Gloves|Sunglasses|Multi-tool|Map Case|Neck Gaiter|"
    "Trail Watch",
}
SHOP_BRANDS = words("Northwind|Ridgeline|Fjellsport|Cascade Co.|Alder & Pine|Summit Labs")
_ADJECTIVES = words(
    "Alpine|Coastal|Trailhead|Storm|Glacier|Cedar|Harbor|Timber|Aurora|Granite|Summit|Fjord|Ember|Tundra"
)
_COLORS = words("Forest green|Slate blue|Charcoal|Rust|Sand|Glacier white|Midnight|Moss|Ochre")
_MATERIALS = words(
    "Recycled nylon|Merino wool|Ripstop polyester|Full-grain leather|Anodized aluminium|Stainless steel|"
    "Organic cotton canvas|Cordura 500D"
)
_SENTENCES = [
    "The {name} is built for long days outside and quick trips alike.",
    "We tested it on wet ridgelines, windy beaches and crowded trains.",
    "Every seam is checked by hand in our workshop before it ships.",
    "It packs down small and weighs less than you would expect.",
    "{brand} designed it with repairable parts, so it lasts for years.",
    "A clean, simple design that looks just as good in town.",
    "Reinforced at the points that wear out first.",
    "Our customers call it the piece they reach for every weekend.",
]
_REVIEW_TITLES = words(
    "Exactly what I needed|Great value|Solid build|Runs a bit small|Love the color|Survived a storm|"
    "Good, not perfect|Would buy again|Light and tough|Better than expected"
)
_REVIEW_TEXTS = [
    "Used it for a week in the mountains and it held up perfectly.",
    "Shipping was quick and the quality feels premium.",
    "Fit is true to size for me, very comfortable right out of the box.",
    "A little heavier than advertised but still happy with it.",
    "My partner borrowed it and never gave it back, so I ordered another.",
    "Customer service helped me pick the right size. Great experience.",
]
_PEOPLE = words(
    "Ana R.|Ben K.|Chloe M.|Dev P.|Elif S.|Finn O.|Grace L.|Hugo T.|Iris W.|Jonas B.|Kira N.|Leo V.|Maya D."
)
SHOP_FAQ = [
    ("Is this item waterproof?", "It is water resistant. For heavy rain, pair it with our seam sealer."),
    ("How long is the warranty?", "Every Northwind item carries a lifetime repair promise and a 2-year warranty."),
    ("Can I return it if it doesn't fit?", "Yes, unworn items can be returned within 30 days for free."),
    ("How should I clean it?", "Hand wash cold with a mild soap and let it air dry away from direct heat."),
    ("Do you ship internationally?", "We ship to 28 countries. Duties are shown at checkout."),
    ("Is it suitable for winter?", "It works from early autumn to late spring; add a mid layer for deep winter."),
]


@dataclass
class Product:
    """One shop product."""

    id: int
    name: str
    brand: str
    category: str
    glyph: str
    hue: int
    price: int
    rating: float
    rating_count: int
    colors: list[str]
    sizes: list[str]
    description: list[str]
    specs: list[tuple[str, str]]
    reviews: list[dict]
    faq: list[tuple[str, str]]

    def image(self, variant: int = 0, uid: str = "") -> art.Markup:
        """The product illustration."""
        return art.picture(f"p{self.id}{uid}v{variant}", self.glyph, self.hue, variant=variant, label=self.name)


@dataclass
class ShopData:
    """All seeded shop content."""

    categories: list[dict]
    products: dict[int, Product]
    featured: list[int] = field(default_factory=list)


def build_shop(seed: int) -> ShopData:
    """Generate the shop catalogue for `seed`."""
    rng = random.Random(f"shop:{seed}")
    cats, products = [], {}
    pid = 1
    for slug, title, glyph, (lo, hi) in SHOP_CATEGORIES:
        cats.append({"slug": slug, "name": title, "glyph": glyph, "hue": rng.randint(0, 359)})
        names = words(_SHOP_NOUNS[slug])
        rng.shuffle(names)
        for noun in names:
            brand = rng.choice(SHOP_BRANDS)
            name = f"{rng.choice(_ADJECTIVES)} {noun}"
            apparel = slug in ("jackets", "footwear")
            sizes = (
                (["XS", "S", "M", "L", "XL"] if slug == "jackets" else [str(s) for s in range(38, 47)])
                if apparel
                else ["One size"]
            )
            sents = rng.sample(_SENTENCES, 5)
            desc = [
                " ".join(s.format(name=name, brand=brand) for s in sents[:3]),
                " ".join(s.format(name=name, brand=brand) for s in sents[3:]),
            ]
            reviews = [
                {
                    "author": rng.choice(_PEOPLE),
                    "title": rng.choice(_REVIEW_TITLES),
                    "text": rng.choice(_REVIEW_TEXTS),
                    "stars": rng.randint(2, 5),
                    "date": nice_date(fixed_date(rng, 2025)),
                }
                for _ in range(rng.randint(2, 5))
            ]
            specs = [
                ("SKU", f"NW-{pid:04d}"),
                ("Brand", brand),
                ("Material", rng.choice(_MATERIALS)),
                ("Weight", f"{rng.randint(80, 2400)} g"),
                ("Warranty", f"{rng.choice([2, 3, 5])} years"),
                ("Made in", rng.choice(["Portugal", "Norway", "Vietnam", "Canada", "Lithuania"])),
            ]
            products[pid] = Product(
                id=pid,
                name=name,
                brand=brand,
                category=slug,
                glyph=glyph,
                hue=rng.randint(0, 359),
                price=rng.randint(lo // 100, hi // 100) * 100 - rng.choice([1, 1, 5, 0]),
                rating=round(rng.uniform(3.1, 5.0), 1),
                rating_count=rng.randint(6, 480),
                colors=rng.sample(_COLORS, rng.randint(2, 4)),
                sizes=sizes,
                description=desc,
                specs=specs,
                reviews=reviews,
                faq=rng.sample(SHOP_FAQ, 4),
            )
            pid += 1
    featured = rng.sample(sorted(products), 8)
    return ShopData(cats, products, featured)

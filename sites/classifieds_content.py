"""Seeded, deterministic content for the classifieds site."""

from __future__ import annotations

import random
from dataclasses import dataclass
from urllib.parse import quote_plus

from sites import art
from sites.content import words

# (slug, title, glyph, (min price, max price) in cents)
CLASSIFIED_CATEGORIES = [
    ("furniture", "Furniture", "sofa", (1500, 90000)),
    ("electronics", "Electronics", "monitor", (1000, 120000)),
    ("bikes", "Bikes", "bike", (2500, 150000)),
    ("books", "Books & Media", "book", (0, 6000)),
    ("clothing", "Clothing", "shirt", (0, 25000)),
    ("garden", "Home & Garden", "plant", (0, 40000)),
    ("sports", "Sports & Outdoors", "ball", (500, 60000)),
    ("music", "Music Gear", "guitar", (2000, 180000)),
]
_NOUNS = {
    "furniture": "armchair|sofa|oak dining table|bookshelf|desk|bed frame|dresser",
    "electronics": "monitor|laptop|record player|camera|speaker set|game console|tablet",
    "bikes": "road bike|city bike|kids bike|mountain bike|cargo bike|e-bike|bike trailer",
    "books": "box of novels|cookbook set|vinyl records|comic collection|atlas|encyclopedia set|board games",
    "clothing": "wool coat|denim jacket|rain boots|wedding dress|ski jacket|leather boots|knit sweater",
    "garden": "monstera plant|lawn mower|patio chairs|raised bed|garden tools|bbq grill|fruit tree",
    "sports": "tennis racket|kayak|camping tent|rowing machine|snowboard|climbing shoes|football goal",
    "music": "acoustic guitar|digital piano|drum kit|violin|bass amp|ukulele|synthesizer",
}
REGIONS = [
    ("northside", "Northside"),
    ("southbank", "Southbank"),
    ("eastgate", "Eastgate"),
    ("westfield", "Westfield"),
    ("old-town", "Old Town"),
    ("harbourside", "Harbourside"),
]
CONDITIONS = ["New", "Like new", "Good", "Fair"]
_LISTING_ADJ = words("Vintage|Like-new|Barely used|Compact|Classic|Sturdy|Retro|Modern|Handmade|Large|Lightweight")
_SELLERS = words("Marta|Jonas|Aisha|Pieter|Lucia|Tom|Yara|Oskar|Nadia|Samir|Elena|Kofi|Hana|Victor|Ines|Rafael")
_LISTING_SENTENCES = [
    "Selling because we are moving at the end of the month.",
    "Smoke-free and pet-free home.",
    "Minor signs of use, see the photos.",
    "Pick-up only, I can help carry it to your car.",
    "Comes with the original box and manual.",
    "Price is slightly negotiable for a quick sale.",
    "Works perfectly, just no longer needed.",
    "Bought last year, used only a handful of times.",
]


@dataclass
class Listing:
    """One classified ad."""

    id: int
    title: str
    category: str
    glyph: str
    region: str
    price: int
    condition: str
    seller: str
    phone: str
    posted: str
    description: list[str]
    hue: int
    photos: int = 3

    @property
    def map_url(self) -> str:
        """External map link for the listing's area."""
        region = dict(REGIONS).get(self.region, self.region)
        return "https://maps.example.org/?q=" + quote_plus(f"{region}, Corner Market")

    def photo(self, variant: int = 0, uid: str = "") -> art.Markup:
        """One gallery photo."""
        return art.picture(f"l{self.id}{uid}v{variant}", self.glyph, self.hue, 480, 360, variant, label=self.title)


def build_classifieds(seed: int, count: int = 120) -> dict[int, Listing]:
    """Generate `count` listings for `seed`, spread evenly over the categories."""
    rng = random.Random(f"classifieds:{seed}")
    out: dict[int, Listing] = {}
    for i in range(1, count + 1):
        slug, _, glyph, (lo, hi) = CLASSIFIED_CATEGORIES[(i - 1) % len(CLASSIFIED_CATEGORIES)]
        noun = rng.choice(words(_NOUNS[slug]))
        price = 0 if lo == 0 and rng.random() < 0.15 else rng.randint(max(lo, 100) // 100, hi // 100) * 100
        day = rng.randint(1, 30)
        out[i] = Listing(
            id=i,
            title=f"{rng.choice(_LISTING_ADJ)} {noun}",
            category=slug,
            glyph=glyph,
            region=rng.choice(REGIONS)[0],
            price=price,
            condition=rng.choice(CONDITIONS),
            seller=f"{rng.choice(_SELLERS)} {rng.choice('ABCDEFGHJKLMNPRSTW')}.",
            phone=f"+1 555 01{rng.randint(0, 99):02d} {rng.randint(1000, 9999)}",
            posted=f"2026-{rng.choice([10, 11])}-{day:02d}",
            description=rng.sample(_LISTING_SENTENCES, rng.randint(2, 4)),
            hue=rng.randint(0, 359),
            photos=rng.randint(3, 4),
        )
    return out

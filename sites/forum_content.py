"""Seeded, deterministic content for the forum: boards, users, threads, posts and calendar events."""

from __future__ import annotations

import calendar
import random
from dataclasses import dataclass, field
from datetime import datetime, timedelta

DEMO_USER = "guest_demo"
_BASE = datetime(2025, 1, 6, 9, 0)
_MONTHS = "Jan Feb Mar Apr May Jun Jul Aug Sep Oct Nov Dec".split()

BOARDS = [
    (
        "general",
        "General Discussion",
        "Introductions, off-topic chat and everything in between.",
        ["weekend plans", "favourite podcast", "morning routine", "home office", "local library", "rainy day"],
    ),
    (
        "cooking",
        "Cooking & Baking",
        "Recipes, techniques and kitchen disasters.",
        [
            "sourdough starter",
            "cast iron pan",
            "tomato sauce",
            "pie crust",
            "fermented pickles",
            "bread dough",
            "spice rack",
        ],
    ),
    (
        "gardening",
        "Gardening",
        "Seeds, soil, pests and harvest photos.",
        ["tomato seedlings", "compost heap", "raised bed", "rose bush", "herb garden", "apple tree", "lawn"],
    ),
    (
        "diy",
        "DIY & Repairs",
        "Fix it, build it, paint it.",
        ["leaky tap", "squeaky door", "bookshelf build", "tile grout", "workbench", "old dresser", "garden shed"],
    ),
    (
        "books",
        "Book Club",
        "What are you reading? Spoilers in tags please.",
        ["mystery novel", "book club pick", "sci-fi series", "poetry collection", "audiobook", "reading list"],
    ),
]
_TITLES = [
    "Best way to handle a {s}?",
    "Help: my {s} is a mess",
    "Show us your {s}!",
    "Beginner question about my {s}",
    "{S} on a small budget",
    "What changed your mind about the {s}?",
    "Weekly {s} thread",
    "Is it worth upgrading the {s}?",
    "Tips for the {s} in winter",
    "Finally finished my {s} project",
    "Unpopular opinion: the {s}",
    "{S} - before and after",
]
USER_NAMES = [
    "maple_fern",
    "oakbarrel",
    "quietkettle",
    "rosa_b",
    "tinkerer42",
    "hollyhock",
    "sourdough_sam",
    "pagebound",
    "greenthumb",
    "fixit_fran",
    "lantern_lee",
    "brambleberry",
    "copperpot",
    "mossy_stone",
    "wrenchwise",
    "inkwell",
    "thyme_traveler",
    "birch_and_bark",
    "nightowl_nora",
    "plumline",
]
_PLACES = ["Bristol", "Utrecht", "Porto", "Halifax", "Tartu", "Dunedin", "Bergen", "Asheville", "Ghent", "Nantes"]
_BIOS = [
    "Weekend baker, weekday spreadsheet wrangler.",
    "Growing more tomatoes than any family could eat.",
    "Fixing things my landlord won't.",
    "Reading two books at once, finishing neither.",
    "Retired carpenter, still making sawdust.",
    "Here for the recipes, staying for the people.",
]
BADGES = [
    ("First post", "Wrote a first post"),
    ("Helpful", "10 replies marked helpful"),
    ("Green fingers", "Active in Gardening"),
    ("Bookworm", "Joined 5 book club reads"),
    ("Night owl", "Posted after midnight"),
    ("Veteran", "Member for over a year"),
    ("Photographer", "Shared 20 photos"),
    ("Fixer", "Solved a DIY question"),
]
_OPENERS = [
    "Hi all,",
    "Quick question for the experts.",
    "Long-time lurker, first post.",
    "Following up on last week:",
    "Has anyone else run into this?",
    "Sharing in case it helps someone.",
]
_BODY = [
    "I've tried a few different approaches and none of them stuck.",
    "The instructions say one thing, my experience says another.",
    "Photos are in the album linked on my profile.",
    "It took most of Saturday but I'm happy with the result.",
    "My neighbour swears by the old-fashioned method.",
    "Any advice would be greatly appreciated!",
    "I'd love to hear what worked for you.",
    "Budget is tight, so cheap tricks are welcome.",
    "Second attempt went much better than the first.",
    "Honestly surprised how easy it was in the end.",
]
_REPLIES = [
    "Same thing happened to me last spring.",
    "Have you tried doing it in smaller batches?",
    "Great result, thanks for sharing!",
    "I'd be careful with that, it can go wrong quickly.",
    "There's a good guide pinned in this board.",
    "+1, this worked for me too.",
    "Patience is the secret ingredient here.",
    "Bookmarking this thread for later.",
    "Mine took three tries, don't give up.",
    "That looks fantastic!",
]
_SPOILERS = [
    "The narrator was the culprit all along.",
    "The last chapter takes place ten years later.",
    "The letter was never sent.",
    "It turns out the garden was the real treasure.",
]
_EVENT_KINDS = [
    ("Bake-along", "Kitchen corner"),
    ("Seed swap", "Community hall"),
    ("Repair café", "Makerspace"),
    ("Book club meetup", "Library room 2"),
    ("Garden tour", "Allotments gate"),
    ("Q&A live thread", "Online"),
    ("Knife skills class", "Kitchen corner"),
    ("Photo contest deadline", "Online"),
]


@dataclass
class Post:
    """One forum post."""

    id: int
    author: str
    when: datetime
    paragraphs: list[str]
    spoiler: str | None = None
    likes: int = 0

    @property
    def date(self) -> str:
        """Display date."""
        return fmt(self.when)


@dataclass
class Thread:
    """One forum thread (its seeded posts live in ForumData.posts)."""

    id: int
    board: str
    title: str
    author: str
    when: datetime
    views: int
    score: int
    pinned: bool = False

    @property
    def created(self) -> str:
        """Display date."""
        return fmt(self.when)


@dataclass
class ForumData:
    """All seeded forum content."""

    boards: list[dict]
    users: dict[str, dict]
    threads: dict[int, Thread]
    posts: dict[int, list[Post]] = field(default_factory=dict)


def fmt(dt: datetime) -> str:
    """A fixed, human date string."""
    return f"{dt.day} {_MONTHS[dt.month - 1]} {dt.year}, {dt.hour:02d}:{dt.minute:02d}"


def build_forum(seed: int, threads_per_board: int = 30) -> ForumData:
    """Generate the forum for `seed`."""
    rng = random.Random(f"forum:{seed}")
    users = {}
    for name in USER_NAMES + [DEMO_USER]:
        users[name] = {
            "name": name,
            "joined": fmt(_BASE - timedelta(days=rng.randint(30, 1500))).split(",")[0],
            "location": rng.choice(_PLACES),
            "bio": rng.choice(_BIOS),
            "badges": rng.sample(BADGES, rng.randint(2, 6)),
        }
    users[DEMO_USER]["bio"] = "The demo account. Say hi!"
    boards, threads, posts = [], {}, {}
    tid, post_id = 1, 1
    for b_index, (slug, name, desc, subjects) in enumerate(BOARDS):
        boards.append({"slug": slug, "name": name, "description": desc, "hue": (b_index * 67 + 20) % 360})
        seen: set[str] = set()
        for n in range(threads_per_board):
            title = ""
            while not title or title in seen:
                s = rng.choice(subjects)
                title = rng.choice(_TITLES).format(s=s, S=s[0].upper() + s[1:])
                if title in seen and rng.random() < 0.3:
                    title += f" (part {rng.randint(2, 5)})"
            seen.add(title)
            start = _BASE + timedelta(days=rng.randint(0, 320), minutes=rng.randint(0, 900))
            author = DEMO_USER if (b_index == 0 and n == 0) else rng.choice(USER_NAMES)
            t = Thread(tid, slug, title, author, start, rng.randint(20, 5000), rng.randint(0, 240), pinned=n == 0)
            plist, when = [], start
            for k in range(rng.randint(2, 9)):
                who = author if k == 0 else (DEMO_USER if rng.random() < 0.08 else rng.choice(USER_NAMES))
                if k == 0:
                    paras = [rng.choice(_OPENERS) + " " + " ".join(rng.sample(_BODY, 2)), rng.choice(_BODY)]
                else:
                    paras = [" ".join(rng.sample(_REPLIES, rng.randint(1, 2)))]
                spoiler = (
                    rng.choice(_SPOILERS) if (slug == "books" and rng.random() < 0.5) or rng.random() < 0.06 else None
                )
                plist.append(Post(post_id, who, when, paras, spoiler, rng.randint(0, 40)))
                post_id += 1
                when += timedelta(hours=rng.randint(1, 60), minutes=rng.randint(0, 59))
            if n == 0:  # a demo-user reply in every pinned thread, so "Delete" is easy to find
                plist.append(Post(post_id, DEMO_USER, when, ["Thanks everyone, this is really helpful!"]))
                post_id += 1
            threads[tid], posts[tid] = t, plist
            tid += 1
    return ForumData(boards, users, threads, posts)


def month_events(seed: int, year: int, month: int) -> list[dict]:
    """Deterministic events for one month (any month, endlessly)."""
    rng = random.Random(f"events:{seed}:{year}-{month}")
    days = calendar.monthrange(year, month)[1]
    picks = sorted(rng.sample(range(1, days + 1), rng.randint(3, 6)))
    out = []
    for i, day in enumerate(picks):
        kind, place = rng.choice(_EVENT_KINDS)
        out.append(
            {
                "id": f"ev{i}",
                "day": day,
                "title": kind,
                "place": place,
                "time": f"{rng.randint(9, 20)}:{rng.choice(['00', '30'])}",
                "host": rng.choice(USER_NAMES),
                "going": rng.randint(2, 60),
            }
        )
    return out


def month_grid(year: int, month: int) -> list[list[int]]:
    """Weeks (Monday first) of day numbers, 0 for padding."""
    return calendar.Calendar(firstweekday=0).monthdayscalendar(year, month)

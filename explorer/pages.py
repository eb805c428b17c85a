"""What tells a page apart from the site's other pages: its title and main heading, less the words the site
shares across pages (title prefixes and suffixes, the site's name, a header every page carries).

The shared words are learned from the pages a run has seen: a word that at least half of the distinct titles
(or headings) carry, and at least two, names the site rather than the page. The Judger compares a predicted
page with every known page on what is left, so that naming the site, or a word every page has, says nothing.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from urllib.parse import urlsplit

_WORD = re.compile(r"[^\W_]+", re.UNICODE)
_COMPOUNDS = re.compile(r"\b(log|sign|check|set)[\s-]+(in|on|up|out)\b")
SHARED_SHARE = 0.5  # a title part ("Northwind Outfitters") on this share of the distinct titles is the site's
WORD_SHARE = 0.8  # a single word on this share of them is the site's too (titles without separators)
_SEPARATORS = re.compile(r"\s+[·|\-–—:»›/]+\s+|\s*::\s*")
# words that say nothing about which page: articles, pronouns, and how predictions speak of pages
STOPWORDS = frozenset(
    "a an the of to and in on at for with from by your my our its this that these those is are be it as into "
    "page pages navigates navigate navigation goes go opens open loads load takes take brings bring user you "
    "browser shows show displays display screen view leads lead redirects redirect tab window site website "
    "web will then there here which where".split()
)


def words(text: str) -> list[str]:
    """Lower-case word tokens, plural -s folded (`Jackets` -> `jacket`), `log in` as `login`, stopwords kept."""
    out = []
    for w in _WORD.findall(_COMPOUNDS.sub(lambda m: m.group(1) + m.group(2), text.lower())):
        if len(w) > 3 and w.endswith("s") and not w.endswith("ss") and w not in STOPWORDS:
            w = w[:-1]
        out.append(w)
    return out


def content_words(text: str) -> set[str]:
    """The tokens of `text` less stopwords."""
    return {w for w in words(text) if w not in STOPWORDS}


def url_path(url: str) -> str:
    """The path and query of a URL (or of a bare path), without fragment: `/p/17?tab=2`."""
    parts = urlsplit(url.strip())
    path = parts.path if parts.scheme or parts.netloc or url.strip().startswith("/") else "/" + parts.path
    return (path or "/") + (f"?{parts.query}" if parts.query else "")


def path_segments(url: str) -> tuple[tuple[str, ...], str]:
    """Whole path segments (empty ones dropped) and the query: `/t/12/` -> (("t", "12"), "")."""
    path, _, query = url_path(url).partition("?")
    return tuple(s.lower() for s in path.split("/") if s), query


@dataclass(frozen=True)
class PageIdentity:
    """A page as the Judger compares it: the distinctive words of its title and of its main heading."""

    title: frozenset[str]
    heading: frozenset[str]
    label: str  # the title as shown, for reasons
    own: frozenset[str] = frozenset()  # the first title part left after stripping: the page's own name

    @property
    def parts(self) -> list[frozenset[str]]:
        """What a predicted name may match: the page's own name, its whole title, or its main heading."""
        return [p for p in (self.own, self.title, self.heading) if p]

    @property
    def empty(self) -> bool:
        """True when nothing but the site's shared words names this page (a home page titled by the site)."""
        return not self.title and not self.heading


@dataclass
class SitePages:
    """The pages a run has seen as (title, main heading), and the words that belong to the site, not a page."""

    site_name: str = ""
    pages: set[tuple[str, str]] = field(default_factory=set)
    _shared: tuple[frozenset[str], frozenset[str]] | None = None
    _rarity: tuple[dict[str, float], float] | None = None

    @classmethod
    def of(cls, pages: Iterable[tuple[str, str]], site_name: str = "") -> SitePages:
        """Built from (title, heading) pairs."""
        index = cls(site_name=site_name)
        for title, heading in pages:
            index.add(title, heading)
        return index

    def add(self, title: str, heading: str = "") -> None:
        """Remember a page; the shared words are learned again on the next comparison. A title seen without its
        heading and then with one is one page."""
        title, heading = title.strip(), heading.strip()
        if not (title or heading) or (title, heading) in self.pages:
            return
        if not heading and any(t == title for t, _ in self.pages):
            return
        self.pages.discard((title, ""))
        self.pages.add((title, heading))
        self._shared = self._rarity = None

    def shared(self) -> tuple[frozenset[str], frozenset[str]]:
        """(title words, heading words) that the site shares across its pages, plus its name's words."""
        if self._shared is None:
            name = frozenset(content_words(self.site_name)) if _is_wordy(self.site_name) else frozenset()
            titles = {t for t, _ in self.pages if t}
            headings = {h for _, h in self.pages if h}
            self._shared = (_common(titles) | name, _common(headings) | name)
        return self._shared

    def identity(self, title: str, heading: str = "") -> PageIdentity:
        """The distinctive words of a page with this title and main heading."""
        shared_title, shared_heading = self.shared()
        own = next((w for p in title_parts(title) if (w := frozenset(content_words(p) - shared_title))), frozenset())
        return PageIdentity(
            title=frozenset(content_words(title) - shared_title),
            heading=frozenset(content_words(heading) - shared_heading),
            label=title or heading,
            own=own,
        )

    def distinct(self, text: str) -> frozenset[str]:
        """The words of a predicted page name that are not the site's."""
        shared_title, shared_heading = self.shared()
        return frozenset(content_words(text) - shared_title - shared_heading)

    def rarity(self) -> Callable[[str], float]:
        """A word's weight by how few known pages carry it (inverse page frequency; unknown words weigh most)."""
        if self._rarity is None:
            known = self.known()
            counts = Counter(w for page in known for w in page.title | page.heading)
            n = len(known)
            self._rarity = {w: math.log((n + 1) / (c + 1)) + 1 for w, c in counts.items()}, math.log(n + 1) + 1
        table, unseen = self._rarity
        return lambda w: table.get(w, unseen)

    def known(self) -> list[PageIdentity]:
        """Every page seen, as identities (pages that differ only in the site's shared words are one)."""
        seen: dict[tuple[frozenset[str], frozenset[str]], PageIdentity] = {}
        for title, heading in sorted(self.pages):
            ident = self.identity(title, heading)
            seen.setdefault((ident.title, ident.heading), ident)
        return list(seen.values())


def title_parts(title: str) -> list[str]:
    """A title split at its separators: `Jackets · Northwind Outfitters` -> [`Jackets`, `Northwind Outfitters`]."""
    return [p.strip() for p in _SEPARATORS.split(title) if p.strip()]


def _is_wordy(name: str) -> bool:
    """A site name made of words (`Northwind Outfitters`), not a host (`127.0.0.1:8000`)."""
    return bool(name) and not re.fullmatch(r"[\d.:\[\]a-f]*", name.lower()) and "/" not in name


def _common(texts: set[str]) -> frozenset[str]:
    """The words of title parts (split at separators such as ` · ` or ` | `) found on at least SHARED_SHARE of
    the texts, and words found on at least WORD_SHARE of them; each on two texts at least."""
    if len(texts) < 2:
        return frozenset()
    parts = Counter(p for t in texts for p in {s.lower() for s in title_parts(t)})
    tokens = Counter(w for t in texts for w in content_words(t))
    shared = {w for p, n in parts.items() if n >= 2 and n >= SHARED_SHARE * len(texts) for w in content_words(p)}
    return frozenset(shared | {w for w, n in tokens.items() if n >= 2 and n >= WORD_SHARE * len(texts)})

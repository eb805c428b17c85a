"""Hearthside Forum: boards, threads, replies, reports, profiles, search and an endless calendar."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from sites import art
from sites.forum_content import BADGES, DEMO_USER, ForumData, Post, build_forum, month_events, month_grid
from sites.server import Request, Response, Site, int_arg, paginate, redirect, safe_next

PER_PAGE = 10
START_MONTH = (2026, 12)
REPORT_REASONS = {
    "spam": "Spam or advertising",
    "abuse": "Harassment or abuse",
    "off-topic": "Off-topic",
    "other": "Something else",
}
_USER_RE = re.compile(r"^[A-Za-z0-9_]{3,20}$")
_MONTH_RE = re.compile(r"^(\d{4})-(\d{2})$")
MONTH_NAMES = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
]


class ForumSite(Site):
    """The forum: guest_demo logged in per visitor; replies, deletions and reports are shared."""

    name = "forum"
    title = "Hearthside Forum"

    def __init__(self, seed: int = 0, slow_seconds: float = 30.0):
        self.data: ForumData = build_forum(seed)
        self.boards = {b["slug"]: b for b in self.data.boards}
        self._first_free_id = 1 + max(p.id for plist in self.data.posts.values() for p in plist)
        self.started = datetime.now(UTC)  # the live "last reply N minutes ago" counts from here
        super().__init__(seed, slow_seconds)

    def setup_routes(self) -> None:
        """Register the forum's routes."""
        r = self.route
        r("/", self.index)
        r(r"/f/(?P<slug>[a-z0-9-]+)", self.board)
        r(r"/t/(?P<tid>\d{1,9})", self.thread)
        r(r"/t/(?P<tid>\d{1,9})/reply", self.reply, ("POST",))
        r(r"/t/(?P<tid>\d{1,9})/delete/(?P<pid>\d{1,9})", self.delete, ("POST",))
        r(r"/t/(?P<tid>\d{1,9})/report/(?P<pid>\d{1,9})", self.report, ("POST",))
        r(r"/u/(?P<name>[A-Za-z0-9_]{1,40})", self.profile)
        r("/members", self.members)
        r("/search", self.search)
        r("/events", self.events)
        r("/settings", self.settings, ("GET", "POST"))
        r("/login", self.login, ("GET", "POST"))
        r("/logout", self.logout, ("GET", "POST"))

    def reset_state(self) -> None:
        """Forget replies, deletions and reports."""
        self.extra: dict[int, list[Post]] = {}
        self.deleted: set[int] = set()
        self.reports: list[tuple[int, str]] = []
        self.next_id = self._first_free_id

    def new_session(self) -> dict:
        """Every visitor starts logged in as guest_demo."""
        return {"user": DEMO_USER, "theme": "light", "notify": True, "signature": ""}

    def context(self, req: Request) -> dict:
        """Header data and helpers for the templates."""
        s = req.session or {}
        return {
            "user": s.get("user"),
            "theme": s.get("theme", "light"),
            "boards": self.data.boards,
            "avatar": art.avatar,
            "hue": art.stable_hue,
            "logo": art.logo("H", 245),
            "post_counts": self._post_counts(),
        }

    # -- data helpers ------------------------------------------------------------------------
    def posts_of(self, tid: int) -> list[Post]:
        """Visible posts of a thread, oldest first."""
        with self.lock:
            return [p for p in self.data.posts[tid] + self.extra.get(tid, []) if p.id not in self.deleted]

    def _post_counts(self) -> dict[str, int]:
        counts: dict[str, int] = {}
        for tid in self.data.threads:
            for p in self.posts_of(tid):
                counts[p.author] = counts.get(p.author, 0) + 1
        return counts

    def _thread_row(self, t) -> dict:
        posts = self.posts_of(t.id)
        last = posts[-1] if posts else None
        return {"t": t, "replies": max(0, len(posts) - 1), "last": last, "last_when": last.when if last else t.when}

    def _thread(self, tid: str):
        return self.data.threads.get(int(tid))

    # -- pages -------------------------------------------------------------------------------
    def index(self, req: Request) -> Response:
        """Board index with stats."""
        rows = []
        for b in self.data.boards:
            threads = [self._thread_row(t) for t in self.data.threads.values() if t.board == b["slug"]]
            latest = max(threads, key=lambda r: (r["last_when"], r["t"].id))
            rows.append(
                {"board": b, "threads": len(threads), "posts": sum(r["replies"] + 1 for r in threads), "latest": latest}
            )
        online = sorted(self.data.users)[:12]
        return self.render(req, "forum/index.html", rows=rows, online=online)

    def board(self, req: Request) -> Response:
        """Thread list of one board, sorted by latest activity or by score, 10 per page."""
        b = self.boards.get(req.params["slug"])
        if b is None:
            return self.not_found(req, "That board doesn't exist.")
        sort = req.arg("sort", "latest")
        error = "" if sort in ("latest", "top") else "Unknown sort order; showing latest."
        sort = sort if sort in ("latest", "top") else "latest"
        rows = [self._thread_row(t) for t in self.data.threads.values() if t.board == b["slug"]]
        if sort == "top":
            rows.sort(key=lambda r: (-r["t"].score, r["t"].id))
        else:
            rows.sort(key=lambda r: (r["last_when"], r["t"].id), reverse=True)
        rows.sort(key=lambda r: not r["t"].pinned)
        page_rows, page, pages = paginate(rows, int_arg(req.arg("page"), 1), PER_PAGE)
        return self.render(
            req,
            "forum/board.html",
            board=b,
            rows=page_rows,
            sort=sort,
            page=page,
            pages=pages,
            total=len(rows),
            error=error,
        )

    def thread(self, req: Request, reply_error: str = "", draft: str = "") -> Response:
        """A thread with its posts, reply and report dialogs."""
        t = self._thread(req.params["tid"])
        if t is None:
            return self.not_found(req, "That thread doesn't exist or was removed.")
        return self.render(
            req,
            "forum/thread.html",
            t=t,
            board=self.boards[t.board],
            posts=self.posts_of(t.id),
            reasons=REPORT_REASONS,
            reply_error=reply_error,
            draft=draft,
            users=self.data.users,
            now=datetime.now(UTC).isoformat(timespec="seconds"),
            last_reply=(self.started - timedelta(minutes=7 * (t.id % 5) + 3)).isoformat(timespec="seconds"),
        )

    def reply(self, req: Request) -> Response:
        """POST body: append a reply by the logged-in user."""
        t = self._thread(req.params["tid"])
        if t is None:
            return self.not_found(req, "That thread doesn't exist or was removed.")
        user = req.session.get("user")
        if not user:
            return redirect(f"/login?next=/t/{t.id}")
        body = req.value("body").strip()
        if not body:
            return self.thread(req, "Your reply is empty. Write something first.")
        if len(body) > 4000:
            return self.thread(req, "Replies are limited to 4000 characters.", body[:4000])
        paras = [p.strip() for p in body.replace("\r\n", "\n").split("\n\n") if p.strip()]
        with self.lock:
            posts = self.posts_of(t.id)
            when = (posts[-1].when if posts else t.when) + timedelta(minutes=7)
            self.extra.setdefault(t.id, []).append(Post(self.next_id, user, when, paras))
            self.next_id += 1
        req.session["flash"] = "Your reply was posted."
        return redirect(f"/t/{t.id}")

    def delete(self, req: Request) -> Response:
        """POST: delete one of your own posts."""
        t = self._thread(req.params["tid"])
        pid = int(req.params["pid"])
        post = next((p for p in self.posts_of(t.id) if p.id == pid), None) if t else None
        if post is None:
            return self.not_found(req, "That post doesn't exist.")
        if post.author != req.session.get("user"):
            return self.render(
                req,
                "error.html",
                403,
                code=403,
                heading="Not your post",
                message="You can only delete posts you wrote.",
            )
        with self.lock:
            self.deleted.add(pid)
        req.session["flash"] = "Your post was deleted."
        return redirect(f"/t/{t.id}")

    def report(self, req: Request) -> Response:
        """POST reason: report a post to the moderators."""
        t = self._thread(req.params["tid"])
        pid = int(req.params["pid"])
        posts = self.posts_of(t.id) if t else []
        if not any(p.id == pid for p in posts):
            return self.not_found(req, "That post doesn't exist.")
        reason = req.value("reason")
        if reason not in REPORT_REASONS:
            req.session["flash"] = "Please pick a reason when reporting a post."
        else:
            with self.lock:
                self.reports.append((pid, reason))
            req.session["flash"] = "Thanks for the report. A moderator will take a look."
        return redirect(f"/t/{t.id}")

    def profile(self, req: Request) -> Response:
        """Profile with Posts / About / Badges tabs."""
        name = req.params["name"]
        posts = []
        for t in self.data.threads.values():
            posts.extend((t, p) for p in self.posts_of(t.id) if p.author == name)
        info = self.data.users.get(name)
        if info is None and not posts:
            return self.not_found(req, f"There is no member called “{name}”.")
        info = info or {"name": name, "joined": "today", "location": "Unknown", "bio": "", "badges": []}
        posts.sort(key=lambda tp: (tp[1].when, tp[1].id), reverse=True)
        return self.render(
            req, "forum/profile.html", member=info, posts=posts[:12], total=len(posts), all_badges=BADGES
        )

    def members(self, req: Request) -> Response:
        """All members."""
        return self.render(req, "forum/members.html", members=sorted(self.data.users.values(), key=lambda u: u["name"]))

    def search(self, req: Request) -> Response:
        """Search thread titles and post text."""
        q = req.arg("q").strip()
        words = q.lower().split()
        hits = []
        if words:
            for t in self.data.threads.values():
                posts = self.posts_of(t.id)
                text = (t.title + " " + " ".join(" ".join(p.paragraphs) for p in posts)).lower()
                if all(w in text for w in words):
                    snippet = next(
                        (" ".join(p.paragraphs) for p in posts if words[0] in " ".join(p.paragraphs).lower()),
                        " ".join(posts[0].paragraphs) if posts else "",
                    )
                    hits.append({"t": t, "snippet": snippet[:160], "board": self.boards[t.board]})
        page_hits, page, pages = paginate(hits, int_arg(req.arg("page"), 1), PER_PAGE)
        return self.render(req, "forum/search.html", q=q, hits=page_hits, total=len(hits), page=page, pages=pages)

    def events(self, req: Request) -> Response:
        """A month calendar with endless Previous / Next month links."""
        text, error = req.arg("month"), ""
        year, month = START_MONTH
        if text:
            m = _MONTH_RE.match(text)
            if m and 1 <= int(m.group(1)) <= 9999 and 1 <= int(m.group(2)) <= 12:
                year, month = int(m.group(1)), int(m.group(2))
            else:
                error = f"“{text}” is not a month like 2026-12; showing December 2026."
        prev = (year, month - 1) if month > 1 else (year - 1, 12)
        nxt = (year, month + 1) if month < 12 else (year + 1, 1)
        events = month_events(self.seed, year, month)
        by_day: dict[int, list[dict]] = {}
        for e in events:
            by_day.setdefault(e["day"], []).append(e)
        return self.render(
            req,
            "forum/events.html",
            year=year,
            month=month,
            month_name=MONTH_NAMES[month - 1],
            weeks=month_grid(year, month),
            by_day=by_day,
            events=events,
            error=error,
            prev=f"{prev[0]:04d}-{prev[1]:02d}",
            next=f"{nxt[0]:04d}-{nxt[1]:02d}",
        )

    def settings(self, req: Request) -> Response:
        """Per-visitor preferences (theme, notifications, signature)."""
        if not req.session.get("user"):
            return redirect("/login?next=/settings")
        error = ""
        if req.method == "POST":
            theme, sig = req.value("theme"), req.value("signature").strip()
            if theme not in ("light", "dark"):
                error = "Please choose a theme."
            elif len(sig) > 200:
                error = "Your signature can be at most 200 characters."
            else:
                with self.lock:
                    req.session.update(theme=theme, signature=sig, notify=req.value("notify") == "on")
                req.session["flash"] = "Settings saved."
                return redirect("/settings")
        return self.render(req, "forum/settings.html", error=error)

    def login(self, req: Request) -> Response:
        """Any username (3-20 letters, digits or _) with password "demo"."""
        nxt = safe_next(req.value("next") or req.arg("next"), "/")
        if req.method == "POST":
            user, pw = req.value("username").strip(), req.value("password")
            if not _USER_RE.match(user):
                err = "Usernames are 3 to 20 letters, digits or underscores."
            elif pw != "demo":
                err = "Wrong password. (Hint: it is “demo”.)"
            else:
                with self.lock:
                    req.session["user"] = user
                return redirect(nxt)
            return self.render(req, "forum/login.html", error=err, username=user, next=nxt)
        return self.render(req, "forum/login.html", error="", username="", next=nxt)

    def logout(self, req: Request) -> Response:
        """Log out and go to the board index."""
        with self.lock:
            req.session["user"] = None
        req.session["flash"] = "You are logged out."
        return redirect("/")

"""The `bfs` strategy (explorer/crawl.py), a URL-frontier crawl in real Chromium: it finds about one new page per
`goto` and at least as many states as click-and-return BFS at the same budget, keeps to the allowed origins and the
site's policy, and stops when the frontier is empty."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit

import pytest

from explorer.config import BrowserConfig, ExploreConfig, SiteConfig
from explorer.errors import ConfigError
from explorer.models import ModelConfig
from explorer.run import run_exploration
from explorer.safety import in_scope
from explorer.store import resume

ROOT = Path(__file__).resolve().parents[1]

# A five-page site: a page only a button leads to (a form's GET), a page linked only from there, an in-page anchor,
# a button that covers the page with a layer (a new state on the same URL that hides the other buttons), a button
# that does nothing, a "Log out" link (the default policy forbids it) and a link to another origin.
TINY = {
    "index.html": """<title>Tiny</title><h1>Tiny home</h1>
<a href="/a.html">Page A</a> <a href="/b.html#top">Page B</a> <a href="/logout.html">Log out</a>
<a href="https://elsewhere.example/">Elsewhere</a>
<button onclick="document.getElementById('layer').hidden = false">Show details</button>
<form action="/d.html"><button>Go to D</button></form> <button>Nothing</button>
<div id="layer" hidden style="position: fixed; inset: 0; background: #e07000">Details</div>""",
    "a.html": """<title>A</title><h1 id="sec">Page A</h1><a href="/">Home</a> <a href="/b.html">Page B</a>
<a href="#sec">Section</a>""",
    "b.html": """<title>B</title><h1>Page B</h1><a href="/">Home</a> <a href="/b.html">This page</a>""",
    "c.html": """<title>C</title><h1>Page C</h1><a href="/">Home</a>""",
    "d.html": """<title>D</title><h1>Page D</h1><a href="/c.html">Page C</a>""",
    "logout.html": """<title>Bye</title><h1>Logged out</h1>""",
}


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture(scope="module")
def tiny_site(tmp_path_factory) -> str:
    """The four-page site served on an ephemeral port; its base URL."""
    root = tmp_path_factory.mktemp("tiny")
    for name, html in TINY.items():
        (root / name).write_text(f"<!doctype html><html><body>{html}</body></html>")
    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(root)))
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_port}/"
    server.shutdown()


async def _run(site: SiteConfig, strategy: str, steps: int, runs: Path):
    """(summary, steps, graph, events) of a fresh run."""
    cfg = ExploreConfig(strategy=strategy, max_steps=steps, seed=0)
    summary = await run_exploration(site, cfg, BrowserConfig(), runs_dir=runs, run_id=strategy)
    store, graph = resume(runs / strategy)
    try:
        return summary, store.steps(), graph, store.events()
    finally:
        store.close()


def _new_per_goto(rows, graph) -> tuple[int, int]:
    """(goto steps, goto steps that reached a state first seen there)."""
    gotos = [r for r in rows if r.kind == "goto"]
    return len(gotos), sum(graph.node(r.node_to).created_step == r.step for r in gotos)


async def test_bfs_loads_each_page_once_clicks_buttons_and_stops_when_the_frontier_is_empty(tiny_site, tmp_path):
    site = SiteConfig(name="tiny", start_url=tiny_site, timeouts={"navigation_ms": 4000, "action_ms": 3000})
    summary, rows, graph, events = await _run(site, "bfs", 40, tmp_path)
    assert summary.stopped_by == "frontier empty" and summary.steps < 40
    gotos = [r for r in rows if r.kind == "goto"]
    # FIFO, each page once, without fragments; /c.html is linked only from /d.html, which a button reached
    assert [urlsplit(r.action.url).path for r in gotos] == ["/a.html", "/b.html", "/c.html"]
    assert all("#" not in r.action.url for r in gotos)
    assert _new_per_goto(rows, graph) == (3, 3) and all(r.node_from for r in gotos)  # recorded transitions
    assert {urlsplit(n.url).path for n in graph.nodes()} == {"/", "/a.html", "/b.html", "/c.html", "/d.html"}
    assert summary.states == 6  # five pages and the home page under its layer
    home = [(r.kind, r.action.label or urlsplit(r.action.url).path) for r in rows if r.step <= 5]
    assert home == [
        ("start", "/"),
        ("select", 'button "Show details"'),
        ("return", "/"),  # the layer hides the next button: back to the page by URL
        ("select", 'button "Go to D"'),
        ("return", "/"),  # the click left the page
        ("select", 'button "Nothing"'),
    ]
    assert [r.action.label for r in rows if r.step > 5 and r.kind == "select"] == ['link "Section"']  # an anchor
    # never tried: the policy's "Log out" and the other origin (the browser would have refused and recorded both)
    assert not any("logout" in (r.action.url or "") + r.outcome["url_after"] for r in rows)
    assert not any(e.kind in ("refused", "blocked_request") for e in events)
    assert all(in_scope(r.outcome["url_after"], site.allowed_origins) for r in rows)


@pytest.mark.parametrize("cut", [3, 7])
async def test_a_resumed_crawl_goes_on_where_it_stopped(tiny_site, tmp_path, cut):
    """Stopped after `cut` steps (3: among the home page's buttons; 7: among page A's) and resumed, the crawl
    rebuilds its frontier from the store: it loads no page twice, clicks no button twice, and does what an
    uninterrupted crawl does, with one start step (and the interrupted page loaded again) in between."""
    site = SiteConfig(name="tiny", start_url=tiny_site, timeouts={"navigation_ms": 4000, "action_ms": 3000})
    _, whole, _, _ = await _run(site, "bfs", 40, tmp_path / "whole")
    runs = tmp_path / "cut"
    first, rest = ExploreConfig(strategy="bfs", max_steps=cut), ExploreConfig(strategy="bfs", max_steps=40)
    await run_exploration(site, first, BrowserConfig(), runs_dir=runs, run_id="b")
    summary = await run_exploration(site, rest, BrowserConfig(), runs_dir=runs, run_id="b", resume_run="b")
    store, _ = resume(runs / "b")
    rows = store.steps()
    store.close()
    assert summary.stopped_by == "frontier empty"

    def work(rows):
        return [(r.kind, r.action.label or urlsplit(r.action.url).path) for r in rows if r.kind in ("select", "goto")]

    starts = [r.step for r in rows if r.kind == "start"]
    assert starts == [0, cut]
    redone = [r for r in rows if r.kind == "goto" and r.step == cut + 1]  # the interrupted page, loaded again
    assert [urlsplit(r.action.url).path for r in redone] == ([] if cut == 3 else ["/a.html"])
    rest = [r for r in rows if r not in redone]
    clicks = [label for kind, label in work(rest) if kind == "select"]
    assert len(clicks) == len(set(clicks)) and work(rest) == work(whole)
    assert len(rows) == len(whole) + 1 + len(redone)


async def test_bfs_finds_a_new_page_per_goto_and_at_least_as_much_as_click_and_return(site_config, tmp_path):
    site = site_config("shop")
    crawl, rows, graph, _ = await _run(site, "bfs", 20, tmp_path)
    clicks, *_ = await _run(site, "bfs-click", 20, tmp_path)
    assert crawl.stopped_by == clicks.stopped_by == "steps"
    assert crawl.states >= clicks.states, (crawl.states, clicks.states)
    gotos, new = _new_per_goto(rows, graph)
    assert gotos >= 4 and new >= 0.8 * gotos, (gotos, new)
    assert {r.kind for r in rows} <= {"start", "select", "return", "goto"}
    assert all(in_scope(r.action.url, site.allowed_origins) for r in rows if r.action.kind == "goto")


async def test_bfs_keeps_to_the_policy_when_a_menu_shows_log_out(site_config, tmp_path):
    """The forum's user menu holds a "Log out" link: the crawl opens the menu, never loads /logout, and the demo
    user stays logged in."""
    site = site_config("forum")
    _, rows, graph, _ = await _run(site, "bfs", 10, tmp_path)
    with_menu = resume(tmp_path / "bfs")[0]
    try:
        shown = [with_menu.observation(n.observation) for n in graph.nodes()]
    finally:
        with_menu.close()
    assert any(e.name == "Log out" for obs in shown for e in obs.elements), "the menu was never opened"
    loaded = [r.action.url for r in rows if r.action.url] + [r.outcome["url_after"] for r in rows]
    assert not any(urlsplit(url).path == "/logout" for url in loaded)
    assert any("guest_demo" in e.name for e in shown[-1].elements)  # still logged in at the last new state


async def test_resuming_a_run_that_spent_its_steps_takes_no_step_and_opens_no_page(tiny_site, tmp_path):
    """A run resumed after it reached --max-steps returns its summary as it was: no start step, no new state,
    no browser and no model (so a site that has since moved or gone down, or a model that is gone, is no error).
    Before, every resume of a finished run (bench/data_value.py re-reads its cached explorations) added a start
    step and a state, and SCALE loaded its model first."""
    site = SiteConfig(name="tiny", start_url=tiny_site, timeouts={"navigation_ms": 4000, "action_ms": 3000})
    summary, rows, graph, _ = await _run(site, "bfs", 4, tmp_path)
    assert summary.stopped_by == "steps" and len(rows) == 4
    gone = SiteConfig(name="tiny", start_url="http://127.0.0.1:9/", timeouts={"navigation_ms": 2000})
    cfg = ExploreConfig(strategy="bfs", max_steps=4, seed=0)
    again = await run_exploration(gone, cfg, BrowserConfig(), runs_dir=tmp_path, run_id="bfs", resume_run="bfs")
    store, regraph = resume(tmp_path / "bfs")
    try:
        assert [r.step for r in store.steps()] == [r.step for r in rows]
        assert sorted(regraph.g.nodes) == sorted(graph.g.nodes)
    finally:
        store.close()
    assert again.stopped_by == "steps" and again.states == summary.states
    # a run keeps its strategy: resumed as SCALE it is a ConfigError that says how to resume it (before, the bfs
    # run went on as SCALE), and no model is loaded first (this one could not load)
    scale = ExploreConfig(strategy="scale", max_steps=8, seed=0)
    missing = ModelConfig(model=str(tmp_path / "no-such-model"))
    with pytest.raises(ConfigError, match="explored with strategy 'bfs', not 'scale': resume it with --strategy bfs"):
        await run_exploration(gone, scale, BrowserConfig(), missing, runs_dir=tmp_path, resume_run="bfs")
    # the CLI resumes a run with its own settings, the flags given on top: no --strategy needed
    cli = [sys.executable, "-m", "flows.cli", "explore", gone.start_url, "--resume", "bfs", "--runs-dir", str(tmp_path)]
    done = subprocess.run([*cli, "--json"], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    resumed = json.loads(done.stdout.strip().splitlines()[-1])
    assert resumed["strategy"] == "bfs" and resumed["steps"] == 4 and resumed["states"] == summary.states

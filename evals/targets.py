"""What `scalehop eval` runs, from its first argument: a WebArena-format task file, a bundled suite
(`bundled:<site>[:<split>]`) or MiniWoB++ (`miniwob[:<task,...>]`), as the harness's episodes."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from evals.evaluators import Similarity
from evals.harness import MiniWoBTask, WebEpisode
from evals.miniwob import TASK_TYPES, MiniWoBServer
from evals.tasks import HTTP_URL, Task, load_tasks
from explorer.config import SiteConfig, load_site_config
from explorer.errors import ConfigError


def site_configs(args: Sequence[str]) -> dict[str, SiteConfig]:
    """`--site NAME=URL` or `--site NAME=CONFIG` (a site config file: login steps, reset_url, policy) per site."""
    sites: dict[str, SiteConfig] = {}
    for arg in args:
        name, sep, value = arg.partition("=")
        name, value = name.strip().lower(), value.strip()
        if not sep or not name or not value:
            raise ConfigError(f"--site {arg!r}: use NAME=URL or NAME=site-config.toml, e.g. --site shop=http://host/")
        if name in sites:
            raise ConfigError(f"--site {name} is given twice: give each site once")
        if HTTP_URL.match(value):
            sites[name] = SiteConfig.from_url(value, name=name)
        elif Path(value).is_file():
            sites[name] = load_site_config(value).model_copy(update={"name": name})
        else:
            raise ConfigError(f"--site {arg!r}: {value} is neither an http(s) URL nor a site config file")
    return sites


def base_urls(sites: Mapping[str, SiteConfig]) -> dict[str, str]:
    """`name -> base URL` (the start URL of each site's config), what task placeholders are filled with."""
    return {name: site.start_url for name, site in sites.items()}


def split_spec(spec: str) -> tuple[str, str | None, str | None]:
    """`bundled:shop:dev` -> ("bundled", "shop", "dev"); `miniwob:click-button` -> ("miniwob", "click-button",
    None); a path -> ("file", path, None)."""
    kind, _, rest = spec.partition(":")
    if kind == "bundled":
        site, _, split = rest.partition(":")
        return "bundled", site or None, split or None
    if kind == "miniwob":
        return "miniwob", rest or None, None
    return "file", spec, None


def web_episodes(tasks: Sequence[Task], sites: Mapping[str, SiteConfig], similarity: Similarity | None):
    """The harness's episodes of WebArena-format tasks."""
    return [WebEpisode(task, sites, similarity) for task in tasks]


def miniwob_episodes(server: MiniWoBServer, types: str | None, episodes: int, seed: int = 0) -> list[MiniWoBTask]:
    """`episodes` seeded episodes (seeds seed, seed+1, ...) of each MiniWoB++ task type in `types` (comma
    separated; default: every type in TASK_TYPES)."""
    chosen = [t.strip() for t in types.split(",") if t.strip()] if types else list(TASK_TYPES)
    unknown = [t for t in chosen if t not in TASK_TYPES]
    if unknown:
        raise ConfigError(
            f"miniwob:{types}: unknown or unsupported task types {unknown}; known: {', '.join(TASK_TYPES)}"
        )
    if episodes < 1:
        raise ConfigError(f"--episodes {episodes}: run at least one episode per task type")
    return [MiniWoBTask(server, t, seed + i) for t in chosen for i in range(episodes)]


def file_tasks(path: str, sites: Mapping[str, SiteConfig]) -> list[Task]:
    """The tasks of a WebArena-format JSON file, placeholders filled from the sites' base URLs."""
    return load_tasks(path, base_urls(sites))

"""`scalehop schedule`: make prefect.yaml's deployments live on a Prefect server in one command.

It creates the work pools the deployments name (process pools), a tag concurrency limit of 1 per explored
site (`site:<name>`: one exploration per site at a time), and runs `prefect deploy --all`. Workers are then
started with `prefect worker start --pool <pool>` on any machine that has the repo.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

from explorer.config import load_site_config
from explorer.errors import ConfigError


def plan(prefect_yaml: Path) -> tuple[list[str], list[str]]:
    """(work pools, site tags) that prefect.yaml's deployments need."""
    if not prefect_yaml.is_file():
        raise ConfigError(f"{prefect_yaml}: no such file (run from the repo root or pass --file)")
    spec = yaml.safe_load(prefect_yaml.read_text()) or {}
    pools, tags = [], []
    for dep in spec.get("deployments") or []:
        pool = (dep.get("work_pool") or {}).get("name")
        if pool and pool not in pools:
            pools.append(pool)
        site = (dep.get("parameters") or {}).get("site")
        if site:
            tag = f"site:{load_site_config(str(prefect_yaml.parent / site)).name}"
            if tag not in tags:
                tags.append(tag)
    return pools, tags


def _prefect(*args: str, check: bool = True, cwd: Path | None = None) -> subprocess.CompletedProcess:
    exe = shutil.which("prefect") or str(Path(sys.executable).parent / "prefect")
    result = subprocess.run([exe, *args], capture_output=True, text=True, cwd=cwd)
    if check and result.returncode != 0:
        raise ConfigError(f"prefect {' '.join(args)} failed: {(result.stderr or result.stdout).strip()[-300:]}")
    return result


def schedule(prefect_yaml: Path) -> dict:
    """Create missing pools and site concurrency limits, then deploy everything in prefect.yaml."""
    pools, tags = plan(prefect_yaml)
    for pool in pools:
        if _prefect("work-pool", "inspect", pool, check=False).returncode != 0:
            _prefect("work-pool", "create", pool, "--type", "process")
    for tag in tags:
        _prefect("concurrency-limit", "create", tag, "1")
    where = prefect_yaml.resolve().parent  # entrypoints are relative to it; it becomes the runs' working dir
    deployed = _prefect("deploy", "--all", "--prefect-file", str(prefect_yaml.resolve()), "--no-prompt", cwd=where)
    return {"pools": pools, "site_limits": tags, "output": deployed.stdout.strip().splitlines()[-1:]}


def _cmd_schedule(args: argparse.Namespace) -> int:
    done = schedule(Path(args.file))
    print(f"work pools: {', '.join(done['pools'])}; one exploration at a time per {', '.join(done['site_limits'])}")
    print("deployed; start workers with: prefect worker start --pool <pool>")
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Add the `schedule` verb."""
    p = sub.add_parser("schedule", help="create work pools and per-site limits, then deploy prefect.yaml")
    p.add_argument("--file", default="prefect.yaml", help="the deployments file (default: ./prefect.yaml)")
    p.set_defaults(handler=_cmd_schedule)

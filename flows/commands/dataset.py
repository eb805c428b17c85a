"""`scalehop dataset build <run-dir>... [--recipe R] [--out D]` and `scalehop dataset stats <path>`."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from explorer.errors import ConfigError

if TYPE_CHECKING:
    from synthesis.stats import DatasetStats


def add_commands(sub: argparse._SubParsersAction) -> None:
    """Register the `dataset` verb and its subcommands."""
    ds = sub.add_parser("dataset", help="build Hugging Face datasets from exploration runs")
    ds_sub = ds.add_subparsers(dest="dataset_command", required=True)
    build = ds_sub.add_parser("build", help="single-step, multi-step and page-QA tasks from run folders")
    build.add_argument("runs", nargs="+", metavar="RUN_DIR", help="run folders (runs/<run_id>)")
    build.add_argument("--recipe", help="a recipe TOML file or a name under datasets/recipes/ (default: default)")
    build.add_argument("--out", help="output folder (default: <first run>/dataset)")
    build.add_argument("--generator", choices=["template", "model"], help="override the recipe's text generator")
    build.add_argument("--no-replay", action="store_true", help="skip replay validation (the site need not be up)")
    build.add_argument("--chromium", help="Chromium binary, or 'playwright' for Playwright's own build")
    build.add_argument("--json", action="store_true", help="print stats.json before the last line")
    build.set_defaults(handler=_cmd_build)
    stats = ds_sub.add_parser("stats", help="counts of a built dataset (its folder or stats.json)")
    stats.add_argument("path", help="a dataset folder or its stats.json")
    stats.add_argument("--json", action="store_true", help="print stats.json as is")
    stats.set_defaults(handler=_cmd_stats)


def _cmd_build(args: argparse.Namespace) -> int:
    import datasets
    from explorer.config import BrowserConfig
    from synthesis.build import build_dataset
    from synthesis.recipe import load_recipe

    datasets.disable_progress_bars()
    recipe = load_recipe(args.recipe)
    if args.generator or args.no_replay:
        gates = recipe.gates.model_copy(update={"replay": False}) if args.no_replay else recipe.gates
        recipe = recipe.model_copy(update={"generator": args.generator or recipe.generator, "gates": gates})
    result = build_dataset(args.runs, recipe, args.out, browser=BrowserConfig(executable=args.chromium))
    if args.json:
        print(result.stats.model_dump_json())
    else:
        print(render_stats(result.stats))
    print(result.out)
    return 0


def _cmd_stats(args: argparse.Namespace) -> int:
    from synthesis.stats import DatasetStats

    path = DatasetStats.path_in(args.path)
    if not path.is_file():
        raise ConfigError(f"{args.path}: no stats.json there; give a folder written by `scalehop dataset build`")
    stats = DatasetStats.load(path)  # an unreadable file is a one-line ArtifactError
    print(stats.model_dump_json(indent=1) if args.json else render_stats(stats))
    return 0


def render_stats(stats: DatasetStats) -> str:
    """A short human summary of stats.json."""
    gates, replay = stats.gates, stats.gates.replay
    lines = [f"recipe {stats.recipe}, generator {stats.generator}" + (f" ({stats.model})" if stats.model else "")]
    lines += [f"{t:>12s}: {n} rows ({stats.drafts.get(t, 0)} drafted)" for t, n in stats.counts.items()]
    for site, per in stats.by_site.items():
        lines.append(f"{site:>12s}: " + ", ".join(f"{t} {n}" for t, n in per.items()))
    rate = f"{replay.pass_rate:.0%}" if replay.pass_rate is not None else "-"
    lines.append(
        f"gates: format -{gates.format.dropped}, dedup -{gates.dedup.dropped}, "
        f"replay {replay.passed}/{replay.checked} ({rate})" + ("" if replay.enabled else " [off]")
    )
    if replay.by_site:
        per_site = ", ".join(f"{site} {rate:.0%}" for site, rate in replay.by_site.items() if rate is not None)
        causes = ", ".join(f"{cause} {n}" for cause, n in replay.causes.items())
        lines.append(f"replay by site: {per_site}" + (f"; drops by cause: {causes}" if causes else ""))
    lines.append("scrubbed: " + ", ".join(f"{k} {v}" for k, v in gates.scrub.items()))
    for drop in stats.drops:
        lines.append(f"  dropped {drop.task_type} {drop.id} at {drop.gate}: {drop.reason}")
    lines.append(f"seconds: {stats.seconds.get('total', 0):.1f}")
    return "\n".join(lines)

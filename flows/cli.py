"""The `scalehop` command line: one verb per stage, calling the same plain functions as the flows."""

from __future__ import annotations

import argparse
import asyncio
import importlib
import json
import logging
import sys
import typing
from pathlib import Path

from explorer.config import BrowserConfig, ExploreConfig, load_site_config, validated
from explorer.errors import ScalehopError
from explorer.models.config import ModelConfig
from flows.options import add_config_options, config_from_args

# The other verbs: each module has `add_commands(sub)`, which adds its parsers and binds each to its command
# function with `set_defaults(handler=...)`.
VERB_MODULES: tuple[str, ...] = (
    "flows.commands.report",
    "flows.commands.judge",
    "flows.schedule",
    "flows.commands.improve",
    "flows.commands.dataset",
    "flows.commands.eval",
    "flows.commands.train",
)


# ExploreConfig field -> the `explore` verb's flag
EXPLORE_FLAGS = {
    "strategy": "strategy",
    "hops": "hops",
    "max_steps": "steps",
    "steps_per_hop": "steps-per-hop",
    "stall_steps": "stall-steps",
    "verify_actions": "verify-actions",
    "search_probes": "search-probes",
    "memory": "memory",
    "contexts": "contexts",
    "max_seconds": "max-seconds",
    "seed": "seed",
}


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="scalehop", description=__doc__)
    p.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = p.add_subparsers(dest="command", required=True)

    sites = sub.add_parser("sites", help="the bundled demo sites")
    sites_sub = sites.add_subparsers(dest="sites_command", required=True)
    serve = sites_sub.add_parser("serve", help="serve shop, forum and classifieds on PORT, PORT+1, PORT+2")
    serve.add_argument("--host", default="127.0.0.1")
    serve.add_argument("--port", type=int, default=8700)
    serve.add_argument("--seed", type=int, default=0)
    serve.add_argument("--slow-seconds", type=float, default=30.0, help="delay of the slow-page trap")

    obs = sub.add_parser("observe", help="observe a site's start page: observation.json, screenshot.png, som.png")
    obs.add_argument("target", help="a start URL (http://, https://, file://) or a site config (.toml/.yaml)")
    obs.add_argument("--out", required=True, help="output folder")
    obs.add_argument("--chromium", help="Chromium binary, or 'playwright' for Playwright's own build")
    obs.add_argument("--json", action="store_true", help="print the observation summary as JSON")

    exp = sub.add_parser("explore", help="explore a site into a crash-safe run folder")
    exp.add_argument("target", help="a start URL or a site config (.toml/.yaml)")
    add_config_options(exp, ExploreConfig, EXPLORE_FLAGS)
    exp.add_argument("--runs-dir", default="runs")
    exp.add_argument("--run-id", help="name of a new run (default: timestamp-strategy-random)")
    exp.add_argument("--resume", metavar="RUN", help="continue the run RUN in --runs-dir")
    model_args(exp)
    exp.add_argument("--chromium", help="Chromium binary, or 'playwright' for Playwright's own build")
    exp.add_argument("--json", action="store_true", help="last line: a JSON summary of the run")

    step = sub.add_parser("step", help="one full SCALE step on a page: select, predict, act, diff, judge")
    step.add_argument("target", help="a start URL or a site config (.toml/.yaml)")
    step.add_argument("--element", type=int, metavar="MARK", help="act on this mark instead of asking the Selector")
    step.add_argument("--judge", choices=["rule", "llm"], default="rule")
    model_args(step)
    step.add_argument("--chromium", help="Chromium binary, or 'playwright' for Playwright's own build")
    step.add_argument("--json", action="store_true", help="print the step report as JSON")

    srv = sub.add_parser("serve-model", help="serve the local model behind an OpenAI-compatible /v1 API")
    srv.add_argument("--host", default="127.0.0.1")
    srv.add_argument("--port", type=int, default=8000)
    srv.add_argument("--model", default="smollm2-135m", help="the embedded alias or an HF model path")
    srv.add_argument("--adapter", action="append", default=[], metavar="NAME=PATH", help="serve a LoRA adapter")

    demo = sub.add_parser("demo", help="the end-to-end demo on the bundled sites")
    demo.add_argument("--out", default="runs/demo", help="where the demo writes its results")
    demo.add_argument("--chromium", help="Chromium binary, or 'playwright' for Playwright's own build")
    for module in VERB_MODULES:
        importlib.import_module(module).add_commands(sub)
    return p


def model_args(p: argparse.ArgumentParser) -> None:
    """The model options every model-calling verb shares (see `model_config`)."""
    p.add_argument("--model", default="smollm2-135m", help="the embedded alias, an HF model path, or a served name")
    p.add_argument(
        "--adapter", help="a LoRA adapter folder (local; openai: hot-loaded into the server) or a served adapter name"
    )
    p.add_argument("--backend", choices=["local", "openai"], default="local")
    p.add_argument("--base-url", help="OpenAI-compatible endpoint, e.g. http://gpu-box:8000/v1")
    p.add_argument(
        "--dtype",
        choices=typing.get_args(ModelConfig.model_fields["dtype"].annotation),
        help="local: the weights' dtype (default auto: bfloat16 on CUDA and on CPUs with native bfloat16, else "
        "float32). Greedy answers differ between dtypes: pin one to compare runs made on different machines",
    )
    p.add_argument("--threads", type=int, help="local: CPU threads (default: the cores this process may use)")


def model_config(args: argparse.Namespace):
    """A validated ModelConfig from the options of `model_args`."""
    fields = {"backend": args.backend, "model": args.model, "adapter": args.adapter}
    for name in ("base_url", "dtype", "threads"):
        if getattr(args, name, None) is not None:
            fields[name] = getattr(args, name)
    return validated(lambda: ModelConfig(**fields), "model options")


def _cmd_sites_serve(args: argparse.Namespace) -> int:
    from sites import serve_sites

    servers = serve_sites(host=args.host, port=args.port, seed=args.seed, slow_seconds=args.slow_seconds)
    for name, url in servers.urls.items():
        print(f"{name:12s} {url}")
    print("reset any site with POST <url>__reset; Ctrl-C stops", flush=True)
    servers.serve_forever()
    return 0


def _cmd_observe(args: argparse.Namespace) -> int:
    from explorer.first_look import observe_to_dir

    site = load_site_config(args.target)
    obs, out = asyncio.run(observe_to_dir(site, BrowserConfig(executable=args.chromium), args.out))
    summary = {"url": obs.url, "title": obs.title, "status": obs.status, "elements": len(obs.elements), "out": str(out)}
    if args.json:
        print(json.dumps(summary))
    else:
        print(obs.text)
        print(f"\n{len(obs.elements)} elements; wrote {out}/observation.json, screenshot.png, som.png")
    return 0


def run_accounting(run_dir: str) -> dict:
    """The run's per-role counts (calls, constrained, repairs, fallbacks) and seconds by part, from its meta."""
    from explorer.store import RunStore

    store = RunStore(Path(run_dir))
    try:
        meta = store.meta()
    finally:
        store.close()
    return {"roles": meta.roles, "seconds_by_part": meta.timings}


def _cmd_explore(args: argparse.Namespace) -> int:
    from explorer.run import run_exploration, stored_config

    site = load_site_config(args.target)
    kept = stored_config(args.runs_dir, args.resume) if args.resume else None  # a resumed run keeps its settings
    cfg = config_from_args(ExploreConfig, args, EXPLORE_FLAGS, base=kept)
    summary = asyncio.run(
        run_exploration(
            site,
            cfg,
            BrowserConfig(executable=args.chromium),
            model_config(args),
            runs_dir=args.runs_dir,
            run_id=args.run_id,
            resume_run=args.resume,
        )
    )
    fields = summary.model_dump(mode="json") | run_accounting(summary.run_dir)
    print(json.dumps(fields) if args.json else "\n".join(f"{k:>10s}: {v}" for k, v in fields.items()))
    if (summary.stopped_by or "").startswith("site down"):
        print(
            f"scalehop: error: {site.start_url} stopped answering ({summary.stopped_by}); run {summary.run_id} keeps"
            f" its {summary.steps} steps: resume it with `scalehop explore {args.target} --resume {summary.run_id}`",
            file=sys.stderr,
        )
        return 2
    return 0


def _cmd_step(args: argparse.Namespace) -> int:
    from explorer.step import render, run_step

    site = load_site_config(args.target)
    report = asyncio.run(
        run_step(site, BrowserConfig(executable=args.chromium), model_config(args), mark=args.element, judge=args.judge)
    )
    print(report.model_dump_json(indent=2) if args.json else render(report))
    return 0


def _cmd_serve_model(args: argparse.Namespace) -> int:
    from explorer.errors import ConfigError
    from explorer.models import serve

    adapters = {}
    for spec in args.adapter:
        name, sep, path = spec.partition("=")
        if not sep or not name or not path:
            raise ConfigError(f"--adapter {spec!r}: write NAME=PATH")
        adapters[name] = path
    config = validated(lambda: ModelConfig(model=args.model), "model options")
    print(f"serving {args.model} at http://{args.host}:{args.port}/v1 (adapters: {', '.join(adapters) or 'none'})")
    serve(config, args.host, args.port, adapters)
    return 0


def _cmd_demo(args: argparse.Namespace) -> int:
    from flows.demo import run_demo

    run_demo(out=args.out, chromium=args.chromium)
    return 0


_COMMANDS = {
    "serve": _cmd_sites_serve,
    "observe": _cmd_observe,
    "explore": _cmd_explore,
    "step": _cmd_step,
    "serve-model": _cmd_serve_model,
    "demo": _cmd_demo,
}


def main(argv: list[str] | None = None) -> int:
    """Entry point of the `scalehop` console script. User errors print one line and exit 2."""
    args = _parser().parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.WARNING, format="%(levelname)s %(message)s")
    command = getattr(args, "sites_command", None) or args.command
    handler = getattr(args, "handler", None) or _COMMANDS[command]
    try:
        return handler(args)
    except ScalehopError as exc:
        print(f"scalehop: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("scalehop: interrupted; committed steps are saved (continue a run with --resume RUN)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

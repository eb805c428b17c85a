"""`scalehop demo`: the whole job on the bundled sites with the embedded model, through the Prefect flows.

serve the sites -> self_improve (explore every site concurrently, build the round's dataset, train a LoRA round
on the failures and the dataset's tasks, evaluate on held-out pages and on dev tasks, gate) -> task success of
the base model and the adopted one on the bundled test split -> explore again with the adopted model -> build
the dataset of every run -> write the HTML report. Prefect runs the flows on its temporary local server unless
PREFECT_API_URL is set.
"""

from __future__ import annotations

import asyncio
import shutil
import time
import warnings
from pathlib import Path

from evals.results import Score
from explorer.config import ExploreConfig, SiteConfig
from explorer.errors import ScalehopError
from explorer.models import ModelConfig
from explorer.summary import RunSummary
from flows.dataset import build_dataset
from flows.explore import explore_site
from flows.improve import self_improve
from flows.progress import Heartbeat
from flows.reporting import report
from sites import serve_sites
from synthesis.stats import DatasetStats
from training.config import TrainConfig
from training.state import ImproveState
from training.tasks import TaskEvalConfig, evaluate_tasks

# A budget that fits in about 10 minutes on 2 CPU cores (see the README's demo section).
EXPLORE = ExploreConfig(max_steps=20, steps_per_hop=5, stall_steps=2, verify_actions=1, seed=0)
EXPLORE_AGAIN = ExploreConfig(max_steps=6, steps_per_hop=5, stall_steps=2, verify_actions=1, seed=1)
TRAIN = TrainConfig(epochs=2, max_steps=12, batch_size=4, seed=0)  # max_length 1024: every Actor example fits
DEV = TaskEvalConfig(limit=1, max_steps=4)  # the round's gate: the first dev task of each site, paired
TEST = TaskEvalConfig(split="test", limit=2, max_steps=4)  # reported: the first two test tasks of each site
DATASET_LIMIT = 4  # drafts per task type and run: replay validation costs a few seconds per multi-step task


class DemoError(ScalehopError):
    """A demo stage that failed (the others ran; their outputs stay)."""


def bundled_site_configs(urls: dict[str, str]) -> list[SiteConfig]:
    """SiteConfigs for the bundled sites served at `urls` (name -> base URL)."""
    return [SiteConfig(name=name, start_url=url, reset_url=url + "__reset") for name, url in urls.items()]


async def _explore_again(sites: list[SiteConfig], out: Path, adapter: Path | None) -> list[RunSummary]:
    model = ModelConfig(adapter=None if adapter is None else str(adapter))
    runs = str(out / "explore-again")
    return list(
        await asyncio.gather(*(explore_site(s, EXPLORE_AGAIN, model, runs_dir=runs, run_id=s.name) for s in sites))
    )


def _quiet_libraries() -> None:
    """Progress bars and a third-party deprecation warning would drown the demo's own lines."""
    from transformers.utils import logging as hf_logging

    import datasets

    datasets.disable_progress_bars()
    hf_logging.disable_progress_bar()
    warnings.filterwarnings("ignore", message=".*is_gradient_checkpointing.*", category=FutureWarning)


def run_demo(out: str | Path = "runs/demo", chromium: str | None = None) -> dict:
    """Run the whole job into `out` and print where everything went; returns the paths. A stage that fails is
    reported and the later stages still run on what the earlier ones wrote (the report always is written); the
    demo then exits non-zero."""
    out = Path(out)
    t0 = time.perf_counter()
    _quiet_libraries()
    failed: list[str] = []

    def stage(text: str) -> None:
        print(f"[{time.perf_counter() - t0:4.0f} s] {text}", flush=True)

    def attempt(name: str, fn, *args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except Exception as e:  # noqa: BLE001 - keep what the earlier stages wrote, say what failed, go on
            failed.append(f"{name}: {type(e).__name__}: {e}")
            print(f"  stage failed: {failed[-1]}", flush=True)
            return None

    for old in (
        "improve",
        "eval",
        "explore-again",
        "dataset",
        "report.html",
    ):  # the demo's own outputs of a previous run
        if (out / old).is_dir():
            shutil.rmtree(out / old)
        else:
            (out / old).unlink(missing_ok=True)
    root = out / "improve"
    improve = again = stats = page = None
    servers = serve_sites(port=0, slow_seconds=5)
    try:
        with Heartbeat(out, stage):  # a line of what moved under `out` every 20 s: runs, training, evaluations
            sites = bundled_site_configs(servers.urls)
            print(f"scalehop demo: {', '.join(servers.urls)} served at {', '.join(servers.urls.values())}")
            stage("1/5 self-improvement round: explore each site (SCALE-Hop, embedded model), train, evaluate, gate")
            improve = attempt(
                "self-improvement",
                lambda: asyncio.run(
                    self_improve(
                        sites,
                        rounds=1,
                        runs_dir=str(out),
                        improve_id="improve",
                        explore=EXPLORE,
                        train=TRAIN,
                        chromium=chromium,
                        task_eval=DEV,
                    )
                ),
            )
            adapter = improve.adopted(root) if improve is not None else None
            candidate = _rejected_candidate(improve, root)
            stage(
                "2/5 task success on the bundled test split: the base model and the round's adapter (the Actor), "
                + ("adopted" if adapter else "rejected by the gate" if candidate else "none trained")
            )
            tested = attempt("test tasks", test_tasks, sites, out / "eval", adapter, chromium, candidate) or {}
            stage(f"3/5 explore again with {'adapter ' + str(adapter) if adapter else 'the base model'}")
            again = attempt("explore again", lambda: asyncio.run(_explore_again(sites, out, adapter))) or []
            stage("4/5 build the dataset of every run")
            # the demo's own run folders (those of a failed stage too), not any run.sqlite below `out`
            found = [*root.glob("explore/round-*/*/run.sqlite"), *(out / "explore-again").glob("*/run.sqlite")]
            runs = [str(p.parent) for p in sorted(found)]
            stats = attempt("dataset", build_dataset, runs, None, str(out / "dataset"), DATASET_LIMIT) if runs else None
            stage("5/5 write the report")
            page = attempt("report", report, str(out))
    finally:
        servers.stop()
    _print_summary(improve, again, stats, tested)
    paths = {"improve": root, "dataset": out / "dataset", "report": Path(page) if page else None}
    print(f"\nself-improvement run (improve.json, explore/, adapters/): {root}")
    print(f"explorations with the adopted model: {out / 'explore-again'}")
    print(f"dataset (save_to_disk in hf/, parquet/, README.md card, stats.json): {paths['dataset']}")
    print(f"done in {time.perf_counter() - t0:.0f} s; the report: {page}")
    if failed:
        raise DemoError("; ".join(failed))
    return paths


def _rejected_candidate(improve: ImproveState | None, root: Path) -> Path | None:
    """The last round's adapter when the gate rejected it (None when it was adopted or nothing was trained)."""
    last = improve.rounds[-1] if improve is not None and improve.rounds else None
    return None if last is None or last.adopted or last.adapter is None else root / last.adapter


def test_tasks(
    sites: list[SiteConfig], out: Path, adapter: Path | None, chromium: str | None, candidate: Path | None = None
) -> dict[str, Score]:
    """Task success on the bundled test split (TEST): the floors (random, ranker), the Actor with the base model,
    with the adopted `adapter` (if any) and with a `candidate` the gate rejected (if any): name -> Score. The
    rejected one is measured too, so the demo shows what the gate turned down."""
    from evals.results import score
    from explorer.config import BrowserConfig
    from explorer.models import load_model

    model, browser = load_model(ModelConfig()), BrowserConfig(executable=chromium)
    floor = {  # the floors need no model: a random element, and the element closest to the task (the ranking)
        f"{name} (floor)": score(evaluate_tasks(None, None, TEST, sites, out / name, browser, name))
        for name in ("random", "ranker")
    }
    models = {"base": None} | ({"adopted": adapter} if adapter is not None else {})
    models |= {"rejected": candidate} if candidate is not None else {}
    return floor | {
        name: score(evaluate_tasks(model, a, TEST, sites, out / name, browser)) for name, a in models.items()
    }


def _print_summary(
    improve: ImproveState | None, again: list[RunSummary], stats: DatasetStats | None, tested: dict[str, Score]
) -> None:
    for r in improve.rounds if improve is not None else []:
        print(f"\nround {r.round}:", f"{r.failures} failure samples of {r.transitions} transitions;")
        views = ", ".join(f"{v} {n}" for v, n in r.examples_by_view.items())
        skipped = (r.train or {}).get("skipped_too_long", 0)
        print(f"  trained on {r.train_examples - skipped} examples ({views}; {skipped} too long, skipped)")
        if r.tasks is not None:
            print(f"  dev tasks: {r.tasks.describe()}")
        acc = {
            name: None if e is None else e.predictor_accuracy for name, e in (("base", r.before), ("adapter", r.after))
        }
        print(
            f"  held-out Predictor accuracy ({r.heldout} transitions): floor {r.floor.accuracy if r.floor else None}"
            f" (know-nothing: {r.floor.answer if r.floor else '-'}), base {acc['base']} -> adapter {acc['adapter']};"
            f" {'adopted' if r.adopted else 'rejected'} ({r.reason})"
        )
    for name, sc in tested.items():
        cost = f", {sc.tokens_per_trajectory:.0f} tokens each" if sc.tokens_per_trajectory else ""
        print(f"test split, {name}: SR {sc.sr:.3f} on {sc.n} tasks, AS {sc.avg_steps:.2f}{cost}")
    if tested and "adopted" not in tested:
        print("  (no adapter was adopted: the base model is the one in use; `rejected` is the round's adapter)")
    for a in again:
        print(f"  explore again {a.run_id}: {a.steps} steps, {a.states} states, {a.failures} failures")
    if stats is not None:
        print("dataset rows:", ", ".join(f"{k} {v}" for k, v in stats.counts.items()))

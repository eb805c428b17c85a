"""The evaluation harness: run a policy on tasks in real Chromium and grade each by its own check.

A task is an `Episode`: WebArena-format web tasks (`WebEpisode`, graded by `evals.evaluators`) or MiniWoB++
episodes (`MiniWoBTask`, graded by the task's own JavaScript reward). Each episode gets a fresh browser context
(its own cookies); the policy observes, decides, and the browser acts, until the policy stops, the task says
done (MiniWoB) or the step budget ends. Every finished task's result is written at once, so a killed
evaluation resumes without re-running finished tasks.
"""

from __future__ import annotations

import shutil
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Protocol

from evals.evaluators import CheckResult, Similarity, evaluate_task
from evals.miniwob import MiniWoBEpisode, MiniWoBServer
from evals.policy import HistoryItem, Policy
from evals.results import EvalRun, StepTrace, TaskResult, result_path
from evals.tasks import Task
from explorer.blobs import Blobs
from explorer.browser import Chromium, ObserveError
from explorer.config import BrowserConfig, SiteConfig, origin_of
from explorer.errors import ConfigError, ScalehopError, SiteUnreachable
from explorer.records import Observation

Grade = tuple[bool, float, str, list[CheckResult]]  # success, score, reason, checks


class Episode(Protocol):
    """One task as the harness runs it."""

    task_id: str
    intent: str

    def site(self) -> SiteConfig:
        """The site config its browser context is opened with (start URL, allowed origins, reset, login)."""
        ...

    async def begin(self, session) -> None:
        """Bring the session to the task's start (reset first when the task says so)."""
        ...

    async def finished(self) -> bool:
        """Has the task itself ended the episode (MiniWoB's done flag)?"""
        ...

    async def grade(self, session, answer: str | None) -> Grade:
        """The task's own verdict on the episode."""
        ...


class WebEpisode:
    """A WebArena-format task on web sites given as `name -> SiteConfig` (start URL = the site's base)."""

    def __init__(self, task: Task, sites: Mapping[str, SiteConfig], similarity: Similarity | None = None):
        self.task, self.sites, self.similarity = task, sites, similarity
        self.task_id, self.intent = str(task.task_id), task.intent
        missing = [s for s in task.sites if s not in sites]
        if missing:
            raise ConfigError(f"task {task.task_id}: no site config for {missing}: pass --site NAME=URL for each")

    def site(self) -> SiteConfig:
        """The task's first site's config, starting at the task's start URL, allowed every given site's origins."""
        home = self.sites[self.task.sites[0]] if self.task.sites else None
        origins = sorted({o for s in self.sites.values() for o in s.allowed_origins} | {origin_of(self.task.start_url)})
        base = home or SiteConfig.from_url(self.task.start_url)
        return base.model_copy(update={"start_url": self.task.start_url, "allowed_origins": origins})

    async def begin(self, session) -> None:
        """Reset the site first when the task requires it (the site config's reset URL), then go to the start."""
        if self.task.require_reset:
            if not session.site.reset_url:
                raise ConfigError(
                    f"task {self.task_id} requires a reset and site {session.site.name!r} has no reset_url: "
                    "give --site NAME=CONFIG with a reset_url"
                )
            await session.reset()
        else:
            await session.start()

    async def finished(self) -> bool:
        """Web tasks end only when the agent stops (or the budget ends)."""
        return False

    async def grade(self, session, answer: str | None) -> Grade:
        """WebArena's evaluators on the answer, the last URL and the agent's own browser context."""
        verdict = await evaluate_task(self.task, answer, session.page.url, session.context, self.similarity)
        return verdict.success, verdict.score, verdict.reason, verdict.checks


# MiniWoB++ tasks end themselves after ~10 s (core.EPISODE_MAX_TIME), a limit set for RL agents acting in
# milliseconds; a language model on a CPU takes longer than that per step, so every episode would time out. As
# BrowserGym does for LLM agents (its `episode_max_time`), the harness lifts it to 1000 s; the step budget bounds
# an episode instead.
AGENT_TIME_LIMIT_MS = 1_000_000


class MiniWoBTask:
    """One seeded MiniWoB++ episode of a task type, served by `server` (`time_limit_ms`: the episode's limit)."""

    def __init__(
        self, server: MiniWoBServer, task_type: str, seed: int, time_limit_ms: int | None = AGENT_TIME_LIMIT_MS
    ):
        self.server, self.task_type, self.seed, self.time_limit_ms = server, task_type, seed, time_limit_ms
        self.task_id, self.intent = f"{task_type}:{seed}", ""
        self.episode: MiniWoBEpisode | None = None

    def site(self) -> SiteConfig:
        """The MiniWoB server's site config for this task type."""
        return self.server.site(self.task_type)

    async def begin(self, session) -> None:
        """Load the task page and start the seeded episode; the task's utterance becomes the intent."""
        self.episode = await MiniWoBEpisode(
            session, self.task_type, self.seed, time_limit_ms=self.time_limit_ms
        ).start()
        self.intent = self.episode.intent

    async def finished(self) -> bool:
        """The task's done flag (answered, failed or timed out)."""
        return await self.episode.done()

    async def grade(self, session, answer: str | None) -> Grade:
        """The task's own reward: success when positive; an unfinished episode is ended with reward 0."""
        status = await self.episode.status()
        if not status.done:
            await self.episode.stop()
            status = await self.episode.status()
        reason = f"reward {status.reward:.2f} (raw {status.raw_reward:.0f})" + (
            f": {status.reason}" if status.reason else ""
        )
        check = CheckResult(eval_type="miniwob_reward", score=float(status.reward > 0), reason=reason)
        return status.reward > 0, max(status.reward, 0.0), reason, [check]


async def run_episode(
    chromium: Chromium, episode: Episode, policy: Policy, max_steps: int, blobs: Blobs, suite: str
) -> TaskResult:
    """Run `policy` on one episode in a fresh browser context and grade it; never raises for a page fault."""
    t0 = time.perf_counter()
    session = await chromium.new_session(episode.site())
    if hasattr(policy, "begin_episode"):
        policy.begin_episode(episode.task_id)
    trace: list[StepTrace] = []
    history: list[HistoryItem] = []
    answer, ended, before = None, "max_steps", None
    try:
        await episode.begin(session)
        while len(history) < max_steps:
            if await episode.finished():
                ended = "done"
                break
            obs = await session.observe()
            if history and before is not None:
                history[-1].changed = _changed(before, obs)
            decision = await policy.decide(episode.intent, obs, history)
            shot = blobs.put(obs.som_screenshot or obs.screenshot)
            step = StepTrace(
                step=len(trace),
                url=obs.url,
                action=decision.action,
                reasoning=decision.reasoning,
                system=decision.system,
                confidence=decision.confidence,
                fallback=decision.fallback,
                tokens=decision.tokens,
                screenshot=shot,
            )
            trace.append(step)
            if decision.action.kind == "stop":
                answer, ended = decision.action.answer, "stop"
                break
            outcome = await session.act(decision.action, obs)
            step.error = outcome.error
            history.append(HistoryItem(action=decision.action, url=obs.url, changed=outcome.url_after != obs.url))
            before = obs
        else:
            if await episode.finished():
                ended = "done"
        success, score, reason, checks = await episode.grade(session, answer)
    except SiteUnreachable:
        raise  # not the agent's failure: the evaluation stops there (run_eval) and resumes later
    except (ScalehopError, ObserveError) as exc:
        success, score, reason, checks, ended = False, 0.0, f"error: {str(exc).splitlines()[0]}", [], "error"
    finally:
        await session.close()
    return TaskResult(
        task_id=episode.task_id,
        suite=suite,
        intent=episode.intent,
        success=success,
        score=score,
        steps=len(history),
        answer=answer,
        reason=reason if ended != "max_steps" or success else f"{reason} (step budget {max_steps} ended)",
        checks=checks,
        trajectory=trace,
        tokens=sum(s.tokens for s in trace),
        fallbacks=sum(s.fallback for s in trace),
        seconds=round(time.perf_counter() - t0, 2),
        ended_by=ended,
    )


def _changed(before: Observation, after: Observation) -> bool:
    """Did the last action change the page (URL, text or elements)?"""
    return before.url != after.url or before.text != after.text


async def run_eval(
    episodes: Sequence[Episode],
    policy: Policy,
    folder: str | Path,
    run: EvalRun,
    browser: BrowserConfig,
    *,
    progress: bool = True,
) -> list[TaskResult]:
    """Run every episode whose result is not on disk yet (a killed evaluation resumes), writing each result as it
    ends; returns all results in task order. A site that cannot be reached stops the evaluation with
    SiteUnreachable: no task is graded on it, a new folder with no result is removed, finished results stay."""
    folder = Path(folder)
    created = not folder.exists()
    _open_run(folder, run)
    blobs = Blobs(folder / "blobs")
    origins = sorted({o for e in episodes for o in e.site().allowed_origins})
    todo = [e for e in episodes if not result_path(folder, e.task_id).exists()]
    bar = _bar(len(episodes), len(episodes) - len(todo), run, progress)
    try:
        async with await Chromium.launch(browser, origins) as chromium:
            for episode in todo:
                result = await run_episode(chromium, episode, policy, run.max_steps, blobs, run.suite)
                result.save(result_path(folder, episode.task_id))
                if bar is not None:
                    bar.update(1)
                    bar.set_postfix_str(f"{episode.task_id}: {'ok' if result.success else 'fail'}")
    except SiteUnreachable as exc:
        done = sum(result_path(folder, e.task_id).exists() for e in episodes)
        if done == 0 and created:
            shutil.rmtree(folder, ignore_errors=True)
            raise
        raise SiteUnreachable(f"{exc} {done} of {len(episodes)} tasks are done and kept in {folder}: run the same "
                              "command again to resume") from None  # fmt: skip
    finally:
        if bar is not None:
            bar.close()
    return [TaskResult.load(result_path(folder, e.task_id)) for e in episodes]


def check_run(folder: str | Path, run: EvalRun) -> None:
    """Refuse a folder that holds another evaluation (a ConfigError naming what differs); the same one may be
    resumed."""
    if EvalRun.path_in(folder).exists() and (diff := EvalRun.load(folder).differs(run)):
        raise ConfigError(f"{folder} holds another evaluation (its {', '.join(diff)} differ): choose another --out")


def _open_run(folder: Path, run: EvalRun) -> None:
    """Write eval.json, or check that the folder holds the same evaluation (to resume it)."""
    check_run(folder, run)
    if not EvalRun.path_in(folder).exists():
        run.save(folder)


def _bar(total: int, done: int, run: EvalRun, progress: bool):
    """A tqdm progress bar on stderr (None when not wanted)."""
    if not progress:
        return None
    from tqdm import tqdm

    return tqdm(total=total, initial=done, desc=f"eval {run.suite} [{run.policy}]", unit="task", file=sys.stderr)

"""Batches concurrent requests to one LocalModel: a worker thread drains the queue and runs like requests together.

With continuous batching (the default for text-only models: `continuous.py`) a request joins the running batch
at its next decode step, and leaves it when it ends. Without it there is no waiting window either: while one
batch runs, new requests queue up, and they form the next batch. So a lone request
runs at once, and under load batches grow by themselves (up to the model's batch size). Requests that differ in
grammar, token limit or role still share a batch (`LocalModel.generate_rows`); only the weights (adapter),
temperature and stop strings must agree. Option scores (the Predictor's outcome kind) queued together are scored
in one forward pass too (`LocalModel.option_scores_many`), before the generations queued with them.
`serve-model` batches its HTTP requests here, and `BatchedModel` puts SCALE's browser contexts, each in its own
thread, on one model the same way.
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass, field

from explorer.models.base import Generation, Message
from explorer.models.continuous import ContinuousBatch, Request
from explorer.models.local import LocalModel, Options, Row


@dataclass(frozen=True)
class Job:
    """One request; jobs with equal `key` (adapter, temperature, stop) run in one batch."""

    messages: Sequence[Message]
    images: Sequence[bytes] | None
    adapter: str | None  # None: the model's default adapter (or the base model)
    max_tokens: int | None
    temperature: float
    stop: tuple[str, ...]
    grammar: str | None = None  # a regex the completion must match
    role: str | None = None  # accounted to; None: the served name
    use_adapter: bool = True  # False: the base model's weights
    future: Future = field(default_factory=Future, compare=False)

    @property
    def key(self) -> tuple:
        """What must be equal for two jobs to share a batch."""
        return (self.adapter, self.use_adapter, self.temperature, self.stop)


@dataclass(frozen=True)
class Scoring:
    """One option-scoring request; those with equal `use_adapter` are scored in one forward pass."""

    options: Options
    use_adapter: bool = True
    future: Future = field(default_factory=Future, compare=False)


@dataclass(frozen=True)
class _Call:
    """Work that needs the model to itself: run on the worker thread, between batches."""

    fn: Callable[[], object]
    future: Future = field(default_factory=Future, compare=False)


class Batcher:
    """Runs submitted jobs on one worker thread, batching those that queued up together; with `continuous` (the
    model config's `continuous_batching`, text-only models) jobs join the running batch between decode steps
    (`continuous.py`) instead of waiting for it to end."""

    def __init__(self, model: LocalModel, continuous: bool | None = None) -> None:
        self.model = model
        if continuous is None:
            continuous = model.config.continuous_batching and not model.is_vlm
        self.continuous = continuous
        self._queue: queue.SimpleQueue[list[Job] | Scoring | _Call | None] = queue.SimpleQueue()
        work = self._work_continuous if continuous else self._work
        self._thread = threading.Thread(target=work, name="model-batcher", daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> Future:
        """Queue a job; its future resolves to a Generation (or the model's exception)."""
        return self.submit_many([job])[0]

    def submit_many(self, jobs: Sequence[Job]) -> list[Future]:
        """Queue jobs together (they reach the same batch where their keys agree); their futures, in order."""
        self._queue.put(list(jobs))
        return [j.future for j in jobs]

    def score(self, scoring: Scoring) -> Future:
        """Queue option scores; the future resolves to the list of scores (or the model's exception)."""
        self._queue.put(scoring)
        return scoring.future

    def call(self, fn: Callable[[], object]) -> Future:
        """Run `fn()` on the worker thread, alone; its future resolves to the result (or the exception)."""
        item = _Call(fn)
        self._queue.put(item)
        return item.future

    def close(self) -> None:
        """Stop the worker after the jobs already queued."""
        self._queue.put(None)
        self._thread.join()

    def _work(self) -> None:
        while (first := self._queue.get()) is not None:
            items, jobs = [first], 0
            while jobs < 4 * self.model.config.batch_size:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is None:
                    self._queue.put(None)  # finish this round, then stop
                    break
                items.append(item)
                jobs += len(item) if isinstance(item, list) else 0
            groups: dict[tuple, list[Job]] = {}
            for job in self._dispatch(items):
                groups.setdefault(job.key, []).append(job)
            for group in groups.values():
                self._run(group)

    def _work_continuous(self) -> None:
        batch: ContinuousBatch | None = None
        waiting: list[Job] = []
        stopping = False
        while not (stopping and batch is None and not waiting):
            idle = batch is None and not waiting
            items = self._take(block=idle and not stopping)
            stopping = stopping or None in items
            waiting += self._dispatch(items)
            if batch is None and waiting:
                head = waiting[0]
                batch = ContinuousBatch(
                    self.model,
                    adapter=head.adapter,
                    use_adapter=head.use_adapter,
                    temperature=head.temperature,
                    stop=head.stop,
                )
            if batch is None:
                continue
            room = self.model.config.batch_size - len(batch)
            joining = [j for j in waiting if j.key == batch.key][: max(room, 0)]
            waiting = [j for j in waiting if all(j is not k for k in joining)]
            requests = [Request(j.messages, j.max_tokens, j.grammar, self._role(j), j.future) for j in joining]
            try:
                if requests:
                    batch.admit(requests)
                batch.step()
            except Exception as exc:  # noqa: BLE001 - the callers see it; the worker lives on
                batch.fail(exc, requests)
            if not len(batch):
                batch = None

    def _dispatch(self, items: list) -> list[Job]:
        """Run the calls among `items` (in order) and their option scores (one pass per weights); return their
        generation jobs, in order, for the caller to batch."""
        jobs: list[Job] = []
        scorings: dict[bool, list[Scoring]] = {}
        for item in items:
            if isinstance(item, _Call):
                _settle(item.future, item.fn)
            elif isinstance(item, Scoring):
                scorings.setdefault(item.use_adapter, []).append(item)
            elif item is not None:
                jobs += item
        for use_adapter, asks in scorings.items():
            self._score(asks, use_adapter)
        return jobs

    def _take(self, block: bool) -> list:
        """What the queue holds now (waiting for one item when `block`)."""
        items = []
        if block:
            items.append(self._queue.get())
        while True:
            try:
                items.append(self._queue.get_nowait())
            except queue.Empty:
                return items

    def _role(self, job: Job) -> str:
        """The role a job is accounted to."""
        return job.role or job.adapter or self.model.model_id

    def _score(self, asks: list[Scoring], use_adapter: bool) -> None:
        options = [a.options for a in asks]
        _resolve([a.future for a in asks], lambda: self.model.option_scores_many(options, use_adapter=use_adapter))

    def _run(self, group: list[Job]) -> None:
        head = group[0]
        rows = [Row(j.messages, j.images, j.max_tokens, j.grammar, self._role(j)) for j in group]
        _resolve(
            [j.future for j in group],
            lambda: self.model.generate_rows(
                rows,
                temperature=head.temperature,
                stop=list(head.stop),
                use_adapter=head.use_adapter,
                adapter=head.adapter,
            ),
        )


def _resolve(futures: list[Future], fn: Callable[[], list]) -> None:
    """Resolve each future with its item of `fn()`, or every one with its exception (the callers see the model's
    error; the worker lives on)."""
    try:
        results = fn()
    except Exception as exc:
        for future in futures:
            future.set_exception(exc)
        return
    for future, result in zip(futures, results, strict=True):
        future.set_result(result)


def _settle(future: Future, fn: Callable[[], object]) -> None:
    """Resolve `future` with `fn()`, or with its exception."""
    try:
        future.set_result(fn())
    except Exception as exc:
        future.set_exception(exc)


_CALL = {"adapter": None, "max_tokens": None, "temperature": 0.0}  # generate_batch defaults Job lacks


class BatchedModel:
    """A LocalModel shared by threads (SCALE's browser contexts, each running its roles in a thread): every call
    runs on one worker thread, and generations that queue up together run as one batch, whatever their role,
    grammar or token limit, each row on its own cached prefix. Everything else is the wrapped model's."""

    merges_calls = True  # callers need no lock of their own around model calls

    def __init__(self, model: LocalModel, continuous: bool | None = None) -> None:
        self.model = model
        self.batcher = Batcher(model, continuous)

    def __getattr__(self, name: str):
        return getattr(self.model, name)

    def generate(self, messages: Sequence[Message], images: Sequence[bytes] | None = None, **kwargs) -> Generation:
        """Answer one conversation (see ChatModel), batched with what other threads ask meanwhile."""
        return self.generate_batch([messages], images=[images], **kwargs)[0]

    def generate_batch(self, conversations: Sequence[Sequence[Message]], *, images=None, **call) -> list[Generation]:
        """Answer several conversations (see ChatModel; `call`: its keywords, `adapter` too), in order, in the
        worker thread's batches."""
        images = list(images) if images is not None else [None] * len(conversations)
        stop = tuple(call.pop("stop", None) or ())
        jobs = [Job(c, im, stop=stop, **(_CALL | call)) for c, im in zip(conversations, images, strict=True)]
        return [f.result() for f in self.batcher.submit_many(jobs)]

    def option_scores(
        self, messages: Sequence[Message], options: Sequence[str], *, images=None, role=None, use_adapter=True
    ) -> list[float]:
        """The wrapped model's option scores (see LocalModel), scored with what other threads ask meanwhile."""
        ask = Scoring(Options(messages, options, images, role), use_adapter)
        return self.batcher.score(ask).result()

    choose = LocalModel.choose  # the argmax of `option_scores`: this class's, through the batcher

    def close(self) -> None:
        """Stop the worker thread (the model stays loaded)."""
        self.batcher.close()

"""Batches concurrent requests to one LocalModel: a worker thread drains the queue and runs like requests together.

No waiting window: while one batch runs, new requests queue up, and they form the next batch. So a lone request
runs at once, and under load batches grow by themselves (up to the model's batch size).
"""

from __future__ import annotations

import queue
import threading
from concurrent.futures import Future
from dataclasses import dataclass, field

from explorer.models.base import Generation, Message
from explorer.models.local import LocalModel


@dataclass(frozen=True)
class Job:
    """One request; jobs with equal `key` (adapter, max_tokens, temperature, stop, grammar) run in one batch."""

    messages: list[Message]
    images: list[bytes]
    adapter: str | None  # None: the base model
    max_tokens: int | None
    temperature: float
    stop: tuple[str, ...]
    grammar: str | None = None  # a regex the completion must match
    future: Future = field(default_factory=Future, compare=False)

    @property
    def key(self) -> tuple:
        """What must be equal for two jobs to share a batch."""
        return (self.adapter, self.max_tokens, self.temperature, self.stop, self.grammar)


class Batcher:
    """Runs submitted jobs on one worker thread, batching those that queued up together."""

    def __init__(self, model: LocalModel) -> None:
        self.model = model
        self._queue: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._work, name="model-batcher", daemon=True)
        self._thread.start()

    def submit(self, job: Job) -> Future:
        """Queue a job; its future resolves to a Generation (or the model's exception)."""
        self._queue.put(job)
        return job.future

    def close(self) -> None:
        """Stop the worker after the jobs already queued."""
        self._queue.put(None)
        self._thread.join()

    def _work(self) -> None:
        while (first := self._queue.get()) is not None:
            jobs = [first]
            while len(jobs) < 4 * self.model.config.batch_size:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                if job is None:
                    self._queue.put(None)  # finish this round, then stop
                    break
                jobs.append(job)
            groups: dict[tuple, list[Job]] = {}
            for job in jobs:
                groups.setdefault(job.key, []).append(job)
            for group in groups.values():
                self._run(group)

    def _run(self, group: list[Job]) -> None:
        head = group[0]
        try:
            results: list[Generation] = self.model.generate_batch(
                [j.messages for j in group],
                images=[j.images for j in group],
                max_tokens=head.max_tokens,
                temperature=head.temperature,
                stop=list(head.stop),
                role=head.adapter or self.model.model_id,  # the server accounts usage per served name
                use_adapter=head.adapter is not None,
                adapter=head.adapter,
                grammar=head.grammar,
            )
        except Exception as exc:  # the callers see the model's error; the worker lives on
            for j in group:
                j.future.set_exception(exc)
            return
        for j, result in zip(group, results, strict=True):
            j.future.set_result(result)

"""Queueing a large study's jobs behind its workers (a 100,000-item study starts in under a second).

Queueing every job of a 100,000-item study before the first worker starts took 16 s (1.2M INSERTs, then again on
every start, for nothing new). The run queues the first items' jobs itself (``service.judging.plan_judge``) and this
thread the rest, in chunks of items, each chunk one short write transaction, so workers lease between them. The
workers' drain rule waits for it (``Worker.fed``): a queue empty before the last chunk lands is not a drained one.
It starts once a worker's first job has ended (``Progress.working``), or a worker found nothing to lease: queueing
while the API client library was being imported (a second of pure Python) made the launch -> first request as long
as both, and a chunk queued while the first request was being made held the write lock its worker needed first.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path

from tui_rater.judge import queue
from tui_rater.judge.errors import JudgeError
from tui_rater.judge.worker import Progress
from tui_rater.store.jobs import Shape
from tui_rater.store.study import Study

CHUNK_ITEMS = 2000  # about 24,000 jobs of a Likert task, 0.1 s of writing: a Ctrl-C waits for one chunk at most


@dataclass(frozen=True)
class Span:
    """A task's items ``start`` to ``start + count`` (import order) whose jobs are still to be queued."""

    task: str
    shapes: list[Shape]
    start: int
    count: int


class Feeder(threading.Thread):
    def __init__(
        self,
        db_path: str | Path,
        rater_id: int,
        spans: list[Span],
        *,
        progress: Progress,
        stop: threading.Event,
        chunk_items: int = CHUNK_ITEMS,
    ):
        super().__init__(daemon=True, name=f"judge-{rater_id}-feeder")
        self.db_path, self.rater_id, self.spans, self.chunk_items = db_path, rater_id, spans, chunk_items
        self.progress, self.stop_event = progress, stop
        self.added = 0  # jobs this thread added (read by the progress bar: its total grows as chunks land)
        self.items_done = 0
        self.fed = threading.Event()  # set when every span is queued, or the feeding stopped

    @property
    def left(self) -> int:
        """Items whose jobs are not queued yet (as of the last chunk)."""
        return sum(span.count for span in self.spans) - self.items_done

    def run(self) -> None:
        try:
            # behind the workers' start: a worker's first job ended (the client library imported, the model loaded,
            # a first request made) or a worker finding the queue empty; until then the first items' jobs (queued by
            # the plan) are theirs
            while not self.progress.working.wait(0.05):
                if self.stop_event.is_set():
                    return
            study = Study.open(self.db_path, create=False, durable=False)
            try:
                self._feed(study)
            finally:
                study.close()
        except Exception as exc:  # the study failing under us: the judge stops visibly, as a worker's fault does
            self.progress.fatal = JudgeError(
                "internal", f"queueing the judge's jobs failed: {type(exc).__name__}: {exc}"
            )
            self.stop_event.set()
        finally:
            self.fed.set()
            self.progress.add()  # wakes the workers waiting for a lease: the last chunk is in, or none comes

    def _feed(self, study: Study) -> None:
        for span in self.spans:
            for start in range(span.start, span.start + span.count, self.chunk_items):
                if self.stop_event.is_set():
                    return
                count = min(self.chunk_items, span.start + span.count - start)
                self.added += queue.enqueue_task(study, self.rater_id, span.task, span.shapes, start, count)
                self.items_done += count
                self.progress.add()

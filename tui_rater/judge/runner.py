"""Judges running in the background of another program (the app): start, summarise, stop."""

from __future__ import annotations

import threading

from tui_rater.judge import queue
from tui_rater.judge.spec import JudgeSpec, provenance, rater_name
from tui_rater.judge.worker import Progress, Worker, jobs_for, run_judge
from tui_rater.store.study import Study


class JudgeRunner:
    """Enqueue each judge's missing work for a task and keep its workers draining the queue."""

    def __init__(self, study: Study, task_name: str, specs: list[JudgeSpec], workers_per_judge: int = 1):
        self.stop_event = threading.Event()
        self.threads: list[Worker] = []
        self.progress: list[tuple[str, Progress]] = []
        task = study.task(task_name)
        keys = [item.key for item in study.items(task_name)]
        for spec in specs:
            config = provenance(spec)
            rater = study.judge(rater_name(spec, config), config)
            attributes, samples = jobs_for(task, spec)
            queue.enqueue(study, rater.id, keys, attributes, samples)
            threads, progress, _ = run_judge(
                study.path,
                rater.id,
                spec,
                config,
                drain=False,
                workers=workers_per_judge if not spec.is_api else 4,
                stop=self.stop_event,
            )
            self.threads.extend(threads)
            self.progress.append((rater.name.split("/")[0], progress))

    def summary(self) -> str:
        parts = []
        for name, progress in self.progress:
            state = f"stopped: {progress.fatal.kind}" if progress.fatal else f"{progress.done} done"
            if progress.failed:
                state += f", {progress.failed} failed"
            parts.append(f"{name[:20]} {state}")
        return "judges: " + "; ".join(parts)

    def stop(self, timeout: float = 5.0) -> None:
        self.stop_event.set()
        for thread in self.threads:
            thread.join(timeout)

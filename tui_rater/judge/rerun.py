"""One stored job asked again through the real engine, answered by the model and never by the store's cache
(``tui-rater verify --rerun``): the same prompt, settings and per-job seed as the judge's run, so a local judge
gives the same bits (batch-invariant engine: ``tests/judge/test_reproducible.py``)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tui_rater.domain.decoding import Decoding
from tui_rater.judge.backends.base import Backend, Message
from tui_rater.judge.queue import Job, RatingResult
from tui_rater.judge.spec import JudgeSpec
from tui_rater.judge.worker import Progress, Worker, make_backend
from tui_rater.store.study import Study


def spec_of_provenance(config: dict[str, Any], model_file: str | Path) -> JudgeSpec | str:
    """The judge a local judge's stored provenance describes, with its model at ``model_file``; or why it cannot
    be made again (the provenance keeps a custom chat template only as its hash)."""
    if config.get("backend") != "llama.cpp":
        return "it is not a local judge"
    if "chat_template_sha256" in config:
        return "it was run with a chat template of its own, which the study keeps only as a hash"
    try:
        return JudgeSpec(
            model=str(model_file),
            mode=str(config["mode"]),
            variant=str(config["variant"]),
            decoding=Decoding.of_record(config),
            conversation=bool(config.get("conversation", False)),
            max_retries=int(config["max_retries"]),
            min_mass=float(config["min_mass"]),
            n_ctx=int(config["n_ctx"]),
            extra=dict(config.get("extra") or {}),
            judge_name=config.get("judge_name"),
        )
    except (KeyError, TypeError, ValueError) as exc:
        return f"its stored provenance lacks a setting ({type(exc).__name__}: {exc})"


class Rerunner(Worker):
    """A worker that asks one job at a time, outside the queue, and never answers from the store."""

    def __init__(self, study: Study, rater_id: int, spec: JudgeSpec, config: dict[str, Any]):
        super().__init__(study.path, rater_id, spec, config, progress=Progress(), stop=threading.Event())
        self.study = study
        self.replies = {}
        self.backend: Backend | None = make_backend(spec, parallel=1)

    def rerun(self, job: Job) -> list[RatingResult]:
        """The ratings the job gives now (a JudgeError when it fails)."""
        item = self.study.item(job.item_key)
        task = self.study.task(item.task)
        if job.attribute == "*":
            return self._conversation(task, item, job)
        return self._question(task, task.attribute(job.attribute), item, job, [])[0]

    def _cached(self, messages: list[Message], seed: object, compute: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        return compute()  # the model answers, not the replies the run stored

    def close(self) -> None:
        if self.backend is not None:
            self.backend.close()
            self.backend = None

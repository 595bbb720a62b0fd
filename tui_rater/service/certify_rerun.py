"""``tui-rater verify --rerun N``: N randomly chosen local-judge jobs asked again through the real engine, with the
same model file and settings, their replies and distributions compared bit for bit with the stored ones.

The jobs are drawn with ``random.Random(seed).sample`` from the done jobs of the certified tasks' local judges,
in job-id order (so the same seed draws the same jobs of the same study). The model file is the one the study's own
judge table recorded (``judge_sources``), never a path from the certificate; its SHA-256 is computed afresh (not
taken from the hash cache) and compared with the judge's provenance first.
"""

from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tui_rater.domain import certificate as cert
from tui_rater.judge.errors import JudgeError
from tui_rater.judge.queue import Job, RatingResult
from tui_rater.judge.rerun import Rerunner, spec_of_provenance
from tui_rater.store import certified
from tui_rater.store.study import Study


@dataclass
class Rerun:
    """What the rerun found: differences (one line each) and what it did (notes)."""

    differences: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    jobs: int = 0  # jobs asked again
    available: int = 0  # the local-judge jobs the study holds: at most this many can be rerun


def _file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def rerun_jobs(study: Study, tasks: list[str], count: int, seed: int) -> Rerun:
    """Ask ``count`` of the local judges' done jobs again (see the module's docstring)."""
    found = Rerun()
    judges = {r.name: r for r in study.raters("llm") if (r.config or {}).get("backend") == "llama.cpp"}
    pool = [(name, job) for task in tasks for name in sorted(judges) for job in certified.done_jobs(study, task, name)]
    pool.sort(key=lambda pair: pair[1][0])
    chosen = random.Random(seed).sample(pool, min(count, len(pool)))
    found.available = len(pool)
    found.notes.append(
        f"rerun: {len(chosen)} of {len(pool)} local-judge jobs drawn with seed {seed} "
        f"(jobs {', '.join(str(job[0]) for _, job in sorted(chosen, key=lambda p: p[1][0])) or 'none'})"
    )
    for name in sorted({name for name, _ in chosen}):
        jobs = [job for judge, job in chosen if judge == name]
        _rerun_judge(study, judges[name].id, name, judges[name].config or {}, jobs, found)
    return found


def _rerun_judge(
    study: Study, rater_id: int, name: str, config: dict[str, Any], jobs: list[tuple[Any, ...]], found: Rerun
) -> None:
    files = certified.model_files(study, name)
    existing = [Path(f) for f in files if Path(f).is_file()]
    if not existing:
        where = ", ".join(repr(f) for f in files) or "none recorded"
        found.differences.append(f"judge {name!r}: its model file is not here ({where}): its jobs cannot be rerun")
        return
    model = existing[-1]  # the latest the study recorded
    recorded = config.get("model_sha256")
    actual = _file_sha256(model)
    if actual != recorded:
        found.differences.append(
            f"judge {name!r}: model file {str(model)!r} has SHA-256 {actual}, but the judge's provenance says "
            f"{recorded!r}: the file changed since it judged"
        )
    else:
        found.notes.append(f"judge {name!r}: model file {str(model)!r} matches its provenance's SHA-256")
    spec = spec_of_provenance(config, model)
    if isinstance(spec, str):
        found.differences.append(f"judge {name!r}: cannot be rerun: {spec}")
        return
    try:
        runner = Rerunner(study, rater_id, spec, config)
    except JudgeError as exc:
        found.differences.append(f"judge {name!r}: its model cannot be loaded: {exc.message}")
        return
    try:
        numerics = getattr(getattr(getattr(runner.backend, "engine", None), "ctx", None), "numerics", None)
        if numerics is not None and config.get("numerics") is not None and numerics != config["numerics"]:
            found.notes.append(
                f"judge {name!r}: llama.cpp computes here with numerics {numerics}, the judge's run with "
                f"{config['numerics']}: bits may differ for that reason"
            )
        for job_id, item_key, attribute, sample, presentation, attempts in jobs:
            job = Job(job_id, item_key, attribute, rater_id, sample, attempts, presentation)
            try:
                results = runner.rerun(job)
            except JudgeError as exc:
                found.differences.append(f"job {job_id} (judge {name!r}): the rerun failed: {exc.kind}: {exc.message}")
                continue
            found.jobs += 1
            found.differences += _compare(study, job_id, name, results)
    finally:
        runner.close()


def _compare(study: Study, job_id: int, judge: str, results: list[RatingResult]) -> list[str]:
    stored = {(attribute, sample): rest for attribute, sample, *rest in certified.job_ratings(study, job_id)}
    lines = []
    again = {(r.attribute, r.sample): r for r in results}
    for key in sorted(set(stored) | set(again), key=lambda k: (k[0], k[1])):
        where = f"job {job_id} (judge {judge!r}, question {key[0]!r}, sample {key[1]})"
        if key not in again:
            lines.append(f"{where}: stored, but the rerun gave no such rating")
            continue
        if key not in stored:
            lines.append(f"{where}: the rerun gave a rating the study does not hold")
            continue
        value, raw, status, details = stored[key]
        result = again[key]
        if raw != result.raw:
            lines.append(f"{where}: the rerun's reply text differs from the stored reply")
        # through JSON, as the store keeps them: the same bits or not
        fresh = json.loads(json.dumps(result.details)) if result.details is not None else None
        if cert.canonical(details) != cert.canonical(fresh):
            lines.append(f"{where}: the rerun's distribution / reading details differ in bits from the stored ones")
        if cert.canonical(value) != cert.canonical(result.value) or status != result.parse_status:
            lines.append(
                f"{where}: the rerun's value is {result.value!r} ({result.parse_status}), stored {value!r} ({status})"
            )
    return lines

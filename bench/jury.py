"""A jury over 10,000 items with 3 members (issue 32 item 1: builds in < 2 s), as a ratio to reading the members'
ratings, in one run.

The study: one 1-5 question on 10,000 items; three judges, each with a distribution pass per item (3 samples drawn
from it, the distribution stored with sample 0, as ``--mode distribution`` stores them). Timed, best of ``--repeat``:
  read   -- the report's read of the ratings in force (``stats/sections/data.load_all``), what any report pays;
  jury   -- the jury's values added to that frame (``stats/jury.with_juries``), per rule: what a jury adds.

    nice python bench/jury.py [--items 10000] [--repeat 3]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

import numpy as np

from tui_rater.domain.tasks import task_from_definition
from tui_rater.service.juries import JuryOptions, make_jury
from tui_rater.stats.jury import _jury_rows as jury_rows
from tui_rater.stats.jury import with_juries
from tui_rater.stats.sections.data import load_all
from tui_rater.store.db import utc_now, write
from tui_rater.store.juries import list_juries
from tui_rater.store.study import Study

TASK = {
    "name": "bench-jury",
    "instructions": "Rate the text.",
    "fields": ["text"],
    "attributes": [
        {"name": "quality", "question": "How good? (1-5)", "scale": {"kind": "likert", "low": 1, "high": 5}}
    ],
}


def build(db: Path, items: int, seed: int = 1) -> Study:
    study = Study.open(db)
    task = task_from_definition(TASK)
    study.add_items(task, [{"id": f"i{k}", "system": "s", "text": f"text {k}"} for k in range(items)])
    keys = [item.key for item in study.items(task.name)]
    rng = np.random.default_rng(seed)
    now = utc_now()
    for m in range(3):
        judge = study.judge(f"member-{m}", {"api_model": f"m{m}", "mode": "distribution", "variant": "plain"})
        p = rng.dirichlet(np.ones(5), size=len(keys))
        rows = []
        for key, dist in zip(keys, p):
            details = json.dumps({"distribution": {str(v + 1): float(x) for v, x in enumerate(dist)}, "mass": 0.9})
            for sample, value in enumerate(rng.choice(5, size=3, p=dist) + 1):
                rows.append(
                    (key, "quality", judge.id, sample, float(value), "ok", now, details if sample == 0 else None)
                )
        with write(study._db) as conn:
            conn.executemany(
                "INSERT INTO ratings (item_key, attribute, rater_id, sample, value, parse_status, created_at, details) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                rows,
            )
    return study


def best(seconds: list[float]) -> float:
    return min(seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--items", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()[0]:.1f}")
    with tempfile.TemporaryDirectory() as folder:
        study = build(Path(folder) / "jury.db", args.items)
        task = study.task(TASK["name"])
        members = ("member-0", "member-1", "member-2")
        for rule in ("mean", "median", "vote", "distribution"):
            make_jury(study, JuryOptions(f"jury-{rule}", members, rule, task.name))
        juries = {j.label: j for j in list_juries(study)}
        reads = []
        for _ in range(args.repeat):
            start = time.perf_counter()
            frame, readings = load_all(study, task.name)
            reads.append(time.perf_counter() - start)
        read = best(reads)
        figures: dict[str, float] = {"items": args.items, "read_s": round(read, 4)}
        print(f"{args.items} items x 3 members x 3 samples: reading the ratings {read:.3f} s (best of {args.repeat})")
        print("| rule | jury built (s) | ratio to reading the members' ratings | target < 2 s |")
        print("|---|---|---|---|")
        for rule in ("mean", "median", "vote", "distribution"):
            # each rule's jury alone (what one jury adds to a report)
            only = juries[f"jury-{rule}"]
            times = []
            for _ in range(args.repeat):
                start = time.perf_counter()
                rows, _ = jury_rows(study, task, only, frame, readings)
                times.append(time.perf_counter() - start)
            built = best(times)
            assert rows.height == args.items, (rule, rows.height)
            print(f"| {rule} | {built:.3f} | {built / read:.2f}x | {'yes' if built < 2 else 'NO'} |")
            figures[f"{rule}_s"] = round(built, 4)
        start = time.perf_counter()
        with_juries(study, task, frame, readings)
        figures["all_four_s"] = round(time.perf_counter() - start, 4)
        print(f"all four juries at once: {figures['all_four_s']:.3f} s")
        print(json.dumps(figures))
        study.close()


if __name__ == "__main__":
    main()

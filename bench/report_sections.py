"""Report sections timed in-process (issue 35 item 2): before / after on the same study, interleaved.

For each checkout of ``--repos`` (``LABEL=PATH``, each its own ``PYTHONPATH``: a "before" is a ``git worktree`` of
main) and each of ``--rounds`` rounds, a fresh process opens a copy of ``--db`` (the original is never written),
builds the report's data (not timed), draws the item-bootstrap resample counts the sections share with the rest of
the report (``intervals._all_counts``, once a report; not timed) and runs the ``--sections`` named, in report
order, each timed. The records they wrote are compared between checkouts byte for byte (JSON). Prints a table and
the load average; one JSON line (also bench/runs/report_sections-STUDY-LABELS.json).

    python bench/report_sections.py --db study.db [--repos before=/tmp/old,after=.] [--sections verdict,convergence]
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def inner(db: str, sections: list[str], out: str) -> None:
    """One checkout's run (``--inner``): the sections' seconds and records into ``out``."""
    import numpy as np

    from tui_rater.stats import intervals as iv
    from tui_rater.stats.records import ALL
    from tui_rater.stats.report import Report
    from tui_rater.stats.sections import SECTIONS
    from tui_rater.store.study import Study

    study = Study.open(db, create=False)
    task = study.task(study.item_task_names()[0])
    start = time.perf_counter()
    report = Report(study, task)
    seconds = {"load": time.perf_counter() - start}
    start = time.perf_counter()
    for attribute in task.attributes:  # the alt-test's item counts: the resamples it draws over
        people = [report.rater_values(h, attribute, ALL) for h in report.humans]
        if len(people) >= 3:
            twice = np.sum([~np.isnan(p) for p in people], axis=0) >= 2
            for judge in report.judges:
                iv._all_counts(int(np.sum(twice & ~np.isnan(report.item_values(judge, attribute, ALL)))))
    seconds["draws"] = time.perf_counter() - start
    named = {section.name: attributes for section, attributes in report.sections()}
    report.records = []
    for name in sections:
        start = time.perf_counter()
        report._compute(SECTIONS[name], named.get(name, []))
        seconds[name] = time.perf_counter() - start
    records = [dataclasses.asdict(r) for r in report.records]
    Path(out).write_text(json.dumps({"seconds": seconds, "records": records}, default=str, sort_keys=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--db", help="the study (copied; never written)")
    parser.add_argument("--repos", default=f"after={ROOT}")
    parser.add_argument("--sections", default="verdict,convergence")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--inner", nargs=2, metavar=("DB", "OUT"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    sections = args.sections.split(",")
    if args.inner:
        inner(args.inner[0], sections, args.inner[1])
        return
    if not args.db:
        parser.error("--db STUDY is needed")
    repos = dict(item.split("=", 1) for item in args.repos.split(","))
    rows: list[dict[str, object]] = []
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / "study.db"
        shutil.copyfile(args.db, copy)
        records: dict[str, str] = {}
        for round_ in range(args.rounds):
            for label, repo in repos.items():
                out = Path(tmp) / f"{label}.json"
                env = {**os.environ, "PYTHONPATH": str(Path(repo).resolve())}
                command = [sys.executable, __file__, "--sections", args.sections, "--inner", str(copy), str(out)]
                subprocess.run(command, env=env, check=True)
                found = json.loads(out.read_text())
                records[label] = json.dumps(found["records"], sort_keys=True)
                rows.append({"label": label, "round": round_, "load": os.getloadavg()[0], **found["seconds"]})
                print(
                    f"{label:>8} round {round_}: "
                    + "  ".join(f"{k} {v:.2f} s" for k, v in found["seconds"].items())
                    + f"  (load {os.getloadavg()[0]:.1f})",
                    flush=True,
                )
    identical = len(set(records.values())) == 1
    print("records identical across checkouts:", identical)
    summary = {"db": args.db, "sections": sections, "identical": identical, "runs": rows}
    runs = ROOT / "bench" / "runs"
    runs.mkdir(exist_ok=True)
    (runs / f"report_sections-{Path(args.db).stem}-{'-'.join(repos)}.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary))


if __name__ == "__main__":
    main()

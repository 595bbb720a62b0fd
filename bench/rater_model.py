"""The reliability model's cost in the report (issue 33 item 4): the whole report on a study, and the `reliability`
section alone (the model fitted on every question, its item bootstrap), in one run; the section's share of the
report is the figure that travels. Default: the demo study (`tui-rater demo`); `--items N` a generated study of N
items x 5 ratings (bench/app_and_stats.py's `build_study`); `--db` a study already built (e.g. by
bench/study_scale.py; read, never written: pass a copy), with `--sections-only` to skip the whole report there and
time the `reliability` and `ceiling` sections alone (issue 35: 250 s for the report at 100k stories).

    python bench/rater_model.py [--items 20000 | --db COPY.db [--sections-only]]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=0, help="a generated study of this many items (0: the demo)")
    parser.add_argument("--db", type=Path, help="a study already built (a copy: the report opens it)")
    parser.add_argument("--sections-only", action="store_true", help="time the sections, not the whole report")
    args = parser.parse_args()
    from tui_rater.stats.report import Report
    from tui_rater.stats.sections import SECTIONS
    from tui_rater.store.study import Study

    with tempfile.TemporaryDirectory() as folder:
        db = args.db or Path(folder) / "bench.db"
        if args.db:
            pass
        elif args.items:
            from app_and_stats import build_study

            build_study(db, args.items, args.items * 5).close()
        else:
            subprocess.run(
                [sys.executable, "-m", "tui_rater.cli", "demo", "--no-app", "--db", str(db)],
                check=True,
                capture_output=True,
                cwd=folder,
            )
        study = Study.open(db)
        figures: dict[str, object] = {
            "bench": "rater_model",
            "items": args.items or (args.db.name if args.db else "demo"),
        }
        report_s = section_s = ceiling_s = section_cpu = ceiling_cpu = 0.0
        ratings = 0
        for name in study.item_task_names():
            task = study.task(name)
            again = Report(study, task)
            ratings += len(again.frame)
            if not args.sections_only:
                start = time.perf_counter()
                Report(study, task).build()
                report_s += time.perf_counter() - start
            named = [a for a in task.attributes if "reliability" in again.protocol(a).report_sections]
            start, cpu = time.perf_counter(), time.process_time()  # CPU seconds: what a loaded machine inflates less
            again._compute(SECTIONS["reliability"], named)
            section_s += time.perf_counter() - start
            section_cpu += time.process_time() - cpu
            start, cpu = time.perf_counter(), time.process_time()  # on every question a judge read
            again._compute(SECTIONS["ceiling"], list(task.attributes))
            ceiling_s += time.perf_counter() - start
            ceiling_cpu += time.process_time() - cpu
        figures.update(ratings=ratings, report_s=round(report_s, 3), reliability_s=round(section_s, 3))
        figures.update(reliability_cpu_s=round(section_cpu, 3), ceiling_s=round(ceiling_s, 3))
        figures["ceiling_cpu_s"] = round(ceiling_cpu, 3)
        figures["reliability_share"] = round(section_s / report_s, 3) if report_s else None
        print(
            f"report {report_s:.2f} s on {ratings:,} ratings; reliability section {section_s:.2f} s "
            f"({figures['reliability_share']} of the report)"
        )
        print(json.dumps(figures))


if __name__ == "__main__":
    main()

"""The reliability model's cost in the report (issue 33 item 4): the whole report on a study, and the `reliability`
section alone (the model fitted on every question, its item bootstrap), in one run; the section's share of the
report is the figure that travels. Default: the demo study (`tui-rater demo`); `--items N` a generated study of N
items x 5 ratings (bench/app_and_stats.py's `build_study`).

    python bench/rater_model.py [--items 20000]
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
    args = parser.parse_args()
    from tui_rater.stats.report import Report
    from tui_rater.stats.sections import SECTIONS
    from tui_rater.store.study import Study

    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "bench.db"
        if args.items:
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
        figures: dict[str, object] = {"bench": "rater_model", "items": args.items or "demo"}
        report_s = section_s = 0.0
        ratings = 0
        for name in study.item_task_names():
            task = study.task(name)
            start = time.perf_counter()
            report = Report(study, task)
            report.build()
            report_s += time.perf_counter() - start
            ratings += len(report.frame)
            named = [a for a in task.attributes if "reliability" in report.protocol(a).report_sections]
            again = Report(study, task)
            start = time.perf_counter()
            again._compute(SECTIONS["reliability"], named)
            section_s += time.perf_counter() - start
        figures.update(ratings=ratings, report_s=round(report_s, 3), reliability_s=round(section_s, 3))
        figures["reliability_share"] = round(section_s / report_s, 3) if report_s else None
        print(
            f"report {report_s:.2f} s on {ratings:,} ratings; reliability section {section_s:.2f} s "
            f"({figures['reliability_share']} of the report)"
        )
        print(json.dumps(figures))


if __name__ == "__main__":
    main()

"""Seconds per section of `report` on one study, in-process (issue 35 item 2): where a large study's report spends
its time, section by section, without a profiler's overhead.

    PYTHONPATH=$PWD .venv/bin/python bench/report_profile.py --db STUDY.db [--json OUT.json]

Prints one line per section run (seconds, summed over the tasks), then the seconds spent in each bootstrap interval
function of ``stats/intervals.py`` and ``stats/gwet.py`` (all calls, whichever section made them; the figure that
first asks for a draw of the resample counts includes that draw -- ``_draw_all`` is also shown alone), and the
total. Open a copy of a study: the report only reads, but the study is opened as `report` opens it.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from tui_rater.service.reports import build_reports
from tui_rater.stats import gwet
from tui_rater.stats import intervals as iv
from tui_rater.stats import report as report_module
from tui_rater.store.study import Study

FUNCTIONS = (
    "mean",
    "percent_exact",
    "alpha",
    "kendall_tau",
    "spearman",
    "pearson",
    "weighted_kappa",
    "exact_agreement",
    "_draw_all",
)


def _clocked(function: Callable[..., Any], name: str, into: dict[str, float]) -> Callable[..., Any]:
    def clocked(*args: Any, **kwargs: Any) -> Any:
        start = time.perf_counter()
        try:
            return function(*args, **kwargs)
        finally:
            into[name] = into.get(name, 0.0) + time.perf_counter() - start

    return clocked


def _peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # KiB on Linux


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", type=Path, required=True)
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    sections: dict[str, float] = {}
    peaks: dict[str, float] = {}  # the process's peak RSS (MB) once the section has run: which one raised it
    functions: dict[str, float] = {}
    original = report_module.Report._compute

    def timed(self: report_module.Report, section: Any, attributes: Any) -> Any:
        start = time.perf_counter()
        try:
            return original(self, section, attributes)
        finally:
            sections[section.name] = sections.get(section.name, 0.0) + time.perf_counter() - start
            peaks[section.name] = _peak_mb()

    report_module.Report._compute = timed  # type: ignore[method-assign]
    for module, names in ((iv, FUNCTIONS), (gwet, ("ac",))):
        for name in names:
            if hasattr(module, name):
                setattr(module, name, _clocked(getattr(module, name), f"{module.__name__}.{name}", functions))
    study = Study.open(args.db, create=False, readonly=True)
    load = os.getloadavg()[0]
    start = time.perf_counter()
    original_load = report_module.load_all

    def timed_load(*args: Any, **kwargs: Any) -> Any:
        began = time.perf_counter()
        try:
            return original_load(*args, **kwargs)
        finally:
            sections["(load)"] = sections.get("(load)", 0.0) + time.perf_counter() - began
            peaks["(load)"] = _peak_mb()

    report_module.load_all = timed_load  # type: ignore[assignment]
    build_reports(study, None)
    total = time.perf_counter() - start
    for name, seconds in sorted(sections.items(), key=lambda kv: -kv[1]):
        print(f"{name:40s} {seconds:8.2f} s   peak so far {peaks[name]:6.0f} MB")
    for name, seconds in sorted(functions.items(), key=lambda kv: -kv[1]):
        print(f"  {name:38s} {seconds:8.2f} s")
    peak = _peak_mb()
    print(f"{'total (build_reports)':40s} {total:8.2f} s   load {load:.2f} -> {os.getloadavg()[0]:.2f}, {peak:.0f} MB")
    if args.json:
        record = {
            "sections": sections,
            "peaks_mb": peaks,
            "functions": functions,
            "total": total,
            "load": load,
            "peak_mb": peak,
        }
        args.json.write_text(json.dumps(record, indent=1))


if __name__ == "__main__":
    main()

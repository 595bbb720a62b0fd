"""The report on the demo study (issue 33's target: under 10 s on this machine) and what its uncertainty costs.

Two measures in one run, on `tui-rater demo --no-app`'s study (HANNA: 3 people and an LLM, 96 stories x 6
questions, and the news-title tasks):

- `tui-rater report --format json` and `--format html`, each a fresh process, best of 3: wall seconds and CPU
  seconds (user + system, of the child);
- the same JSON report built in this process under cProfile: the cumulative seconds inside each of the functions
  that compute an interval or a standard error by resampling -- the agreement figures' item bootstrap
  (``intervals.with_interval``), the alt-test's ω / ρ (``alt_intervals.alt_test_intervals``), the bias cards
  (``bias.*``), the persons' ceiling (``ceiling.leave_one_person_out``) and the rater model with its 50-resample
  bootstrap (``rater_model.fit_model``) -- beside the profiled report's total (cProfile slows both alike; the
  shares are the figure that travels).

    python bench/report_demo.py

Prints a table and one JSON line.
"""

from __future__ import annotations

import cProfile
import json
import os
import pstats
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

BOOTSTRAPS = {  # (module file, function) -> what it is
    ("intervals.py", "with_interval"): "agreement figures (item bootstrap, 1000)",
    ("alt_intervals.py", "alt_test_intervals"): "alt-test ω / ρ (item bootstrap, 1000)",
    ("bias.py", "mean_difference"): "bias card: leniency",
    ("bias.py", "length_slope"): "bias card: length slope",
    ("bias.py", "group_difference"): "bias card: self-preference",
    ("bias.py", "ratio"): "bias card: position / order",
    ("ceiling.py", "leave_one_person_out"): "persons' ceiling",
    ("rater_model.py", "fit_model"): "rater model (fit + 50 resamples)",
}


def child_run(args: list[str]) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    began = time.perf_counter()
    subprocess.run([sys.executable, "-m", "tui_rater.cli", *args], check=True, capture_output=True)
    wall = time.perf_counter() - began
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main() -> None:
    from tui_rater.service.reports import build_reports
    from tui_rater.store.study import Study

    out: dict[str, object] = {"bench": "report_demo", "cpus": os.cpu_count(), "load": os.getloadavg()}
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "demo.db"
        subprocess.run(
            [sys.executable, "-m", "tui_rater.cli", "demo", "--no-app", "--db", str(db)],
            check=True,
            capture_output=True,
            cwd=folder,
        )
        for fmt in ("json", "html"):
            runs = [
                child_run(["report", "--db", str(db), "--format", fmt, "--out", f"{folder}/r.{fmt}"]) for _ in range(3)
            ]
            wall, cpu = min(runs)
            out[f"report_{fmt}_wall_s"], out[f"report_{fmt}_cpu_s"] = round(wall, 3), round(cpu, 3)
        study = Study.open(db)
        profile = cProfile.Profile()
        began = time.perf_counter()
        profile.enable()
        build_reports(study, None)
        profile.disable()
        total = time.perf_counter() - began
        study.close()
    stats = pstats.Stats(profile).stats  # type: ignore[attr-defined]
    parts: dict[str, float] = {}
    for (path, _line, name), (_cc, _nc, _tt, cumulative, _callers) in stats.items():
        what = BOOTSTRAPS.get((Path(path).name, name))
        if what is not None and "tui_rater/stats" in path:
            parts[what] = parts.get(what, 0.0) + cumulative
    out["profiled_report_s"] = round(total, 3)
    out["uncertainty_s"] = {k: round(v, 3) for k, v in sorted(parts.items(), key=lambda kv: -kv[1])}
    share = sum(parts.values()) / total if total else 0.0
    out["uncertainty_share"] = round(share, 3)
    print(f"report --format json: {out['report_json_wall_s']} s wall, {out['report_json_cpu_s']} CPU-s (best of 3)")
    print(f"report --format html: {out['report_html_wall_s']} s wall, {out['report_html_cpu_s']} CPU-s (best of 3)")
    print(f"profiled report: {total:.2f} s, of which computing intervals / SEs ({share:.0%}, may overlap):")
    for what, seconds in sorted(parts.items(), key=lambda kv: -kv[1]):
        print(f"  {seconds:6.2f} s  {what}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()

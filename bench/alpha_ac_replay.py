"""The report's α and Gwet's AC bootstraps alone, before and after (issue 35 item 2, bench/RESULTS.md §11 run 13).

``capture`` runs ``tui-rater report --format json`` on a study in-process and keeps every matrix handed to
``intervals.alpha`` and ``gwet.ac`` (the inputs do not depend on the code that computes them); ``replay`` calls them
again with whichever tui-rater ``PYTHONPATH`` names, after drawing each n's resamples once (the report does that
for all its figures: not these figures' cost), and prints the seconds per kind, the load average and a JSON line.
Compare two replays of one capture, run one after the other (a worktree of the old code for the first)::

    PYTHONPATH=$PWD python bench/alpha_ac_replay.py capture --db COPY.db --out calls.pkl
    PYTHONPATH=/tmp/old python bench/alpha_ac_replay.py replay calls.pkl --out old.json
    PYTHONPATH=$PWD python bench/alpha_ac_replay.py replay calls.pkl --out new.json
"""

from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np


def capture(db: str, out: str) -> None:
    from tui_rater.cli import main
    from tui_rater.stats import gwet
    from tui_rater.stats import intervals as iv

    calls: list[tuple[str, np.ndarray, str, list[float] | None]] = []
    alpha, ac = iv.alpha, gwet.ac

    def alpha_kept(matrix: Any, level: str = "interval") -> Any:
        calls.append(("alpha", np.asarray(matrix, dtype=float), level, None))
        return alpha(matrix, level)

    def ac_kept(matrix: Any, categories: list[float], kind: str = "nominal") -> Any:
        calls.append(("ac", np.asarray(matrix, dtype=float), kind, list(categories)))
        return ac(matrix, categories, kind)

    iv.alpha, gwet.ac = alpha_kept, ac_kept  # type: ignore[assignment]  # a bench's wrapper, the same signature
    with tempfile.TemporaryDirectory() as tmp:
        main(["report", "--db", db, "--format", "json", "--out", str(Path(tmp) / "report.json")])
    Path(out).write_bytes(pickle.dumps(calls))
    print(f"{len(calls)} calls kept in {out}", file=sys.stderr)


def replay(path: str, out: str | None) -> None:
    from tui_rater.stats import gwet
    from tui_rater.stats import intervals as iv

    calls = [c for c in pickle.loads(Path(path).read_bytes()) if c[1].shape[0] >= 2]  # one rater: no figure
    for n in sorted({c[1].shape[1] for c in calls}):
        next(iv.resample_counts(n, 1))  # the draw, kept for the whole report
    seconds = {"alpha": 0.0, "ac": 0.0}
    figures = []
    for kind, matrix, level, categories in calls:
        start = time.perf_counter()
        if kind == "alpha":
            interval = iv.alpha(matrix, level)
            figures.append([kind, level, interval.low, interval.high])
        else:
            stat = gwet.ac(matrix, categories, level)
            figures.append([kind, level, stat.value, stat.extra.get("ci_low"), stat.extra.get("ci_high")])
        seconds[kind] += time.perf_counter() - start
    line = {"code": iv.__file__, "load": os.getloadavg(), "seconds": seconds, "calls": len(calls)}
    print(json.dumps(line))
    if out:
        Path(out).write_text(json.dumps({**line, "figures": figures}))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    kept = commands.add_parser("capture")
    kept.add_argument("--db", required=True, help="a copy of the study (the report writes nothing to it)")
    kept.add_argument("--out", required=True)
    again = commands.add_parser("replay")
    again.add_argument("calls")
    again.add_argument("--out")
    args = parser.parse_args()
    if args.command == "capture":
        capture(args.db, args.out)
    else:
        replay(args.calls, args.out)


if __name__ == "__main__":
    main()

"""`tui-rater judge` on a study of 100,000 items: start-up and memory over the run (issue 25, item 5).

The study: ``--items`` stories (100,000 by default) of the bundled `story` task, built directly in SQLite as
bench/app_and_stats.py builds its studies. The judge: the tiny random-weight GGUF (tui_rater.judge.tiny_gguf), so
the figures are the tool's own cost (queue, study, workers), not a model's. Every figure is a fresh process.
- start: launch -> the line `judge` prints when its workers start, for the first run (every job enqueued: items x 4
  questions x 3 samples; a run queues a large study's behind its workers, so the time until all are in the queue
  is shown too, and the first run is stopped only then) and for a second run on the same study (nothing new);
- memory: the process's RSS sampled every 0.2 s from /proc while the second run judges for ``--seconds`` s, then
  SIGINT: RSS at the start of judging, the peak, and the last sample (a flat profile: no growth with jobs done), the
  jobs done (as the interrupted run says) and the time from SIGINT to the exit (Ctrl-C must end a run within 2 s);
  baseline in the same run: the same judge on a study of 100 items.

    python bench/judge_scale.py [--items 100000] [--seconds 20]

Prints a table and one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from app_and_stats import build_study  # noqa: E402

from tui_rater.judge.tiny_gguf import write_tiny_gguf  # noqa: E402


def rss_mb(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def queued(db: Path) -> int:
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True, timeout=30)
    try:
        return int(conn.execute("SELECT count(*) FROM jobs").fetchone()[0])
    finally:
        conn.close()


def judge_run(
    args: list[str], env: dict[str, str], seconds: float | None, until: Callable[[], bool] | None = None
) -> dict:
    """Launch -> workers start; RSS samples while judging; SIGINT after ``seconds`` (None: run to the end) and once
    ``until()`` holds (the first run: once every job is in the queue, which a run may fill behind its workers)."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, env=env, cwd=ROOT)
    assert proc.stderr is not None
    started = None
    lines = []
    for line in proc.stderr:
        lines.append(line)
        if line.startswith("judge ") and "worker(s)" in line:
            started = time.perf_counter() - start
            break
    samples: list[tuple[float, float]] = []
    import threading

    rest: list[str] = []
    reader = threading.Thread(target=lambda: rest.extend(proc.stderr or []), daemon=True)
    reader.start()
    t0 = time.perf_counter()
    all_queued = None
    while proc.poll() is None:
        now = time.perf_counter() - t0
        value = rss_mb(proc.pid)
        if value is not None:
            samples.append((now, value))
        if all_queued is None and (until is None or until()):
            all_queued = time.perf_counter() - start
        if seconds is not None and now >= seconds and all_queued is not None:
            proc.send_signal(signal.SIGINT)
            break
        time.sleep(0.2)
    interrupted = time.perf_counter()
    try:
        proc.wait(timeout=300)
    except subprocess.TimeoutExpired:  # recorded, not waited for: the figure is the point
        proc.kill()
        proc.wait()
    stop_s = time.perf_counter() - interrupted
    reader.join(timeout=10)
    said = [line.rstrip() for line in lines + rest]
    done = [int(m[1]) for line in said if (m := re.search(r"interrupted: (\d+) jobs done", line))]
    return {
        "start_to_workers_s": started,
        "start_to_all_queued_s": None if all_queued is None else round(all_queued, 2),
        "exit": proc.returncode,
        "sigint_to_exit_s": round(stop_s, 2),
        "jobs_done": done[-1] if done else None,
        "rss_first_mb": samples[0][1] if samples else None,
        "rss_peak_mb": max(v for _, v in samples) if samples else None,
        # a flat profile: the same at a tenth, half way and at the end of the judging
        "rss_tenth_mb": samples[len(samples) // 10][1] if samples else None,
        "rss_half_mb": samples[len(samples) // 2][1] if samples else None,
        "rss_last_mb": samples[-1][1] if samples else None,
        "rss_samples": len(samples),
        "said": [line for line in said if not line.startswith("judging")][-6:],
    }


def build(path: Path, items: int) -> None:
    build_study(path, items, 0).close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    # started in the background of a script, this process ignores SIGINT, and so would every `judge` it starts
    # (an ignored signal is inherited): the Ctrl-C figures need Python's own handler in them
    signal.signal(signal.SIGINT, signal.default_int_handler)
    out: dict = {"bench": "judge_scale", "items": args.items, "load_average_before": os.getloadavg()[0]}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        model = write_tiny_gguf(work / "tiny.gguf", seed=1)
        env = {**os.environ, "TUI_RATER_CACHE_DIR": str(work / "cache")}
        cli = [sys.executable, "-m", "tui_rater.cli"]
        for label, n in (("baseline_100_items", 100), ("study", args.items)):
            db = work / f"{label}.db"
            t = time.perf_counter()
            build(db, n)
            build_s = time.perf_counter() - t
            judge = [*cli, "judge", "--db", str(db), "--model", str(model), "--task", "story", "--mode", "constrained"]
            # the first run: every job enqueued (items x 4 questions x 3 samples), then stopped
            first = judge_run(judge, env, seconds=0.5, until=lambda db=db, n=n: queued(db) >= n * 12)
            second = judge_run(judge, env, seconds=args.seconds)
            out[label] = {
                "build_s": round(build_s, 2),
                "first_start_s": first["start_to_workers_s"],
                "first_all_queued_s": first["start_to_all_queued_s"],
                "second_start_s": second["start_to_workers_s"],
                "first_exit": first["exit"],
                "first_sigint_to_exit_s": first["sigint_to_exit_s"],
                "second_exit": second["exit"],
                "second_sigint_to_exit_s": second["sigint_to_exit_s"],
                "jobs_done": second["jobs_done"],
                **{
                    k: second[k]
                    for k in (
                        "rss_first_mb",
                        "rss_tenth_mb",
                        "rss_half_mb",
                        "rss_peak_mb",
                        "rss_last_mb",
                        "rss_samples",
                    )
                },
                "said": second["said"],
            }
    out["load_average_after"] = os.getloadavg()[0]
    head = f"{'study':<22}{'first start':>12}{'all queued':>11}{'again':>8}{'Ctrl-C':>8}{'jobs done':>10}"
    print(head + f"{'RSS start':>11}{'peak':>8}{'last':>8}")
    for label in ("baseline_100_items", "study"):
        row = out[label]
        print(
            f"{label:<22}{row['first_start_s'] or float('nan'):>11.2f}s"
            f"{row['first_all_queued_s'] or float('nan'):>10.2f}s"
            f"{row['second_start_s'] or float('nan'):>7.2f}s"
            f"{row['second_sigint_to_exit_s']:>7.2f}s{row['jobs_done'] or 0:>10}"
            f"{row['rss_first_mb'] or 0:>10.0f}M{row['rss_peak_mb'] or 0:>7.0f}M{row['rss_last_mb'] or 0:>7.0f}M"
        )
    print(json.dumps({k: v for k, v in out.items()}, default=str))


if __name__ == "__main__":
    main()

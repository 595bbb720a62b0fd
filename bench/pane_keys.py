"""Keys while the agreement pane computes (issue 35 item 1: "never blocks keys, < 50 ms p99 while it runs").

The real app (`tui-rater annotate`) in tmux on a generated study of N stories (``bench/study_scale.py``'s files: 3
people and 1 judge on every story and its 4 questions), the agreement pane open. A writer stores one more judge
rating every ``--write-every`` seconds (a judge at work), so that the pane's full computation (α, τ, the alt-test,
the sequences, the gaps; seconds at 10k) starts again after each: it runs nearly all the time. Meanwhile ``→`` is
pressed at a steady ``--rate`` (it shows the next question: the header's ``◀ NAME ▶`` changes), ``--keys`` times.

A key's latency is the time from just before `tmux send-keys` to the first bytes the app writes to its terminal that
show the next question's name (tmux ``pipe-pane`` into a FIFO read by a thread here; the tmux client's start, ~2-5
ms, is inside the figure: the idle baseline shows it). A key counts as "while it computes" when the app's threads
other than its UI thread, and its child processes, used >= 30 % of a core around it (``/proc/PID/task/*/stat``;
the pane's statistics are the only such work). Then the writer stops, the computation is let finish, and
``--idle-keys`` more keys give the same run's idle baseline. Prints median, p99 and max per phase, the load
average, and one JSON line (also bench/runs/pane_keys-LABEL.json).

    python bench/pane_keys.py [--sizes 10000[,100000]] [--keys 300] [--rate 10] [--write-every 1.0] [--label now]
                               [--db study10000.db]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import shutil
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
sys.path.insert(0, str(ROOT))

from study_scale import QUESTIONS, run, write_files  # noqa: E402  (bench/ is no package)

from tests.ui.tmux import TmuxApp, annotate_command, wait_for  # noqa: E402  (the tests' tmux driver)

HEADER = re.compile(r"◀ (\w+) ▶")
TICK_S = 1 / os.sysconf("SC_CLK_TCK")
BUSY = 0.3  # share of a core used by threads other than the UI thread: a computation is running


class Output:
    """What the app writes to its terminal, timestamped as it arrives (tmux pipe-pane -> FIFO -> this thread)."""

    def __init__(self, fifo: Path) -> None:
        self.fifo = fifo
        self.chunks: list[tuple[float, bytes]] = []
        self.arrived = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        with open(self.fifo, "rb", buffering=0) as handle:
            while chunk := handle.read(65536):
                with self.arrived:
                    self.chunks.append((time.monotonic(), chunk))
                    self.arrived.notify_all()

    def wait_name(self, since: int, other_than: str, timeout: float) -> tuple[float, str, int] | None:
        """The time of the first chunk from index ``since`` after which the output names a question other than
        ``other_than`` in the pane's header; (time, name, next index)."""
        deadline = time.monotonic() + timeout
        buffer = b""
        index = since
        with self.arrived:
            while True:
                while index < len(self.chunks):
                    at, chunk = self.chunks[index]
                    index += 1
                    buffer += chunk
                    names = [n for n in HEADER.findall(buffer.decode(errors="ignore")) if n != other_than]
                    if names:
                        return at, names[-1], index
                left = deadline - time.monotonic()
                if left <= 0:
                    return None
                self.arrived.wait(left)


class Threads:
    """CPU seconds used by a process's threads other than its main (UI) thread, sampled every 50 ms.

    Counted per thread and summed as increments: a thread's CPU time leaves ``/proc`` when it ends, and the pane's
    computations run in threads that end (a plain sum over the threads present fell by a finished computation's
    seconds, and a window that held one read as quiet)."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self.samples: list[tuple[float, float]] = []
        self.stop = threading.Event()
        self._last: dict[str, float] = {}
        self._total = 0.0
        threading.Thread(target=self._sample, daemon=True).start()

    def others(self) -> float:
        """The CPU seconds the other threads have used since the first sample (threads since ended included), and
        those of the app's child processes (a computation may run in one)."""
        tasks = [task for task in Path(f"/proc/{self.pid}/task").iterdir() if int(task.name) != self.pid]
        for child in _children(self.pid):
            tasks += [task for task in Path(f"/proc/{child}/task").iterdir()] if Path(f"/proc/{child}").exists() else []
        for task in tasks:
            key = f"{task.parent.parent.name}/{task.name}"
            try:
                fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue  # a thread that just ended
            cpu = (int(fields[11]) + int(fields[12])) * TICK_S  # utime, stime (stat's 14th and 15th fields)
            self._total += cpu - self._last.get(key, 0.0)
            self._last[key] = cpu
        return self._total

    def _sample(self) -> None:
        while not self.stop.is_set():
            try:
                self.samples.append((time.monotonic(), self.others()))
            except OSError:
                return
            time.sleep(0.05)

    def busy(self, start: float, end: float) -> float:
        """Share of a core the other threads used between ``start`` and ``end`` (widened to two samples)."""
        before = [s for s in self.samples if s[0] <= start] or self.samples[:1]
        after = [s for s in self.samples if s[0] >= end] or self.samples[-1:]
        (t0, c0), (t1, c1) = before[-1], after[0]
        return (c1 - c0) / (t1 - t0) if t1 > t0 else 0.0


def _children(pid: int) -> list[int]:
    """The process's children, whichever of its threads started them (``task/TID/children`` lists a thread's)."""
    found = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found += [int(p) for p in (task / "children").read_text().split()]
        except OSError:
            continue
    return found


def stats(latencies: list[float]) -> dict[str, Any]:
    if not latencies:
        return {"keys": 0}
    ordered = sorted(latencies)
    p99 = ordered[min(len(ordered) - 1, round(0.99 * (len(ordered) - 1)))]
    return {"keys": len(ordered), "median_ms": round(statistics.median(ordered) * 1000, 1),
            "p99_ms": round(p99 * 1000, 1), "max_ms": round(ordered[-1] * 1000, 1)}  # fmt: skip


def press(app: TmuxApp, output: Output, threads: Threads, count: int, rate: float, name: str) -> list[dict[str, Any]]:
    """``count`` presses of → at ``rate`` a second; each key's latency and whether a computation ran around it."""
    keys = []
    for _ in range(count):
        began = time.monotonic()
        with output.arrived:
            since = len(output.chunks)
        app.key("Right")
        seen = output.wait_name(since, name, timeout=30.0)
        if seen is None:
            keys.append({"at": began, "s": None})
            continue
        at, name, _ = seen
        keys.append({"at": began, "s": at - began, "busy": threads.busy(began - 0.25, at + 0.25)})
        time.sleep(max(0.0, began + 1 / rate - time.monotonic()))
    return keys


def writer(db: Path, every: float, stop: threading.Event, written: list[int]) -> None:
    """A judge storing one rating every ``every`` seconds (each makes the pane's full computation run again)."""
    from tui_rater.store.study import Study

    study = Study.open(db)
    try:
        judge = study.judge("bench-writer", {"model": "bench-writer"})
        keys = [item.key for item in study.items("story")]  # (keys only: 100k items' objects, each traversed by the
        # garbage collector's full collections, paused this process's output reader: see measure)
        k = 0
        while not stop.wait(every):
            key = keys[(k * 37) % len(keys)]
            study.add_rating(key, QUESTIONS[k % len(QUESTIONS)], judge.id, float(1 + k % 5))
            k += 1
            written[0] = k
    finally:
        study.close()


def measure(work: Path, n: int, args: argparse.Namespace) -> dict[str, Any]:
    from tui_rater.store.study import Study

    db = work / f"study{n}.db"
    if args.db is not None:  # built before (a copy: the writer's ratings do not carry over to the next run)
        shutil.copyfile(args.db, db)
    else:
        items, ratings = write_files(work, n)
        for command in (["import", str(items), "--task", "story"], ["import-ratings", str(ratings)]):
            done = run(ROOT, [*command, "--db", str(db)], 3600)
            if done["rc"] != 0:
                raise SystemExit(f"the study could not be built: {command[0]}: {done}")
    study = Study.open(db)
    study.judge("bench-writer", {"model": "bench-writer"})  # now: a new rater later would rebuild the pane's sums
    study.close()
    fifo = work / f"out{n}.fifo"
    os.mkfifo(fifo)
    app = TmuxApp(annotate_command(db, "dee", "story"), work, size=(120, 40), env="env TERM=xterm")
    out: dict[str, Any] = {"items": n, "rating_rows": 16 * n, "load_before": os.getloadavg()}
    try:
        output = Output(fifo)
        app._tmux("pipe-pane", "-t", "app", "-o", f"cat > {fifo}")
        app.wait_text("item 1/", timeout=600)
        threads = Threads(app.pid)
        stop, written = threading.Event(), [0]
        opened = time.monotonic()
        app.keys("a")
        first = app.wait_screen(lambda s: HEADER.search(s) is not None, timeout=600)
        out["first_numbers_s"] = round(time.monotonic() - opened, 2)
        name = HEADER.findall(first)[-1]
        feeding = threading.Thread(target=writer, args=(db, args.write_every, stop, written), daemon=True)
        # no garbage collection in this process while the keys are timed: a full collection (100 ms under load)
        # held the thread that timestamps the app's output, and a key's latency read as that much longer than the
        # app's (nothing here makes cycles worth collecting in a minute)
        gc.collect()
        gc.disable()
        if args.write_every > 0:
            feeding.start()
        keys = press(app, output, threads, args.keys, args.rate, name)
        stop.set()
        out["ratings_written"] = written[0]
        out["load_during"] = os.getloadavg()
        # the computations end (nothing new to read): the same keys, idle
        quiet = lambda: threads.busy(time.monotonic() - 3.0, time.monotonic()) < 0.05
        if args.idle_keys:  # (none: at 100k the computation runs for minutes after the writer stops)
            wait_for(lambda: time.monotonic() - opened > 3 and quiet(), timeout=900, every=0.5)
        name = HEADER.findall(app.screen())[-1] if HEADER.search(app.screen()) else name
        idle = press(app, output, threads, args.idle_keys, args.rate, name)
        threads.stop.set()
    finally:
        gc.enable()
        app.close()
    busy = [k["s"] for k in keys if k["s"] is not None and k["busy"] >= BUSY]
    out["while_computing"] = stats(busy)
    out["all_keys"] = stats([k["s"] for k in keys if k["s"] is not None])
    out["idle"] = stats([k["s"] for k in idle if k["s"] is not None and k["busy"] < BUSY])
    quiet_keys = [k["s"] for k in idle if k["s"] is not None and k["busy"] < BUSY]
    out["latencies_ms"] = {"computing": [round(s * 1000, 1) for s in busy],
                           "idle": [round(s * 1000, 1) for s in quiet_keys]}  # fmt: skip
    out["lost_keys"] = sum(k["s"] is None for k in keys + idle)
    span = keys[-1]["at"] - keys[0]["at"] if len(keys) > 1 else 0.0
    out["computing_share"] = round(threads.busy(keys[0]["at"], keys[-1]["at"]), 2) if span else None
    out["idle_share"] = round(threads.busy(idle[0]["at"], idle[-1]["at"]), 2) if len(idle) > 1 else None
    for path in work.glob(f"*{n}*"):
        path.unlink()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000")
    parser.add_argument("--keys", type=int, default=300, help="keys pressed while the writer runs")
    parser.add_argument("--idle-keys", type=int, default=60, help="keys pressed once the computations ended")
    parser.add_argument("--rate", type=float, default=10.0, help="keys a second")
    parser.add_argument("--write-every", type=float, default=1.0, help="seconds between the writer's ratings (0: none)")
    parser.add_argument("--label", default="now")
    parser.add_argument("--db", type=Path, help="a study of --sizes items built before (copied), instead of a new one")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="pane_keys-") as tmp:
        for n in (int(s) for s in args.sizes.split(",")):
            rows.append(measure(Path(tmp), n, args))
            print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    print(f"{'items':>8} {'phase':<18} {'keys':>5} {'median':>9} {'p99':>9} {'max':>9}")
    for row in rows:
        for phase in ("while_computing", "all_keys", "idle"):
            s = row[phase]
            if s["keys"]:
                print(f"{row['items']:>8,} {phase:<18} {s['keys']:>5} {s['median_ms']:>7} ms {s['p99_ms']:>6} ms "
                      f"{s['max_ms']:>6} ms")  # fmt: skip
        print(f"{'':>8} computing share {row['computing_share']}, first numbers {row['first_numbers_s']} s, load "
              f"{row['load_before'][0]:.1f} -> {row['load_during'][0]:.1f}, lost keys {row['lost_keys']}")  # fmt: skip
    result = {"bench": "pane_keys", "label": args.label, "cpus": os.cpu_count(), "rows": rows}
    runs = ROOT / "bench" / "runs"
    runs.mkdir(exist_ok=True)
    (runs / f"pane_keys-{args.label}.json").write_text(json.dumps(result) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()

"""Browser sessions of `tui-rater serve`: memory, idle CPU and keypress -> stored, per number of sessions.

`serve` runs one app process per open page. For each N in ``--sessions`` this opens N pages in headless
Chromium (Debian's, driven by Playwright, as tests/ui/test_browser.py does), each through its own
annotator's link, on a generated study of ``--items`` stories (the sample stories, repeated), and measures:

- the app processes (the children of `serve`): resident memory (RSS, and PSS, which shares the libraries
  fairly between them), total and per session, once every app has finished starting; the CPU seconds each
  spent starting; the page's wait for its first screen;
- idle CPU over ``--idle-s`` seconds, nothing pressed, per session and in all (and `serve`'s own);
- keypress -> stored: every session rates at once, one key every ``--key-interval`` seconds each (staggered
  across the sessions), ``--keys`` keys each; a key's latency runs from Playwright pressing it in the page to
  the rating being committed in the study file (read by a separate connection every 5 ms): the browser,
  the websocket, `serve`, the app and its store thread together. Median and p95 over every key.

Several checkouts can be measured in the same run (``--checkout before=../base --checkout after=.``): each
row is measured for each checkout in turn, with the same study contents, so their ratios come from one run.
Chromium runs on the same machine (on a real deployment the browsers are elsewhere): its CPU is not counted
in the app's figures, but it competes for the same cores.

    python bench/serve_sessions.py [--sessions 1,5,10] [--items 5000] [--checkout LABEL=PATH ...]

Prints a table and appends one JSON line per row to bench/runs/serve_sessions-DATE.jsonl.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LINK = re.compile(r"^  (\S+): (http://\S+/a/(\S+))$")
TICKS = os.sysconf("SC_CLK_TCK")
KEYS = "3425"  # one rating each (a 1-5 question): four keys rate an item and show the next


# --- processes (Linux /proc) ---------------------------------------------------------------------


def children(pid: int) -> list[int]:
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                stat = Path(f"/proc/{entry}/stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry))
    return found


def cpu_s(pid: int) -> float:
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / TICKS


def memory_mb(pid: int) -> tuple[float, float]:
    """(RSS, PSS) in MB."""
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0.0, 0.0
    values = {line.split(":")[0]: int(line.split()[1]) for line in rollup.splitlines()[1:] if line.endswith("kB")}
    return values.get("Rss", 0) / 1024, values.get("Pss", 0) / 1024


# --- the study and the server --------------------------------------------------------------------


def write_items(path: Path, count: int) -> None:
    with open(ROOT / "sample_data" / "stories.csv", newline="") as f:
        stories = list(csv.DictReader(f))
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["id", "system", "prompt", "story"])
        writer.writeheader()
        for i in range(count):
            story = stories[i % len(stories)]
            writer.writerow({**story, "id": f"{story['id']}-{i}"})


def cli(*args: str) -> list[str]:
    return [sys.executable, "-m", "tui_rater.cli", *args]


def environment(checkout: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(checkout)}


class Serve:
    def __init__(self, checkout: Path, db: Path, annotators: list[str]):
        command = cli("serve", "--db", str(db), "--task", "story", "--port", "0")
        command += ["--annotators", ",".join(annotators)]
        self.process = subprocess.Popen(
            command,
            cwd=checkout,  # (`python -m` puts the current directory first on sys.path: the app is the checkout's)
            env=environment(checkout),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        self.lines: list[str] = []
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + 120
        while not any(line.startswith("Ctrl-C stops") for line in self.lines):
            if time.monotonic() > deadline or self.process.poll() is not None:
                raise SystemExit("serve did not start:\n" + "\n".join(self.lines))
            time.sleep(0.05)
        self.links = {m.group(1): m.group(2) for line in self.lines if (m := LINK.match(line))}

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def apps(self) -> list[int]:
        return children(self.process.pid)

    def stop(self) -> None:
        self.process.send_signal(signal.SIGTERM)
        try:
            self.process.wait(120)
        except subprocess.TimeoutExpired:
            self.process.kill()


class StoredWatch:
    """When each annotator's n-th rating was committed (a reader of the study file, every 5 ms)."""

    def __init__(self, db: Path):
        self.db = db
        self.at: dict[str, list[float]] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.thread.start()

    def _watch(self) -> None:
        conn = sqlite3.connect(self.db, timeout=30)
        last = None
        while not self.stop.is_set():
            now = time.monotonic()
            top = conn.execute("SELECT max(id) FROM ratings").fetchone()[0]
            if top != last:
                last = top
                rows = conn.execute(
                    "SELECT ra.name, count(*) FROM ratings r JOIN raters ra ON ra.id = r.rater_id "
                    "WHERE ra.kind = 'human' GROUP BY ra.name"
                ).fetchall()
                for name, count in rows:
                    times = self.at.setdefault(name, [])
                    while len(times) < count:
                        times.append(now)
            time.sleep(0.005)
        conn.close()

    def count(self, name: str) -> int:
        return len(self.at.get(name, []))

    def close(self) -> None:
        self.stop.set()
        self.thread.join()


# --- one row ----------------------------------------------------------------------------------------


def runnable(pid: int) -> bool:
    """Whether a thread of the process is running or waiting for a core (or for the disk)."""
    try:
        threads = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return False
    for thread in threads:
        try:
            state = Path(f"/proc/{pid}/task/{thread}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        if state in ("R", "D"):
            return True
    return False


def wait_settled(serve: Serve, sessions: int, timeout: float = 300) -> None:
    """Until every app has finished starting: each runnable in at most half of 30 looks over 3 s. (Not its CPU
    use: on a loaded machine a starting app waits for a core most of the time, and is runnable all along.)"""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        apps = serve.apps()
        busy = dict.fromkeys(apps, 0)
        for _ in range(30):
            for pid in apps:
                busy[pid] += runnable(pid)
            time.sleep(0.1)
        if len(apps) == sessions and all(count <= 15 for count in busy.values()):
            return
    print(f"  (the apps were still busy after {timeout:.0f} s)", flush=True)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else float("nan")


def measure(browser, serve: Serve, db: Path, names: list[str], args: argparse.Namespace) -> dict:
    load_before = os.getloadavg()
    pages, screens = [], {}
    opened = time.monotonic()
    for name in names:
        context = browser.new_context(viewport={"width": 1100, "height": 700})
        page = context.new_page()
        page.set_default_timeout(300_000)
        frames: list[str] = []
        page.on(
            "websocket",
            lambda ws, frames=frames: ws.on(
                "framereceived",
                lambda payload, frames=frames: frames.append(
                    payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload
                ),
            ),
        )
        page.goto(serve.links[name])
        pages.append((name, context, page, frames))
    for name, _context, page, frames in pages:  # the first screen: the question names are drawn
        while "relevance" not in "".join(frames) and time.monotonic() - opened < 300:
            page.wait_for_timeout(50)
        screens[name] = time.monotonic() - opened
    wait_settled(serve, len(names))
    apps = serve.apps()
    start_cpu = [cpu_s(pid) for pid in apps]
    memory = [memory_mb(pid) for pid in apps]
    serve_before = cpu_s(serve.process.pid)
    before = sum(cpu_s(pid) for pid in apps)
    t0 = time.monotonic()
    pages[0][2].wait_for_timeout(args.idle_s * 1000)  # (Playwright keeps the websockets served meanwhile)
    elapsed = time.monotonic() - t0
    idle = 100 * (sum(cpu_s(pid) for pid in apps) - before) / elapsed
    serve_idle = 100 * (cpu_s(serve.process.pid) - serve_before) / elapsed

    watch = StoredWatch(db)
    time.sleep(0.2)
    first = {name: watch.count(name) for name in names}
    for _name, _context, page, _frames in pages:
        page.click("#terminal")
    pressed: dict[str, list[float]] = {name: [] for name in names}
    schedule = sorted(
        (k * args.key_interval + i * args.key_interval / len(names), i, k)
        for i in range(len(names))
        for k in range(args.keys)
    )
    typing_cpu = sum(cpu_s(pid) for pid in apps) + cpu_s(serve.process.pid)
    start = time.monotonic() + 0.5
    for at, i, k in schedule:
        delay = start + at - time.monotonic()
        if delay > 0:
            time.sleep(delay)
        name, _context, page, _frames = pages[i]
        pressed[name].append(time.monotonic())
        page.keyboard.press(KEYS[k % len(KEYS)])
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and any(watch.count(n) < first[n] + args.keys for n in names):
        time.sleep(0.05)
    watch.close()
    typing_cpu = sum(cpu_s(pid) for pid in apps) + cpu_s(serve.process.pid) - typing_cpu
    latencies = [
        1000 * (watch.at[name][first[name] + k] - t)
        for name in names
        for k, t in enumerate(pressed[name])
        if watch.count(name) > first[name] + k
    ]
    # idle again, each page focused and its app having shown a few items (the state people leave it in)
    apps = serve.apps()
    time.sleep(1.0)
    before, t0 = sum(cpu_s(pid) for pid in apps), time.monotonic()
    pages[0][2].wait_for_timeout(args.idle_s * 1000)
    idle_focused = 100 * (sum(cpu_s(pid) for pid in apps) - before) / (time.monotonic() - t0)
    memory_after = [memory_mb(pid) for pid in apps]
    for _name, context, _page, _frames in pages:
        context.close()
    deadline = time.monotonic() + 120
    while serve.apps() and time.monotonic() < deadline:  # each app saves and exits with its page
        time.sleep(0.1)
    n = len(names)
    return {
        "sessions": n,
        "first_screen_s_median": statistics.median(screens.values()),
        "first_screen_s_max": max(screens.values()),
        "start_cpu_s_per_session": sum(start_cpu) / n,
        "rss_mb_total": sum(m[0] for m in memory),
        "rss_mb_per_session": sum(m[0] for m in memory) / n,
        "pss_mb_total": sum(m[1] for m in memory),
        "rss_mb_per_session_after_keys": sum(m[0] for m in memory_after) / max(1, len(memory_after)),
        "serve_rss_mb": memory_mb(serve.process.pid)[0],
        "idle_cpu_percent_total": idle,
        "idle_cpu_percent_per_session": idle / n,
        "serve_idle_cpu_percent": serve_idle,
        "idle_cpu_percent_per_session_focused": idle_focused / n,
        "keys_pressed": n * args.keys,
        "keys_stored": len(latencies),
        "keypress_stored_ms_median": statistics.median(latencies) if latencies else float("nan"),
        "keypress_stored_ms_p95": percentile(latencies, 0.95),
        # the apps' and serve's CPU while typing, per key stored (what a core's worth of annotators costs)
        "cpu_ms_per_key": 1000 * typing_cpu / max(1, len(latencies)),
        "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", default="1,5,10", help="comma-separated numbers of sessions (up to 40)")
    parser.add_argument("--items", type=int, default=5000, help="stories in the study (default 5000)")
    parser.add_argument("--keys", type=int, default=8, help="keys each session presses (default 8: two items)")
    parser.add_argument("--key-interval", type=float, default=2.0, help="seconds between one session's keys")
    parser.add_argument(
        "--plan",
        choices=("dynamic", "fixed", "none"),
        default="dynamic",
        help="the team's plan (`assign`): dynamic (default; 2 people per item), fixed, or none",
    )
    parser.add_argument("--idle-s", type=float, default=10.0, help="seconds of idle CPU measured")
    parser.add_argument(
        "--checkout",
        action="append",
        default=[],
        metavar="LABEL=PATH",
        help="a tui-rater checkout to measure (repeatable; default: this one, labelled 'this')",
    )
    parser.add_argument("--out", type=Path, help="JSON lines file (default bench/runs/serve_sessions-DATE.jsonl)")
    args = parser.parse_args()
    counts = [int(n) for n in args.sessions.split(",")]
    checkouts = [(c.split("=", 1)[0], Path(c.split("=", 1)[1]).resolve()) for c in args.checkout] or [("this", ROOT)]
    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("Chromium is not installed (Debian: apt-get install chromium)")
    out = args.out or ROOT / "bench" / "runs" / f"serve_sessions-{time.strftime('%Y-%m-%d')}.jsonl"
    out.parent.mkdir(parents=True, exist_ok=True)
    from playwright.sync_api import sync_playwright

    names = [f"annotator{i:02d}" for i in range(1, max(counts) + 1)]
    rows = []
    with tempfile.TemporaryDirectory() as tmp, sync_playwright() as playwright:
        items = Path(tmp) / "items.csv"
        write_items(items, args.items)
        browser = playwright.chromium.launch(executable_path=chromium, args=["--no-sandbox"], timeout=300_000)
        try:
            for n in counts:
                for label, checkout in checkouts:
                    db = Path(tmp) / f"{label}-{n}.db"
                    subprocess.run(
                        cli("import", str(items), "--task", "story", "--db", str(db)),
                        cwd=checkout,
                        env=environment(checkout),
                        check=True,
                        capture_output=True,
                    )
                    if args.plan != "none":  # a team's plan, as a study served to several people has
                        plan = ["--dynamic"] if args.plan == "dynamic" else []
                        subprocess.run(
                            [
                                *cli("assign", "--task", "story", "--db", str(db)),
                                *["--annotators", ",".join(names[:n]), "--per-item", "2" if n > 1 else "1"],
                                *[*plan, "--as", names[0]],
                            ],
                            cwd=checkout,
                            env=environment(checkout),
                            check=True,
                            capture_output=True,
                        )
                    serve = Serve(checkout, db, names[:n])
                    try:
                        row = measure(browser, serve, db, names[:n], args)
                    finally:
                        serve.stop()
                    commit = subprocess.run(
                        ["git", "-C", str(checkout), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
                    ).stdout.strip()
                    row = {
                        "bench": "serve_sessions",
                        "checkout": label,
                        "commit": commit or "?",
                        "items": args.items,
                        "plan": args.plan,
                        "cpus": os.cpu_count(),
                        **{k: round(v, 4) if isinstance(v, float) else v for k, v in row.items()},
                    }
                    rows.append(row)
                    print(
                        f"{label:>8} N={n:>2}: RSS {row['rss_mb_per_session']:.0f} MB/session "
                        f"({row['rss_mb_total']:.0f} MB, PSS {row['pss_mb_total']:.0f} MB), start "
                        f"{row['start_cpu_s_per_session']:.2f} CPU-s, "
                        f"first screen {row['first_screen_s_median']:.1f} s; "
                        f"idle {row['idle_cpu_percent_per_session']:.2f}%/session "
                        f"({row['idle_cpu_percent_per_session_focused']:.2f}% focused); keypress -> stored median "
                        f"{row['keypress_stored_ms_median']:.0f} ms, p95 {row['keypress_stored_ms_p95']:.0f} ms "
                        f"({row['keys_stored']}/{row['keys_pressed']} stored); load {row['load_average_before_after']}",
                        flush=True,
                    )
                    with open(out, "a") as f:
                        f.write(json.dumps(row) + "\n")
        finally:
            browser.close()
    by = {(r["checkout"], r["sessions"]): r for r in rows}
    if len(checkouts) == 2:
        (a, _), (b, _) = checkouts
        for n in counts:
            ra, rb = by[(a, n)], by[(b, n)]
            print(
                f"N={n}: {b}/{a} RSS {rb['rss_mb_per_session'] / ra['rss_mb_per_session']:.2f}, start CPU "
                f"{rb['start_cpu_s_per_session'] / ra['start_cpu_s_per_session']:.2f}, idle CPU "
                f"{rb['idle_cpu_percent_total'] / max(ra['idle_cpu_percent_total'], 1e-9):.2f}, keypress median "
                f"{rb['keypress_stored_ms_median'] / ra['keypress_stored_ms_median']:.2f}"
            )
    for row in rows:
        print(json.dumps(row))


if __name__ == "__main__":
    main()

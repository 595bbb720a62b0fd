"""The app and the statistics at scale, each against a baseline measured in the same run.

Study: 10,000 items and 100,000 ratings (100,000 items for the memory figure), with a judge
writing ratings in the background while the person types.

- keypress -> screen updated, p95 over >= 200 keypresses (Pilot); baseline: a bare Textual app
  that updates one Static per key, driven the same way (the framework's own floor);
- the same while a real local judge runs in the app (``annotate --judge MODEL``: llama.cpp generating text-mode
  replies on the machine's cores; bench/judge_local.py's 'test' model, Qwen2's 152k vocabulary), timed once the
  judge has stored its first rating;
- cold start of `tui-rater annotate` to the first item on screen (in tmux); baseline: a bare
  Textual app started the same way;
- agreement pane: UI-thread time to show a recomputed pane (the statistics run in a thread);
- idle CPU of the app over 10 s;
- memory (RSS) with 100,000 items; baseline: the bare Textual app;
- `report` on 100,000 ratings; baseline: the same alphas and taus computed directly with
  krippendorff and scipy on numpy arrays; alpha must equal krippendorff's to 1e-9.

    python bench/app_and_stats.py [--only keypress|local-judge|process]

Prints a table and ends with one JSON line of figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from tui_rater.domain.decoding import Decoding  # noqa: E402
from tui_rater.store.db import utc_now  # noqa: E402
from tui_rater.store.study import Study, content_hash  # noqa: E402

STORY = (
    "The lighthouse keeper counted the ships that never came. Each night she lit the lamp and wrote "
    "their names in a book nobody read. "
) * 5


def build_study(path: Path, n_items: int, n_ratings: int) -> Study:
    study = Study.open(path)
    conn = study._db.conn
    now = utc_now()
    rows = []
    for i in range(n_items):
        fields = {"prompt": f"Prompt {i}: a lighthouse keeper", "story": f"Story {i}. {STORY}"}
        system = "human" if i % 2 else "gpt2"
        rows.append((f"i{i}", "story", system, json.dumps(fields), i, content_hash("story", system, fields), now))
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO items (id, task, system, fields, position, content_hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        rows,
    )
    conn.execute("COMMIT")
    raters = [study.human(f"teacher-{k}").id for k in range(2)] + [study.judge("judge-1", {"m": 1}).id]
    keys = [r[0] for r in conn.execute("SELECT key FROM items ORDER BY key")]
    rng = random.Random(0)
    ratings = []
    attributes = ["grammaticality", "cohesiveness", "likability", "relevance"]
    for key in keys:
        for rater in raters:
            for attribute in attributes:
                if len(ratings) < n_ratings:
                    ratings.append(
                        (
                            key,
                            attribute,
                            rater,
                            0 if rater != raters[2] else rng.randint(0, 2),
                            float(rng.randint(1, 5)),
                            now,
                        )
                    )
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO ratings (item_key, attribute, rater_id, sample, value, created_at) VALUES (?, ?, ?, ?, ?, ?)",
        ratings,
    )
    conn.execute("COMMIT")
    return study


# --- keypress latency (Pilot) ------------------------------------------------------------------

BARE_APP = """
import os, sys, time
from pathlib import Path
from textual.app import App
from textual.widgets import Static, Footer
class Bare(App):
    def compose(self):
        yield Static("item 0", id="s")
        yield Footer()
    def on_mount(self):
        self.n = 0
        f = os.environ.get("TUI_RATER_READY_FILE")
        if f:
            self.call_after_refresh(lambda: Path(f).write_text(f"{time.time()}\\n"))
    def on_key(self, event):
        self.n += 1
        self.query_one("#s").update(f"item {self.n}")
if __name__ == "__main__":
    Bare().run()
"""


def instrument(app) -> list[float]:
    """Record, per key, the time from the key event's creation to the end of the refresh after it.

    Pilot's own press/pause cycle costs ~80 ms even for a bare app (see the baseline), so the
    latency is read inside the app: Key.time (set when the event is made) to the moment the
    screen update that follows the key's handling has been rendered (call_after_refresh).
    """
    from textual import events

    by_event: dict[int, float] = {}
    events_seen: list = []
    original = app.on_event

    async def on_event(event):
        await original(event)
        # a key reaches the app twice (on its way to the screen, and bubbling back): the refresh
        # after its last handling is the one that counts, so later callbacks overwrite earlier ones
        if isinstance(event, events.Key):
            if id(event) not in by_event:
                events_seen.append(event)  # keep it alive so its id is not reused
            created, key = event.time, id(event)
            by_event.setdefault(key, 0.0)
            app.call_after_refresh(lambda: by_event.__setitem__(key, time.monotonic() - created))

    app.on_event = on_event
    return by_event


async def pilot_latencies(
    app, keys: list[str], ready=None, gap: float | None = None
) -> tuple[list[float], list[float]]:
    """(latency inside the app, wall time of Pilot's press + pause) per key; ``ready(app)``: start pressing keys
    once it is true (polled every 0.1 s, for up to 120 s). ``gap``: seconds between keys instead of Pilot's wait for
    an idle process, which a judge working in the process never is (Pilot's press still waits for it: ~2 s a key)."""
    by_event = instrument(app)
    wall = []
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        deadline = time.monotonic() + 120
        while ready is not None and not ready(app):
            if time.monotonic() > deadline:
                raise SystemExit("the local judge stored nothing in 120 s")
            await asyncio.sleep(0.1)
        for key in keys:
            start = time.perf_counter()
            await pilot.press(key)
            await pilot.pause(gap)
            wall.append(time.perf_counter() - start)
    return list(by_event.values()), wall


def huge_item_bench(workdir: Path) -> dict:
    """Keypress -> screen p95 on items of 50,000 short lines and of one 5 MB line, against 4 ordinary
    stories in the same run (an item of 50,000 lines froze the app 9-16 s a key: issue 24, item 8)."""
    from tui_rater.store.session import AnnotationSession
    from tui_rater.ui.app import make_app

    figures = {}
    keys = [str(random.Random(2).randint(1, 5)) for _ in range(48)]  # 12 items x 4 questions
    shapes = {
        "ordinary": "The dragon sat by the fire and counted stitches. " * 8,
        "lines_50k": "\n".join(f"line {i}" for i in range(50_000)),
        "one_line_5mb": "word " * 1_000_000,
    }
    for name, story in shapes.items():
        study = Study.open(workdir / f"huge-{name}.db")
        rows = [{"id": f"{name}-{i}", "system": "x", "prompt": "P", "story": story} for i in range(12)]
        study.add_items(study.task("story"), rows)
        session = AnnotationSession.open(study, "story", "bench")
        began = time.perf_counter()
        measured, _ = asyncio.run(pilot_latencies(make_app(session), keys))
        figures[f"huge_item_{name}_p95_ms"] = p95(measured) * 1000
        figures[f"huge_item_{name}_run_s"] = time.perf_counter() - began
        study.close()
    return figures


def p95(values: list[float]) -> float:
    return float(np.percentile(values, 95))


def keypress_bench(db: Path, retest: float = 0.0) -> dict:
    """``retest``: the same with ``annotate --retest`` (showings of a stored plan, retests among them)."""
    from tui_rater.store.session import AnnotationSession
    from tui_rater.ui.app import make_app

    study = Study.open(db)
    judge = study.judge("judge-bg", {"m": "bg"})
    stop = threading.Event()
    keys_of_items = [r[0] for r in study._db.conn.execute("SELECT key FROM items LIMIT 2000")]

    def judge_writes():  # a judge storing a rating every 20 ms while the person types
        writer = Study.open(db, durable=False)
        i = 0
        while not stop.is_set():
            writer.add_rating(keys_of_items[i % len(keys_of_items)], "likability", judge.id, 3.0, sample=i)
            i += 1
            time.sleep(0.02)

    background = threading.Thread(target=judge_writes, daemon=True)
    background.start()
    annotator = f"bench-retest-{retest:g}" if retest else "bench-annotator"
    session = AnnotationSession.open(study.reopen(), "story", annotator, retest=retest)
    app = make_app(session)
    keys = [str(random.Random(1).randint(1, 5)) for _ in range(240)]
    measured, wall = asyncio.run(pilot_latencies(app, keys))
    stop.set()
    background.join()
    next_item = measured[3::4]  # every 4th key completes an item and shows the next one

    ns: dict = {}
    exec(BARE_APP.replace('if __name__ == "__main__":\n    Bare().run()', ""), ns)
    baseline, baseline_wall = asyncio.run(pilot_latencies(ns["Bare"](), keys))
    return {
        "keypress_p95_ms": p95(measured) * 1000,
        "next_item_p95_ms": p95(next_item) * 1000,
        "keypresses": len(measured),
        "baseline_bare_textual_p95_ms": p95(baseline) * 1000,
        "pilot_wall_p95_ms": p95(wall) * 1000,
        "baseline_pilot_wall_p95_ms": p95(baseline_wall) * 1000,
    }


def local_judge_keypress_bench(db: Path, workdir: Path) -> dict:
    """Keypress -> screen while a real local judge (llama.cpp, text mode) rates the same task inside the app, as
    ``annotate --judge MODEL`` runs it (tui_rater.service.judging.BackgroundJudges, started after the first screen).
    Keys are pressed once the judge has stored a rating, so every key meets llama.cpp decoding."""
    sys.path.insert(0, str(ROOT / "bench"))
    from judge_local import write_model

    from tui_rater.judge.spec import JudgeSpec
    from tui_rater.store.session import AnnotationSession
    from tui_rater.ui.app import AppOptions, make_app

    os.environ.setdefault("TUI_RATER_CACHE_DIR", str(workdir / "cache"))
    model = write_model(workdir / "judge-test.gguf", "test")
    spec = JudgeSpec(str(model), decoding=Decoding(samples=3, max_tokens=48), mode="text").validate()
    study = Study.open(db)
    session = AnnotationSession.open(study.reopen(), "story", "bench-local-judge")
    app = make_app(session, AppOptions(judge_specs=(spec,)))

    def judging(app) -> bool:
        return app.judges is not None and any(run.progress.done for _, run in app.judges.runs)

    keys = [str(random.Random(2).randint(1, 5)) for _ in range(240)]
    started = time.perf_counter()
    measured, wall = asyncio.run(pilot_latencies(app, keys, ready=judging, gap=0.25))  # 4 keys a second
    done = sum(run.progress.done for _, run in app.judges.runs) if app.judges is not None else 0
    if app.judges is not None:
        app.judges.stop()
    study.close()
    return {
        "local_judge_keypress_p95_ms": p95(measured) * 1000,
        "local_judge_next_item_p95_ms": p95(measured[3::4]) * 1000,
        "local_judge_keypresses": len(measured),
        "local_judge_pilot_wall_p95_ms": p95(wall) * 1000,
        "local_judge_jobs_done": done,
        "local_judge_seconds": time.perf_counter() - started,
        "local_judge_model": f"{model.name}: 256 wide, 2 layers, GQA 8/2, FFN 512, f16, Qwen2 152k vocabulary",
    }


def pane_bench(db: Path) -> dict:
    """UI-thread time to show a recomputed agreement pane (the computing is in a thread)."""
    from tui_rater.store.session import AnnotationSession
    from tui_rater.ui.agreement import AgreementScreen
    from tui_rater.ui.app import make_app

    study = Study.open(db)
    app = make_app(AnnotationSession.open(study.reopen(), "story", "pane-bench"))
    ui_times: list[float] = []
    original = AgreementScreen.on_agreement_screen_computed

    def timed(self, message):
        start = time.perf_counter()
        original(self, message)
        ui_times.append(time.perf_counter() - start)

    AgreementScreen.on_agreement_screen_computed = timed

    async def run():
        async with app.run_test(size=(80, 24)) as pilot:
            await pilot.press("a")
            for round_ in range(5):
                for _ in range(300):
                    await pilot.pause(0.02)
                    if len(ui_times) > round_:
                        break
                study.add_rating(1, "grammaticality", study.human("pane-bench").id, 5.0, sample=round_ + 1)
                await pilot.pause(2.2)  # the pane re-checks every 2 s

    time.perf_counter()
    asyncio.run(run())
    AgreementScreen.on_agreement_screen_computed = original
    return {"pane_ui_thread_ms_max": max(ui_times) * 1000 if ui_times else None, "pane_refreshes": len(ui_times)}


# --- a real process in tmux: cold start, idle CPU, memory -------------------------------------------


def _launch(session: str, command: str, ready_file: Path) -> None:
    """Start ``command`` in a new 80x24 tmux session; return once it wrote ``ready_file`` (its first screen)."""
    env = f"TUI_RATER_READY_FILE={ready_file} exec {command}"
    subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "80", "-y", "24", env], check=True)
    deadline = time.time() + 60
    while not ready_file.exists() and time.time() < deadline:
        time.sleep(0.005)


def run_in_tmux(command: str, ready_file: Path, idle_s: float = 0.0) -> dict:
    session = f"bench-{time.monotonic_ns()}"
    start = time.time()
    _launch(session, command, ready_file)
    try:
        ready = float(ready_file.read_text())
        pid = int(
            subprocess.run(
                ["tmux", "list-panes", "-t", session, "-F", "#{pane_pid}"], capture_output=True, text=True
            ).stdout.split()[0]
        )
        time.sleep(1.0)
        rss_kb = int(next(line for line in open(f"/proc/{pid}/status") if line.startswith("VmRSS")).split()[1])
        cpu = None
        if idle_s:
            ticks = os.sysconf("SC_CLK_TCK")

            def cpu_s():
                fields = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
                return (int(fields[11]) + int(fields[12])) / ticks

            before, t0 = cpu_s(), time.time()
            time.sleep(idle_s)
            cpu = 100 * (cpu_s() - before) / (time.time() - t0)
        return {"cold_start_s": ready - start, "rss_mb": rss_kb / 1024, "idle_cpu_percent": cpu}
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)


def first_pane_open(command: str, ready_file: Path, wait_after_ready_s: float) -> float:
    """Seconds from pressing `a` in a fresh process to the agreement screen on the terminal.

    The first `a` used to import polars and scipy on the UI thread (a freeze of about a second);
    the app now imports them in a worker after the first screen. Pressed at once, the UI thread may
    still wait for that import; pressed a moment later, it should not.
    """
    session = f"pane-{time.monotonic_ns()}"
    _launch(session, command, ready_file)
    try:
        time.sleep(wait_after_ready_s)
        pressed = time.monotonic()
        subprocess.run(["tmux", "send-keys", "-t", session, "a"], check=True)
        while time.monotonic() - pressed < 30:
            screen = subprocess.run(["tmux", "capture-pane", "-p", "-t", session], capture_output=True, text=True)
            if "computing" in screen.stdout or "judge queue" in screen.stdout:
                return time.monotonic() - pressed
            time.sleep(0.005)
        return float("nan")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], capture_output=True)
        ready_file.unlink(missing_ok=True)


def process_bench(db10k: Path, db100k: Path, workdir: Path) -> dict:
    py = sys.executable
    bare = workdir / "bare.py"
    bare.write_text(BARE_APP)
    annotate = f"{py} -m tui_rater.cli annotate --annotator tmux-bench --task story --db"
    out = {}
    app = run_in_tmux(f"{annotate} {db10k}", workdir / "ready-app", idle_s=10)
    base = run_in_tmux(f"{py} {bare}", workdir / "ready-bare", idle_s=10)
    big = run_in_tmux(f"{annotate} {db100k}", workdir / "ready-big")
    out.update(
        {
            "cold_start_s": app["cold_start_s"],
            "baseline_bare_textual_cold_start_s": base["cold_start_s"],
            "idle_cpu_percent": app["idle_cpu_percent"],
            "baseline_bare_idle_cpu_percent": base["idle_cpu_percent"],
            "rss_mb_100k_items": big["rss_mb"],
            "baseline_bare_rss_mb": base["rss_mb"],
            "cold_start_100k_items_s": big["cold_start_s"],
            "first_pane_open_at_once_s": first_pane_open(f"{annotate} {db10k}", workdir / "ready-pane1", 0.0),
            "first_pane_open_after_3s_s": first_pane_open(f"{annotate} {db10k}", workdir / "ready-pane2", 3.0),
            "baseline_import_polars_scipy_s": _import_seconds("import polars, scipy.stats"),
        }
    )
    return out


def _import_seconds(statement: str) -> float:
    """Wall seconds a fresh interpreter spends on `statement` (best of 3, the interpreter's own start excluded)."""
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    runs = [subprocess.run([sys.executable, "-c", code], capture_output=True, text=True) for _ in range(3)]
    return min(float(run.stdout) for run in runs)


# --- statistics --------------------------------------------------------------------------------


def stats_bench(db: Path) -> dict:
    import krippendorff
    from scipy import stats as sp

    from tui_rater.stats.report import Report

    study = Study.open(db)
    start = time.perf_counter()
    report = Report(study, study.task("story"))
    records = report.build()
    report_s = time.perf_counter() - start
    # baseline: only the alphas and taus of the report, computed directly on prepared arrays
    matrices = {
        (a, s): report.matrix("humans", a, s)
        for a in study.task("story").attribute_names
        for s in ("human", "gpt2", "all")
    }
    judge = {(a, s): report.item_means("judge-1", a, s) for (a, s) in matrices}
    start = time.perf_counter()
    direct = {}
    for key, m in matrices.items():
        direct[key] = krippendorff.alpha(reliability_data=m, level_of_measurement="interval")
        krippendorff.alpha(reliability_data=m, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5])
        h = np.nanmean(m, axis=0)
        keep = ~np.isnan(judge[key])
        sp.kendalltau(h[keep], judge[key][keep])
    baseline_s = time.perf_counter() - start
    ours = {
        (r.attribute, r.system): r.value
        for r in records
        if r.table == "table1" and r.evaluator == "humans" and r.statistic == "alpha_interval"
    }
    max_diff = max(abs(ours[key] - value) for key, value in direct.items())
    return {
        "ratings": report.frame.height,
        "report_s": report_s,
        "baseline_direct_alpha_tau_s": baseline_s,
        "alpha_max_abs_diff_vs_krippendorff": max_diff,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--only",
        choices=("keypress", "local-judge", "process", "huge-item"),
        help="only the keypress measures, or only the process ones (cold start, idle CPU, RSS, first `a`) in tmux; "
        "huge-item: keypress p95 on items of 50,000 lines and of one 5 MB line against ordinary ones",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        if args.only == "huge-item":
            figures = huge_item_bench(workdir)
            print(
                ", ".join(
                    f"{name}: p95 {figures[f'huge_item_{name}_p95_ms']:.1f} ms"
                    for name in ("ordinary", "lines_50k", "one_line_5mb")
                )
                + " (target < 50 ms a key whatever the item)",
                flush=True,
            )
            print(
                json.dumps(
                    {"bench": "app_and_stats", "cpus": os.cpu_count(), "load": os.getloadavg()[0], **_rounded(figures)}
                )
            )
            return
        t = time.perf_counter()
        build_study(workdir / "10k.db", 10_000, 100_000).close()
        if args.only in (None, "process"):
            build_study(workdir / "100k.db", 100_000, 100_000).close()
        print(f"built the studies in {time.perf_counter() - t:.1f} s", flush=True)
        figures = {}
        if args.only == "process":
            figures.update(_process_only(workdir))
            print(json.dumps({"bench": "app_and_stats", "cpus": os.cpu_count(), **_rounded(figures)}))
            return
        if args.only is not None:
            figures.update(_keypress_only(workdir, args.only))
            print(json.dumps({"bench": "app_and_stats", "cpus": os.cpu_count(), **_rounded(figures)}))
            return
        figures.update(stats_bench(workdir / "10k.db"))
        print(
            f"report on {figures['ratings']:,} ratings: {figures['report_s']:.2f} s (target < 1 s); direct "
            f"alpha+tau baseline {figures['baseline_direct_alpha_tau_s']:.2f} s; alpha max |diff| "
            f"{figures['alpha_max_abs_diff_vs_krippendorff']:.1e} (target <= 1e-9)",
            flush=True,
        )
        figures.update(keypress_bench(workdir / "10k.db"))
        print(
            f"keypress -> screen p95 {figures['keypress_p95_ms']:.1f} ms, next item p95 "
            f"{figures['next_item_p95_ms']:.1f} ms over {figures['keypresses']} keys (target < 50 ms); bare Textual "
            f"p95 {figures['baseline_bare_textual_p95_ms']:.1f} ms; Pilot press+pause wall p95 "
            f"{figures['pilot_wall_p95_ms']:.1f} ms (bare {figures['baseline_pilot_wall_p95_ms']:.1f} ms)",
            flush=True,
        )
        with_retest = keypress_bench(workdir / "10k.db", retest=0.5)
        figures["keypress_retest_p95_ms"] = with_retest["keypress_p95_ms"]
        figures["next_item_retest_p95_ms"] = with_retest["next_item_p95_ms"]
        print(
            f"with --retest 0.5: keypress -> screen p95 {with_retest['keypress_p95_ms']:.1f} ms, next item p95 "
            f"{with_retest['next_item_p95_ms']:.1f} ms "
            f"(bare Textual p95 {with_retest['baseline_bare_textual_p95_ms']:.1f} ms)",
            flush=True,
        )
        figures.update(_local_judge(workdir))
        figures.update(pane_bench(workdir / "10k.db"))
        print(
            f"agreement pane UI-thread time max {figures['pane_ui_thread_ms_max']:.1f} ms over "
            f"{figures['pane_refreshes']} refreshes (target < 30 ms)",
            flush=True,
        )
        figures.update(_process_only(workdir))
    print(json.dumps({"bench": "app_and_stats", "cpus": os.cpu_count(), **_rounded(figures)}))


def _process_only(workdir: Path) -> dict:
    if not shutil.which("tmux"):
        print("tmux is not installed: the process measures (cold start, idle CPU, RSS, first `a`) are skipped")
        return {}
    figures = process_bench(workdir / "10k.db", workdir / "100k.db", workdir)
    print(
        f"cold start {figures['cold_start_s']:.2f} s (target < 1.5 s; bare Textual "
        f"{figures['baseline_bare_textual_cold_start_s']:.2f} s); idle CPU {figures['idle_cpu_percent']:.2f}% "
        f"(target < 2%; bare {figures['baseline_bare_idle_cpu_percent']:.2f}%); RSS with 100k items "
        f"{figures['rss_mb_100k_items']:.0f} MB (target < 300 MB; "
        f"bare {figures['baseline_bare_rss_mb']:.0f} MB)",
        flush=True,
    )
    print(
        f"first `a` -> agreement screen: {figures['first_pane_open_at_once_s'] * 1000:.0f} ms pressed at once, "
        f"{figures['first_pane_open_after_3s_s'] * 1000:.0f} ms pressed 3 s after the first screen; "
        f"importing polars + scipy.stats in a fresh process (what the first `a` used to wait for on the UI "
        f"thread): {figures['baseline_import_polars_scipy_s'] * 1000:.0f} ms",
        flush=True,
    )
    return figures


def _rounded(figures: dict) -> dict:
    return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in figures.items()}


def _keypress_only(workdir: Path, which: str) -> dict:
    figures = {}
    if which == "keypress":
        figures.update(keypress_bench(workdir / "10k.db"))
        print(
            f"keypress -> screen p95 {figures['keypress_p95_ms']:.1f} ms (bare Textual p95 "
            f"{figures['baseline_bare_textual_p95_ms']:.1f} ms)",
            flush=True,
        )
    figures.update(_local_judge(workdir))
    return figures


def _local_judge(workdir: Path) -> dict:
    figures = local_judge_keypress_bench(workdir / "10k.db", workdir)
    print(
        f"with a local judge generating in the app: keypress -> screen p95 "
        f"{figures['local_judge_keypress_p95_ms']:.1f} ms, next item p95 {figures['local_judge_next_item_p95_ms']:.1f} "
        f"ms over {figures['local_judge_keypresses']} keys (target < 50 ms); {figures['local_judge_jobs_done']} judge "
        f"jobs done meanwhile",
        flush=True,
    )
    return figures


if __name__ == "__main__":
    main()

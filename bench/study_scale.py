"""Studies of 1k / 10k / 100k stories: what each command costs as the study grows (issue 35).

A study per size: N stories of the bundled `story` task (``tui-rater import``), then 3 people and 1 judge on every
story and its 4 questions (16 N rating rows, one CSV without a `task` column). Every figure is a fresh process of the
tui-rater found at ``--repo`` (its own ``PYTHONPATH``: the "before" figures come from a ``git worktree`` of main):
- ``import-ratings`` of that file (the study had only the items);
- ``export --what wide`` to CSV; ``report --format json`` and ``--format html``;
- ``--help`` and ``info`` (best of 3);
- ``judge --model api:bench`` against a loopback OpenAI-compatible server: launch -> the server's first request
  (then SIGINT; the run is not waited for);
- the live agreement pane's running sums (``service/live.py:LivePane``, issue 35 item 1), in a fresh process after
  its imports: ``pane-first`` is the first look (the study read once: the first numbers), ``pane-update`` the median
  look after one more person's rating is stored (20 ratings, each followed by a look).
Wall seconds and the child's peak RSS (``os.wait4``); the growth exponent between consecutive sizes is
log(t2 / t1) / log(n2 / n1) (1 = linear). A command past ``--timeout`` is killed and shown as such.

With ``--shape ppi`` the study is the one prediction-powered inference is made for: the judge on every story and
question (4 N rating rows), the 3 people on a random 2 % of the stories (``--people-share``), so the report's
sections run over N judge-only items and a small human sample (issue 35's "1,000,000 judge-only items with people on
2 %: `report` finishes <= 120 s within 2 GB").

    python bench/study_scale.py [--sizes 1000,10000] [--repo /tmp/scale-old] [--label before] [--skip judge]
    python bench/study_scale.py --shape ppi --sizes 100000,1000000 --skip pane-first,judge-first-request

Prints a table and one JSON line (also written to bench/runs/study_scale-LABEL.json).
"""

from __future__ import annotations

import argparse
import http.server
import itertools
import json
import math
import os
import random
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
QUESTIONS = ("grammaticality", "cohesiveness", "likability", "relevance")
STORY = "The lighthouse keeper counted the ships that never came and wrote each name in the sand. " * 4
COMMANDS = (
    "import-ratings",
    "export-wide",
    "report-json",
    "report-html",
    "judge-first-request",
    "help",
    "info",
    "pane-first",
    "pane-update",
)
# run in a fresh process by ``pane``: the seconds of the first look and of each look after one more rating
_PANE = """
import json, resource, statistics, sys, time
from tui_rater.service.live import LivePane, merge
from tui_rater.store.study import Study
study = Study.open(sys.argv[1])
person = study.human("newcomer")  # before the first look: a new rater is a new build
began = time.perf_counter()
live = LivePane("story")
look = live.look(study)
merge(None, look.sums, look.task, look.queue, look.failures)
first = time.perf_counter() - began
items = study.items("story")
updates = []
for i in range(20):
    study.add_rating(items[i * 37 % len(items)].key, "grammaticality", person.id, float(1 + i % 5))
    began = time.perf_counter()
    look = live.look(study)
    merge(None, look.sums, look.task, look.queue, look.failures)
    updates.append(time.perf_counter() - began)
    assert look is not None and not look.built and live.sums.rows_read <= 17
mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(json.dumps({"first": first, "update": statistics.median(updates), "update_max": max(updates), "mb": mb}))
"""


def pane(repo: Path, db: Path, timeout: float) -> tuple[dict[str, Any], dict[str, Any]]:
    env = {**os.environ, "PYTHONPATH": str(repo)}
    try:
        done = subprocess.run([sys.executable, "-c", _PANE, str(db)], cwd=repo, env=env, capture_output=True,
                              text=True, timeout=timeout)  # fmt: skip
    except subprocess.TimeoutExpired:
        return {"s": None, "killed": True}, {"s": None, "killed": True}
    if done.returncode != 0:
        said = done.stderr.strip().splitlines()[-1:]
        return {"s": None, "rc": done.returncode, "said": said}, {"s": None, "rc": done.returncode, "said": said}
    found = json.loads(done.stdout.strip().splitlines()[-1])
    first = {"s": round(found["first"], 3), "mb": round(found["mb"], 1)}
    return first, {"s": round(found["update"], 4), "max_s": round(found["update_max"], 4)}


def write_files(work: Path, n: int, people_share: float = 1.0) -> tuple[Path, Path, int]:
    """The items' and the ratings' CSV files, and the number of rating rows: the people on every story
    (``people_share`` 1) or on a random share of them (the PPI shape); the judge on every story."""
    items, ratings = work / f"items{n}.csv", work / f"ratings{n}.csv"
    rng = random.Random(n)
    rows = 0
    with items.open("w") as handle:
        handle.write("id,system,prompt,story\n")
        for i in range(n):
            handle.write(f"s{i},{'human' if i % 2 else 'gpt2'},Prompt {i % 50},Story {i}. {STORY}\n")
    with ratings.open("w") as handle:
        handle.write("item,rater,attribute,value,kind\n")
        for i in range(n):
            people = people_share >= 1 or rng.random() < people_share
            for question in QUESTIONS:
                truth = rng.randint(1, 5)
                if people:
                    for person in ("ann", "bob", "cy"):
                        value = min(5, max(1, truth + rng.choice((-1, 0, 0, 0, 1))))
                        handle.write(f"s{i},{person},{question},{value},human\n")
                    rows += 3
                handle.write(f"s{i},judge,{question},{min(5.0, max(1.0, truth + rng.choice((0.0, 0.5, -0.5))))},llm\n")
                rows += 1
    return items, ratings, rows


def run(repo: Path, args: list[str], timeout: float) -> dict[str, Any]:
    """One fresh `tui-rater` process: wall seconds, peak RSS in MB (its own, from wait4), exit status."""
    env = {**os.environ, "PYTHONPATH": str(repo), "NO_COLOR": "1", "OPENAI_API_KEY": "bench"}
    start = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui_rater.cli", *args],
        cwd=repo,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    timer = threading.Timer(timeout, proc.kill)
    timer.start()
    try:
        _, status, usage = os.wait4(proc.pid, 0)
    finally:
        timer.cancel()
    wall = time.perf_counter() - start
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    result: dict[str, Any] = {"s": round(wall, 3), "mb": round(usage.ru_maxrss / 1024, 1), "rc": proc.returncode}
    if proc.returncode != 0:
        result["said"] = err.strip().splitlines()[-1:] if err.strip() else []
        result["killed"] = proc.returncode == -signal.SIGKILL
    return result


class _Api(http.server.BaseHTTPRequestHandler):
    first: float | None = None

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        if _Api.first is None:
            _Api.first = time.perf_counter()
        self.rfile.read(int(self.headers.get("content-length", 0)))
        body = json.dumps(
            {
                "id": "x",
                "object": "chat.completion",
                "created": 0,
                "model": "bench",
                "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "3"}}],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
            }
        ).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


def judge_first_request(repo: Path, db: Path, timeout: float) -> dict[str, Any]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Api)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    _Api.first = None
    url = f"http://127.0.0.1:{server.server_address[1]}/v1"
    env = {**os.environ, "PYTHONPATH": str(repo), "NO_COLOR": "1", "OPENAI_API_KEY": "bench"}
    args = ["judge", "--db", str(db), "--task", "story", "--model", "api:bench", "--base-url", url, "--samples", "1"]
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "tui_rater.cli", *args], cwd=repo, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    try:
        while _Api.first is None and proc.poll() is None and time.perf_counter() - start < timeout:
            time.sleep(0.005)
        first = _Api.first
        result: dict[str, Any] = {"s": round(first - start, 3) if first else None}
        if first is None:
            said = proc.stderr.read().decode(errors="replace") if proc.poll() is not None and proc.stderr else ""
            result["said"] = said.strip().splitlines()[-1:] or ["no request before the timeout"]
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
            try:
                proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        server.shutdown()
    return result


def best_of(repo: Path, args: list[str], times: int = 3) -> dict[str, Any]:
    runs = [run(repo, args, 120) for _ in range(times)]
    return min(runs, key=lambda r: r["s"])


def measure(
    repo: Path, work: Path, n: int, skip: set[str], timeout: float, people_share: float = 1.0, keep: bool = False
) -> dict[str, Any]:
    items, ratings, rows = write_files(work, n, people_share)
    db = work / f"study{n}.db"
    out: dict[str, Any] = {"items": n, "rating_rows": rows, "people_share": people_share}
    out["setup-import-items"] = run(repo, ["import", str(items), "--task", "story", "--db", str(db)], timeout)
    print(f"  {n:>7,} setup-import-items: {out['setup-import-items']}", file=sys.stderr, flush=True)
    if out["setup-import-items"]["rc"] != 0:
        raise SystemExit(f"the study could not be built: {out['setup-import-items']}")
    jobs = {
        "import-ratings": ["import-ratings", str(ratings), "--db", str(db)],
        "export-wide": ["export", "--what", "wide", "--out", str(work / f"wide{n}.csv"), "--db", str(db)],
        "report-json": ["report", "--format", "json", "--out", str(work / f"r{n}.json"), "--db", str(db)],
        "report-html": ["report", "--format", "html", "--out", str(work / f"r{n}.html"), "--db", str(db)],
    }
    for name, args in jobs.items():
        if name not in skip:
            out[name] = run(repo, args, timeout)
            print(f"  {n:>7,} {name}: {out[name]}", file=sys.stderr, flush=True)
    if "help" not in skip:
        out["help"] = best_of(repo, ["--help"])
    if "info" not in skip:
        out["info"] = best_of(repo, ["info", "--db", str(db)])
    if "pane-first" not in skip and "import-ratings" not in skip:  # it adds a person's ratings to the study
        out["pane-first"], out["pane-update"] = pane(repo, db, timeout)
        print(f"  {n:>7,} pane: {out['pane-first']} {out['pane-update']}", file=sys.stderr, flush=True)
    if "judge-first-request" not in skip:  # last: it adds the judge's jobs to the study
        out["judge-first-request"] = judge_first_request(repo, db, timeout)
        print(f"  {n:>7,} judge: {out['judge-first-request']}", file=sys.stderr, flush=True)
    for path in work.glob(f"*{n}*"):
        if not (keep and path == db):
            path.unlink()
    return out


def exponents(rows: list[dict[str, Any]], key: str) -> list[float | None]:
    found: list[float | None] = []
    for small, large in itertools.pairwise(rows):
        a, b = small.get(key, {}).get("s"), large.get(key, {}).get("s")
        ok = a and b and small[key].get("rc", 0) == 0 and large[key].get("rc", 0) == 0
        found.append(round(math.log(b / a) / math.log(large["items"] / small["items"]), 2) if ok else None)
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--repo", type=Path, default=ROOT, help="the tui-rater checkout to run (default: this one)")
    parser.add_argument("--label", default="now")
    parser.add_argument("--skip", default="", help=f"commands to leave out, comma-separated: {', '.join(COMMANDS)}")
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds before a command is killed")
    parser.add_argument("--shape", choices=("people", "ppi"), default="people",
                        help="people: 3 people and the judge on every story; ppi: the judge on every story, the people "
                             "on --people-share of them")  # fmt: skip
    parser.add_argument("--people-share", type=float, default=0.02, help="with --shape ppi (default 0.02)")
    parser.add_argument("--keep", type=Path, help="a folder to keep each size's study in (default: deleted)")
    args = parser.parse_args()
    skip = {s for s in args.skip.split(",") if s}
    share = args.people_share if args.shape == "ppi" else 1.0
    rows = []
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="study_scale-", dir=args.keep) as tmp:
        work = args.keep or Path(tmp)
        for n in (int(s) for s in args.sizes.split(",")):
            rows.append(measure(args.repo.resolve(), work, n, skip, args.timeout, share, args.keep is not None))
    result = {"bench": "study_scale", "label": args.label, "repo": str(args.repo), "shape": args.shape,
              "load_before": load_before, "load": os.getloadavg(), "rows": rows,
              "exponents": {c: exponents(rows, c) for c in COMMANDS}}  # fmt: skip
    print(f"{'command':<22}" + "".join(f"{r['items']:>22,}" for r in rows) + "   growth exponents")
    for command in COMMANDS:
        cells = []
        for row in rows:
            cell = row.get(command)
            if cell is None:
                cells.append("not run")
            elif cell.get("s") is None or cell.get("rc", 0) != 0:
                cells.append("killed" if cell.get("killed") else "failed")
            else:
                digits = 4 if command == "pane-update" else 2
                cells.append(f"{cell['s']:.{digits}f} s" + (f", {cell['mb']:.0f} MB" if "mb" in cell else ""))
        print(f"{command:<22}" + "".join(f"{c:>22}" for c in cells) + f"   {result['exponents'][command]}")
    runs = ROOT / "bench" / "runs"
    runs.mkdir(exist_ok=True)
    (runs / f"study_scale-{args.label}.json").write_text(json.dumps(result) + "\n")
    print(json.dumps(result))


if __name__ == "__main__":
    main()

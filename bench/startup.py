"""What `tui-rater --help` and `info` cost on a 1k study (issue 35 item 4): median of 20 fresh processes each.

One study of 1,000 stories with 3 people and 1 judge on every story and its 4 questions (16,000 rating rows, built
as ``bench/study_scale.py`` builds it, by the checkout at ``--repos``' first entry). Then, for every checkout in
``--repos`` (``LABEL=PATH``; each its own ``PYTHONPATH``: a "before" is a ``git worktree`` of main), ``--runs``
rounds of `tui-rater --help` and `tui-rater info --db S`, the checkouts interleaved within each round so that the
machine's load falls on all of them alike. Wall seconds of the whole process (interpreter start included) and
peak RSS; the median and the quartiles are printed, and one JSON line (also bench/runs/startup-LABELS.json).
With ``--judge-items N``: also `judge --model api:bench` on a fresh copy of an N-item study (items only), launch ->
the loopback server's first request (``study_scale.judge_first_request``), ``--judge-runs`` rounds interleaved.
Each checkout's modules are compiled first (``compileall``) and read from their bytecode, as an installed tui-rater's
are: with ``PYTHONDONTWRITEBYTECODE`` set (as in this project's sessions) every process compiled tui-rater's modules
from source again (~0.1 s of `info`, more of `judge`); ``--no-bytecode`` measures that way instead.

    python bench/startup.py [--repos before=/tmp/startup-old,after=.] [--runs 20] [--judge-items 10000] [--no-bytecode]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))

from study_scale import judge_first_request, write_files  # noqa: E402  (bench/ is no package)


def use_bytecode(repos: list[Path], compiled: bool) -> None:
    """Compile each checkout's modules and let the children read them (``compiled``), or leave every child to
    compile them from source: each checkout's ``tui_rater/**/__pycache__`` removed (Python reads whatever bytecode
    is there, ``PYTHONDONTWRITEBYTECODE`` or not) and none written. The children inherit this process's environment
    (``study_scale.judge_first_request`` too)."""
    if not compiled:
        os.environ["PYTHONDONTWRITEBYTECODE"] = "1"
        for repo in repos:
            for cache in (repo / "tui_rater").rglob("__pycache__"):
                shutil.rmtree(cache)
        return
    os.environ.pop("PYTHONDONTWRITEBYTECODE", None)
    for repo in repos:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(repo / "tui_rater")], check=True)


def once(repo: Path, args: list[str]) -> tuple[float, float]:
    env = {**os.environ, "PYTHONPATH": str(repo), "NO_COLOR": "1"}
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-m", "tui_rater.cli", *args], cwd=repo, env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)  # fmt: skip
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - start
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{repo}: tui-rater {' '.join(args)} failed: {proc.stderr.read().decode()[-500:]}")  # type: ignore[union-attr]
    return wall, usage.ru_maxrss / 1024


def summary(walls: list[float], mbs: list[float]) -> dict[str, Any]:
    q = statistics.quantiles(walls, n=4)
    return {"median_s": round(statistics.median(walls), 3), "q1_s": round(q[0], 3), "q3_s": round(q[2], 3),
            "mb": round(statistics.median(mbs), 1)}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repos", default=f"now={ROOT}", help="LABEL=PATH,... (the first builds the study)")
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--judge-items", type=int, default=0, help="also judge launch -> first request at N items")
    parser.add_argument("--judge-runs", type=int, default=7)
    parser.add_argument("--no-bytecode", action="store_true", help="tui-rater compiled from source by each process")
    args = parser.parse_args()
    repos = {label: Path(path).resolve() for label, path in (r.split("=", 1) for r in args.repos.split(","))}
    use_bytecode(list(repos.values()), not args.no_bytecode)
    first = next(iter(repos.values()))
    with tempfile.TemporaryDirectory(prefix="startup-") as tmp:
        work = Path(tmp)
        items, ratings, _ = write_files(work, 1000)
        db = work / "study.db"
        env = {**os.environ, "PYTHONPATH": str(first), "NO_COLOR": "1"}
        for build in (["import", str(items), "--task", "story"], ["import-ratings", str(ratings)]):
            subprocess.run([sys.executable, "-m", "tui_rater.cli", *build, "--db", str(db)], cwd=first, env=env,
                           check=True, stdout=subprocess.DEVNULL)  # fmt: skip
        commands = {"help": ["--help"], "info": ["info", "--db", str(db)]}
        walls: dict[tuple[str, str], list[float]] = {(r, c): [] for r in repos for c in commands}
        mbs: dict[tuple[str, str], list[float]] = {(r, c): [] for r in repos for c in commands}
        load = [os.getloadavg()[0]]
        for _ in range(args.runs):
            for command, argv in commands.items():
                for label, repo in repos.items():
                    wall, mb = once(repo, argv)
                    walls[label, command].append(wall)
                    mbs[label, command].append(mb)
        if args.judge_items:
            jitems, _, _ = write_files(work, args.judge_items)
            jdb = work / "judge.db"
            subprocess.run([sys.executable, "-m", "tui_rater.cli", "import", str(jitems), "--task", "story",
                            "--db", str(jdb)], cwd=first, env=env, check=True, stdout=subprocess.DEVNULL)  # fmt: skip
            for label in repos:
                walls[label, "judge"], mbs[label, "judge"] = [], []
            for _ in range(args.judge_runs):
                for label, repo in repos.items():
                    copy = work / "judge-run.db"
                    for suffix in ("", "-wal", "-shm"):
                        Path(f"{copy}{suffix}").unlink(missing_ok=True)
                    shutil.copyfile(jdb, copy)
                    got = judge_first_request(repo, copy, 120)
                    if got["s"] is None:
                        raise SystemExit(f"{repo}: judge made no request: {got}")
                    walls[label, "judge"].append(got["s"])
                    mbs[label, "judge"].append(0.0)
        load.append(os.getloadavg()[0])
    out = {"runs": args.runs, "bytecode": not args.no_bytecode, "load": [round(x, 1) for x in load],
           **{f"{r}/{c}": summary(walls[r, c], mbs[r, c]) for r, c in walls}}  # fmt: skip
    head = f"{'command':<8} {'checkout':<10} {'median':>8} {'q1':>7} {'q3':>7} {'MB':>6}"
    how = "from source" if args.no_bytecode else "from bytecode"
    print(f"{head}   (load {load[0]:.1f} -> {load[1]:.1f}; modules {how})")
    for (label, command), _walls in walls.items():
        s = out[f"{label}/{command}"]
        print(f"{command:<8} {label:<10} {s['median_s']:>7.3f}s {s['q1_s']:>6.3f}s {s['q3_s']:>6.3f}s {s['mb']:>6.1f}")
    line = json.dumps(out)
    print(line)
    runs = ROOT / "bench" / "runs"
    runs.mkdir(exist_ok=True)
    (runs / f"startup-{'-'.join(repos)}.json").write_text(line + "\n")


if __name__ == "__main__":
    main()

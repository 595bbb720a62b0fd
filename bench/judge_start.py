"""`tui-rater judge` start-up on a large model file: the provenance SHA-256, cold and from the user cache.

The file is an 8 GB (``--gb``) GGUF: a tiny random model (tui_rater.judge.tiny_gguf) followed by sparse zeros up to
the size of an 8B Q8 model. Its header is real (the judge checks it before anything else) and llama.cpp loads it
(mapping the file; the padding is never read), so the judge really runs. Every figure is a fresh process.
- hash cold: ``file_sha256`` with an empty cache (reads all 8 GB; from the page cache after the first read);
- hash cached: the same in a new process, the digest remembered in the user cache;
- judge start: ``tui-rater judge --model FILE --task story --limit 1`` with the cache warm: from launch to the line
  it prints when its workers start (imports, the study, the GGUF header check, the spec and its provenance hash,
  the queue: everything before the first job), and to its exit (the model loaded, one item's 12 jobs done).

    python bench/judge_start.py [--gb 8]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

HASH = "import sys, time; from tui_rater.judge.spec import file_sha256; t = time.perf_counter(); d = file_sha256(sys.argv[1]); print(d, time.perf_counter() - t)"  # noqa: E501


def fresh_process(args: list[str], env: dict[str, str]) -> tuple[float, subprocess.CompletedProcess]:
    start = time.perf_counter()
    done = subprocess.run(args, capture_output=True, text=True, env=env, cwd=ROOT, timeout=1800)
    return time.perf_counter() - start, done


def judge_run(args: list[str], env: dict[str, str]) -> tuple[float, float, subprocess.CompletedProcess]:
    """(launch -> the 'judge NAME: N new jobs, ... worker(s)' line, launch -> exit, the finished process)."""
    start = time.perf_counter()
    proc = subprocess.Popen(args, stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=ROOT)
    assert proc.stderr is not None
    started, lines = float("nan"), []
    for line in proc.stderr:
        lines.append(line)
        if line.startswith("judge ") and "worker(s)" in line and started != started:
            started = time.perf_counter() - start
    stdout = proc.stdout.read() if proc.stdout else ""
    proc.wait(timeout=600)
    wall = time.perf_counter() - start
    return started, wall, subprocess.CompletedProcess(args, proc.returncode, stdout, "".join(lines))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gb", type=float, default=8.0)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        from tui_rater.judge.tiny_gguf import write_tiny_gguf

        model = write_tiny_gguf(work / "big.gguf", seed=1)
        with open(model, "r+b") as handle:
            handle.truncate(int(args.gb * 1e9))  # sparse: no disk used
        env = {**os.environ, "TUI_RATER_CACHE_DIR": str(work / "cache")}
        out: dict = {"bench": "judge_start", "file_gb": args.gb}
        _, cold = fresh_process([sys.executable, "-c", HASH, str(model)], env)
        digest, seconds = cold.stdout.split()
        out["hash_cold_s"] = float(seconds)
        wall, warm = fresh_process([sys.executable, "-c", HASH, str(model)], env)
        cached_digest, seconds = warm.stdout.split()
        assert cached_digest == digest
        out["hash_cached_s"], out["hash_cached_process_s"] = float(seconds), wall
        db = work / "study.db"
        cli = [sys.executable, "-m", "tui_rater.cli"]
        subprocess.run([*cli, "import", str(ROOT / "sample_data" / "stories.csv"), "--db", str(db), "--task", "story"],
                       env=env, cwd=ROOT, check=True, capture_output=True)  # fmt: skip
        started, wall, judge = judge_run([*cli, "judge", "--db", str(db), "--model", str(model), "--task", "story",
                                          "--limit", "1", "--max-tokens", "16"], env)  # fmt: skip
        out["judge_start_to_workers_s"], out["judge_start_to_exit_s"] = started, wall
        out["judge_exit"] = judge.returncode
        out["judge_said"] = judge.stderr.strip().splitlines()
        baseline, _ = fresh_process([sys.executable, "-c", "import tui_rater.cli"], env)
        out["python_and_cli_import_s"] = baseline
    print(f"hash of a {args.gb:g} GB file: cold {out['hash_cold_s']:.2f} s, cached {out['hash_cached_s']:.4f} s "
          f"(whole process {out['hash_cached_process_s']:.2f} s)")  # fmt: skip
    print(f"`tui-rater judge` launch -> workers start (before the first job), cache warm: "
          f"{out['judge_start_to_workers_s']:.2f} s (target < 1 s; python + CLI import alone "
          f"{out['python_and_cli_import_s']:.2f} s); launch -> exit after one item: "
          f"{out['judge_start_to_exit_s']:.2f} s (exit status {out['judge_exit']})")  # fmt: skip
    print(json.dumps({k: round(v, 4) if isinstance(v, float) else v for k, v in out.items()}))


if __name__ == "__main__":
    main()

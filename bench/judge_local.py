"""Local judge throughput: tui-rater's batched engine vs a naive harness vs llama.cpp's own batched floor.

All measured in this one run, on the same items and the same prompt tokens (ratios travel, absolute numbers don't).

Model: unless ``--model`` is given, a random-weight llama of bench-tools/make_model.py's 'test' shape (256 wide,
2 layers, 8 heads, 2 KV heads, FFN 512, f16; ``--shape small``: 512 wide, 4 layers) around Qwen2's real 152k-token
vocabulary (tests/data/vocab), with that vocabulary's own chat template. On a GPU: make a 1b/8b model with
bench-tools/make_model.py and pass ``--model PATH --ngl -1`` (bench/README.md).

Workload: the sample stories, task `story` (Chiang & Lee: 4 questions), 3 samples, 48-token replies, T = 1.0,
top-p 0.9, no top-k. Distribution mode rates all 60 stories by default, as bench-tools/bench_gpu.py (the issue's
H100 figures) does: with fewer, the judge's fixed start (16 workers' study connections, the first leases; ~0.1 s)
is a large share of a run that lasts a fraction of a second. Text mode: 4 stories (the naive harness takes a minute
for them on 2 cores).
- naive: what a generic harness does -- every question x sample an independent completion from a fresh context,
  llama-cpp-python's ``create_completion`` (top_k=0, top_p=0.9); default ``Llama`` settings;
- text / distribution: ``tui-rater judge --mode text|distribution`` through the real queue and workers
  (``--workers``, default 16: one shared engine with 16 sequences);
- floors, from llama.cpp's low-level API in this run (as bench-tools/bench_gpu.py): ``pp`` = tokens/s evaluating
  8 sequences x 256 tokens per decode (the best of 7); ``step(B)`` = seconds per decode step with B sequences
  generating at once (the 25th percentile of 16). This machine is shared and a disturbed floor flatters: floors
  are the best of their repeats, and distribution mode (a few seconds) is run 3 times, the best counting.
  distribution floor = the items' distinct prompt tokens / pp;
  text floor = distinct prompt tokens / pp + 48 x step(B = every sequence of every item at once).
  The floors leave out sampling and all bookkeeping. Reported beside them: the *workload* floor of distribution
  mode -- llama.cpp decoding exactly the items' prompt tries with one row of logits per prompt, in full batches
  (``pp`` has one output per 256 tokens; a question needs one per ~90 new tokens, and an output costs a
  152k-vocabulary matrix product). Their ratio, the *ceiling*, is the share of the floor that a perfect scheduler
  would reach; and on a CPU the run's process CPU time (the workers' Python and SQLite take the same cores as
  llama.cpp's threads) is printed beside the workload floor's (its seconds x the threads).

    python bench/judge_local.py [--text-items 4 --dist-items 60 --shape test|small]
    python bench/judge_local.py --model 8b.gguf --ngl -1 --text-items 10 --dist-items 60   # on a GPU

Prints a table and ends with one JSON line of figures.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.modules.setdefault("pandas", None)  # some CUDA images abort when pandas is imported after libllama
ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import llama_cpp  # noqa: E402  (before numpy users: see bench-tools/README.md on CUDA images)
import numpy as np  # noqa: E402

from tui_rater.domain import protocols  # noqa: E402
from tui_rater.domain.decoding import Decoding  # noqa: E402
from tui_rater.domain.tasks import STORY  # noqa: E402
from tui_rater.judge.spec import JudgeSpec  # noqa: E402
from tui_rater.judge.tiny_gguf import read_vocab, write_tiny_gguf  # noqa: E402
from tui_rater.service.judging import plan_judge, start_judge  # noqa: E402
from tui_rater.store.study import Study  # noqa: E402

SAMPLES, MAX_TOKENS = 3, 48
VOCAB = ROOT / "tests" / "data" / "vocab" / "ggml-vocab-qwen2.gguf"
SHAPES = {  # n_embd, n_layer, n_head, n_head_kv, n_ff -- make_model.py's 'test', and one step up
    "test": (256, 2, 8, 2, 512),
    "small": (512, 4, 8, 2, 1024),
}


def load_items(n: int) -> list[dict]:
    with open(ROOT / "sample_data" / "stories.csv", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))[:n]


def write_model(path: Path, shape: str) -> Path:
    embd, layers, heads, heads_kv, ff = SHAPES[shape]
    template = read_vocab(VOCAB).get("tokenizer.chat_template")
    return write_tiny_gguf(
        path,
        vocab=VOCAB,
        n_embd=embd,
        n_layers=layers,
        n_head=heads,
        n_head_kv=heads_kv,
        n_ff=ff,
        f16=True,
        weight_scale=0.02,
        embedding_scale=0.02,
        output_scale=0.02,  # make_model.py's weights: N(0, 0.02) everywhere, so nearly flat next-token distributions
        add_bos=False,  # as Qwen2's own GGUFs
        chat_template=str(template) if template else None,
        seed=1,
    )


def prompt_tokens(model: str, rows: list[dict], ngl: int) -> list[list[list[int]]]:
    """Each item's four prompts, as tui-rater sends them (chat template, BOS rule)."""
    from tui_rater.judge.backends.local import LocalBackend

    backend = LocalBackend(JudgeSpec(model, n_gpu_layers=ngl), parallel=1)
    try:
        return [
            [backend.prompt_tokens([{"role": "user", "content": question(a, r)}]) for a in STORY.attributes]
            for r in rows
        ]
    finally:
        backend.close()


def question(attribute, row: dict) -> str:
    """The question as the judge asks it (the protocol's own prompt)."""
    fields = {"prompt": row["prompt"], "story": row["story"]}
    return protocols.for_mode(STORY, attribute, "text").render(STORY, attribute, fields, "plain").text


def distinct_tokens(items: list[list[list[int]]]) -> int:
    """Tokens an item's prompts need evaluated at least once: the nodes of their prefix trie."""
    return sum(len({tuple(t[: i + 1]) for t in prompts for i in range(len(t))}) for prompts in items)


def tui_best(model: str, rows: list[dict], mode: str, ngl: int, workers: int, workdir: Path, repeat: int) -> dict:
    """The fastest of ``repeat`` runs (each on a new study file), as the floors are the best of theirs."""
    runs = [tui_run(model, rows, mode, ngl, workers, workdir / f"{mode}-{r}") for r in range(repeat)]
    best = min(runs, key=lambda r: r["seconds"])
    return {**best, "runs_s": [r["seconds"] for r in runs]}


def tui_run(
    model: str,
    rows: list[dict],
    mode: str,
    ngl: int,
    workers: int,
    workdir: Path,
    cuts: dict | None = None,
    threads: int = 0,
) -> dict:
    """``cuts``: top_k / min_p (bench/judge_server.py samples as llama-server's defaults do too); ``threads``:
    llama.cpp's CPU threads (0: every core)."""
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / f"{mode}-{len(rows)}.db"
    study = Study.open(db)
    study.add_items(STORY, [{k: r[k] for k in ("id", "system", "prompt", "story")} for r in rows])
    spec = JudgeSpec(
        model,
        decoding=Decoding(samples=SAMPLES, max_tokens=MAX_TOKENS, **(cuts or {})),
        mode=mode,
        max_retries=0,
        n_gpu_layers=ngl,
        n_threads=threads,
    ).validate()
    plan = plan_judge(study, spec, [STORY.name])
    from tui_rater.judge.backends.local import LocalBackend

    loaded = LocalBackend(spec, parallel=workers)  # the model is loaded before the clock starts, as the floor's is
    start, cpu = time.perf_counter(), time.process_time()
    run = start_judge(db, plan, workers)
    run.wait()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    loaded.close()
    threads, progress = run.threads, run.progress
    if progress.fatal:
        raise SystemExit(f"{mode}: {progress.fatal}")
    rater = plan.rater
    n = study._db.conn.execute("SELECT count(*) FROM ratings WHERE rater_id = ?", [rater.id]).fetchone()[0]
    assert n == len(rows) * 4 * SAMPLES, n
    counts = threads[0].counts
    study.close()
    return {
        "seconds": seconds,
        "process_cpu_s": cpu,  # every thread: the workers' Python and SQLite, llama.cpp's threads
        "items_per_s": len(rows) / seconds,
        "prompt_tokens_evaluated": counts.evaluated,
        "prompt_tokens_cached": counts.cached,
        "generated_tokens": counts.generated,
    }


def naive(model: str, items: list[list[list[int]]], ngl: int) -> dict:
    from llama_cpp import Llama

    llm = Llama(model_path=model, n_ctx=4096, n_gpu_layers=ngl, verbose=False, seed=0)
    generated = 0
    start = time.perf_counter()
    for prompts in items:
        for tokens in prompts:
            for sample in range(SAMPLES):
                llm.reset()
                llm._ctx.kv_cache_clear()  # a fresh context: nothing carried over
                result = llm.create_completion(
                    tokens, max_tokens=MAX_TOKENS, temperature=1.0, top_p=0.9, seed=sample, top_k=0, min_p=0.0
                )
                generated += result["usage"]["completion_tokens"]
    seconds = time.perf_counter() - start
    llm.close()
    return {"seconds": seconds, "items_per_s": len(items) / seconds, "generated_tokens": generated}


class Raw:
    """llama.cpp's low-level API straight (not tui-rater's engine): one context holding many sequences."""

    def __init__(self, model: str, ngl: int, n_seq: int, n_ctx: int, n_batch: int = 2048, n_ubatch: int = 512):
        llama_cpp.llama_backend_init()
        params = llama_cpp.llama_model_default_params()
        params.n_gpu_layers = 999 if ngl < 0 else ngl
        self.model = llama_cpp.llama_model_load_from_file(model.encode(), params)
        ctx_params = llama_cpp.llama_context_default_params()
        ctx_params.n_ctx, ctx_params.n_batch, ctx_params.n_ubatch = n_ctx, n_batch, n_ubatch
        ctx_params.n_seq_max, ctx_params.kv_unified = n_seq, True
        ctx_params.n_threads = ctx_params.n_threads_batch = os.cpu_count() or 1
        self.ctx = llama_cpp.llama_init_from_model(self.model, ctx_params)
        assert self.ctx, "context"
        self.memory = llama_cpp.llama_get_memory(self.ctx)
        self.batch = llama_cpp.llama_batch_init(n_batch, 0, 8)
        self.n_batch, self.n_seq = n_batch, n_seq
        self.n_vocab = llama_cpp.llama_vocab_n_tokens(llama_cpp.llama_model_get_vocab(self.model))

    def fill(self, entries: list[tuple[int, int, int | tuple[int, ...], bool]]) -> None:
        batch = self.batch
        for i, (token, pos, seq, logits) in enumerate(entries):
            seqs = seq if isinstance(seq, tuple) else (seq,)
            batch.token[i], batch.pos[i], batch.n_seq_id[i], batch.logits[i] = token, pos, len(seqs), logits
            for j, one in enumerate(seqs):
                batch.seq_id[i][j] = one
        batch.n_tokens = len(entries)

    def decode(self) -> None:
        assert llama_cpp.llama_decode(self.ctx, self.batch) == 0
        llama_cpp.llama_synchronize(self.ctx)

    def clear(self) -> None:
        llama_cpp.llama_memory_clear(self.memory, True)

    def close(self) -> None:
        llama_cpp.llama_batch_free(self.batch)
        llama_cpp.llama_free(self.ctx)
        llama_cpp.llama_model_free(self.model)


def pp_rate(raw: Raw, rng, seqs: int = 8, length: int = 256, reps: int = 7) -> float:
    entries = [
        (int(rng.integers(1000, raw.n_vocab - 1)), p, s, p == length - 1) for s in range(seqs) for p in range(length)
    ]
    raw.fill(entries)
    raw.clear()
    raw.decode()  # warm-up
    times = []
    for _ in range(reps):
        raw.clear()
        start = time.perf_counter()
        raw.decode()
        times.append(time.perf_counter() - start)
    return seqs * length / min(times)  # the best of the repeats: on a shared machine, the least disturbed


def prompts_floor(raw: Raw, items: list[list[list[int]]]) -> float:
    """Seconds llama.cpp takes for the distribution workload itself: each item's prompts as a prefix trie (a
    shared token once, for all the sequences that share it) with one output -- a row of logits -- per prompt,
    whole items packed into batches of up to n_batch tokens, on an empty cache each time. What a perfect scheduler
    would decode, without tui-rater's Python and SQLite."""
    per_item = []
    for prompts in items:
        entries, seen = [], set()
        for tokens in prompts:
            for pos, token in enumerate(tokens):
                prefix = tuple(tokens[: pos + 1])
                if prefix not in seen:
                    seen.add(prefix)
                    sharing = tuple(q for q, other in enumerate(prompts) if tuple(other[: pos + 1]) == prefix)
                    entries.append((token, pos, sharing, pos == len(tokens) - 1))
        per_item.append(entries)
    width = max(len(p) for p in items)
    batches: list[list] = [[]]
    for entries in per_item:
        slot = len({e[2][0] // width for e in batches[-1]})
        if len(batches[-1]) + len(entries) > raw.n_batch or (slot + 1) * width > raw.n_seq:
            batches.append([])
            slot = 0
        batches[-1].extend((t, pos, tuple(slot * width + q for q in seqs), out) for t, pos, seqs, out in entries)
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for entries in batches:
            raw.clear()
            raw.fill(entries)
            raw.decode()
        best = min(best, time.perf_counter() - start)
    return best


def step_time(raw: Raw, rng, n_seq: int, context: int = 350, steps: int = 16) -> float:
    raw.clear()
    tokens = lambda: int(rng.integers(1000, raw.n_vocab - 1))
    prefill = [(tokens(), p, s, False) for s in range(n_seq) for p in range(context)]
    for i in range(0, len(prefill), raw.n_batch):
        raw.fill(prefill[i : i + raw.n_batch])
        raw.decode()
    raw.fill([(tokens(), context, s, True) for s in range(n_seq)])
    raw.decode()  # warm-up step
    times = []
    for k in range(steps):
        raw.fill([(tokens(), context + 1 + k, s, True) for s in range(n_seq)])
        start = time.perf_counter()
        raw.decode()
        times.append(time.perf_counter() - start)
    return float(np.percentile(times, 25))  # a quiet step, not the mean of a disturbed run


class GpuMemory(threading.Thread):
    """Peak GPU memory (nvidia-smi), when there is a GPU."""

    def __init__(self):
        super().__init__(daemon=True)
        self.peak_mib, self.stopped = 0, False

    def run(self) -> None:
        while not self.stopped:
            try:
                out = subprocess.run(
                    ["nvidia-smi", "--query-gpu=memory.used", "--format=csv,noheader,nounits"],
                    capture_output=True,
                    text=True,
                    timeout=5,
                ).stdout
                self.peak_mib = max(self.peak_mib, int(out.split()[0]))
            except (OSError, ValueError, IndexError, subprocess.SubprocessError):
                return
            time.sleep(0.5)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", help="a GGUF to measure (default: write one of --shape)")
    parser.add_argument("--shape", choices=SHAPES, default="test")
    parser.add_argument("--ngl", type=int, default=0, help="layers on the GPU (-1: all)")
    parser.add_argument("--text-items", type=int, default=4)
    parser.add_argument("--dist-items", type=int, default=60)
    parser.add_argument("--workers", type=int, default=16)
    parser.add_argument("--skip-naive", action="store_true")
    parser.add_argument("--repeat", type=int, default=3, help="runs of distribution mode (the best counts)")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    gpu = GpuMemory()
    gpu.start()
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        os.environ.setdefault("TUI_RATER_CACHE_DIR", str(workdir / "cache"))
        model = args.model or str(write_model(workdir / f"bench-{args.shape}.gguf", args.shape))
        out = run(model, args, workdir)
    gpu.stopped = True
    out["gpu_offload_supported"] = bool(llama_cpp.llama_supports_gpu_offload())
    out["gpu_mem_peak_mib"] = gpu.peak_mib
    out["load_average_before_after"] = [load_before, os.getloadavg()[0]]  # others' work on a shared machine
    report(out)


def run(model: str, args, workdir: Path) -> dict:
    rows_d, rows_t = load_items(args.dist_items), load_items(args.text_items)
    tokens_d = prompt_tokens(model, rows_d, args.ngl)
    tokens_t = tokens_d[: len(rows_t)] if len(rows_t) <= len(rows_d) else prompt_tokens(model, rows_t, args.ngl)
    out: dict = {
        "model": Path(model).name if args.model else f"random llama '{args.shape}' {SHAPES[args.shape]}, Qwen2 vocab",
        "ngl": args.ngl,
        "workers": args.workers,
        "prompt_tokens_first_item": [len(t) for t in tokens_d[0]],
        "distinct_tokens_dist": distinct_tokens(tokens_d),
        "distinct_tokens_text": distinct_tokens(tokens_t),
    }
    for mode, rows, repeat in (("distribution", rows_d, args.repeat), ("text", rows_t, 1)):
        out[mode] = tui_best(model, rows, mode, args.ngl, args.workers, workdir, repeat)
        print(f"tui {mode}: {json.dumps(out[mode])}", flush=True)
    if not args.skip_naive:
        out["naive"] = naive(model, tokens_t, args.ngl)
        print(f"naive text: {json.dumps(out['naive'])}", flush=True)
    n_sequences = len(rows_t) * len(STORY.attributes) * SAMPLES
    raw = Raw(model, args.ngl, n_seq=max(n_sequences, 32), n_ctx=max(n_sequences, 32) * 512)
    rng = np.random.default_rng(0)
    out["pp_tokens_per_s"] = pp_rate(raw, rng)
    out["workload_floor_distribution_s"] = prompts_floor(raw, tokens_d)
    out["step_s"] = {str(b): step_time(raw, rng, b) for b in sorted({1, 8, 16, n_sequences})}
    raw.close()
    floor_d = out["distinct_tokens_dist"] / out["pp_tokens_per_s"]
    floor_t = out["distinct_tokens_text"] / out["pp_tokens_per_s"] + MAX_TOKENS * out["step_s"][str(n_sequences)]
    out["floor_distribution_s"], out["floor_text_s"] = floor_d, floor_t
    out["distribution_vs_floor"] = floor_d / out["distribution"]["seconds"]
    out["distribution_vs_workload_floor"] = out["workload_floor_distribution_s"] / out["distribution"]["seconds"]
    # the best any scheduler could reach against the pp floor: llama.cpp doing exactly the workload, nothing else
    out["distribution_ceiling_vs_floor"] = floor_d / out["workload_floor_distribution_s"]
    out["text_vs_floor"] = floor_t / out["text"]["seconds"]
    if "naive" in out:
        out["text_vs_naive"] = out["naive"]["seconds"] / out["text"]["seconds"]
    return out


def report(out: dict) -> None:
    print(
        f"\nmodel: {out['model']}; floors from llama.cpp: pp {out['pp_tokens_per_s']:.0f} tok/s, steps {out['step_s']}"
    )
    print(f"{'run':>14} {'items/s':>9} {'seconds':>8}")
    for name in ("distribution", "text", "naive"):
        if name in out:
            print(f"{name:>14} {out[name]['items_per_s']:>9.3f} {out[name]['seconds']:>8.1f}")
    targets = {"distribution_vs_floor": 0.8, "distribution_vs_workload_floor": None,
               "distribution_ceiling_vs_floor": None, "text_vs_naive": 4.0, "text_vs_floor": None}  # fmt: skip
    for key, target in targets.items():
        if key in out:
            verdict = f"(target >= {target}) {'ok' if out[key] >= target else 'MISSED'}" if target else "(reported)"
            print(f"{key:>30}: {out[key]:.3f} {verdict}")
    if out["ngl"] == 0:  # on a CPU the workers' Python competes with llama.cpp's threads for the same cores
        cpu, threads = out["distribution"]["process_cpu_s"], os.cpu_count() or 1
        print(f"{'distribution CPU':>30}: {cpu:.2f} CPU-s (the workload floor on {threads} threads: "
              f"{out['workload_floor_distribution_s'] * threads:.2f})")  # fmt: skip
    machine = f"{platform.machine()} {platform.processor() or ''}".strip()
    print(json.dumps({"bench": "judge_local", "machine": machine, "cpus": os.cpu_count(), **_rounded(out)}))


def _rounded(value):
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    return value


if __name__ == "__main__":
    main()

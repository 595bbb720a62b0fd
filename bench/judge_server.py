"""Side by side: tui-rater's local engine against llama.cpp's own llama-server, what a user would run instead.

Issue 25, item 1. The same model, the same items, the same prompt tokens, on the same machine and in the same run,
with llama-server built from the llama.cpp that the pinned llama-cpp-python vendors (bench/build_llama_server.sh).

Model: judge_local.py's random-weight llama of make_model.py's ``test`` shape around Qwen2's real 152k vocabulary.
Workload: judge_local.py's -- the sample stories, task ``story`` (4 questions), 3 samples, 48-token replies, T 1.0,
top-p 0.9 -- in text mode (``--text-items`` stories) and distribution mode (``--dist-items``). Text mode samples two
ways, on every path alike (each request says its sampler, so no path depends on a server's defaults):

- ``paper``: the papers' nucleus over the whole vocabulary (``top_k 0, min_p 0``: tui-rater's default);
- ``llama``: llama-server's default cuts first (``top_k 40, min_p 0.05``; the engine with ``--top-k 40 --min-p
  0.05``, the API judge with the same flags) -- what a user running the server with its defaults gets.

Paths:

- ``engine``: tui-rater's local engine (the queue and 16 workers of ``tui-rater judge --mode text|distribution``,
  through the same ``plan_judge`` / ``start_judge`` the CLI calls; the model loaded before the clock starts, as a
  server's is);
- ``api``: tui-rater's API judge (``--model api:bench --base-url http://127.0.0.1:PORT/v1``, 16 workers) against
  llama-server;
- ``client``: a minimal asyncio client (raw HTTP/1.1 on keep-alive connections, no library) straight to
  llama-server's ``/completion`` with the engine's own prompt tokens: text mode asks each question's 3 samples in
  one request (``n: 3``: the server evaluates the prompt once and copies it to 3 slots), 5 requests in flight (15 of
  the 16 slots); distribution mode asks each question once for the answer position's top 20 (``n_probs``, greedy,
  1 token), 16 in flight. That is less than the engine computes (the engine reads every option's probability; an
  option outside the top 20 would need more requests), so it is the server path's upper bound.

Servers (each started fresh for each run, so that no run finds the previous one's prompts in the server's slots or
prompt cache; its start is not timed): ``llama-server -m MODEL -np 16 -cb -c 8192 --metrics`` plus, by config,

- ``default``: nothing else;
- ``tuned``: ``-t 1 --kv-unified`` (the fastest server seen on this 2-core machine); ``engine@tuned`` is the engine
  with one thread too (``tui-rater judge --threads 1``).

``-c 8192`` is not a tuning: with 16 slots the server's default context (the model's 4096) leaves 256 tokens a slot,
less than one story prompt (279-350 tokens). Distribution mode samples nothing (greedy), so it runs once per path.

Each path runs in its own process (its peak RSS is ``ru_maxrss``; the server's is ``VmHWM``), with the process CPU
time of both. ``--repeats`` interleaved rounds (every path once per round, the order reversed every other round), the
load average before and after each run; the table gives medians.

    python bench/judge_server.py [--server PATH] [--text-items 3 --dist-items 20 --repeats 3]
        [--configs default,tuned] [--samplings paper,llama] [--paths engine,api,client]

Prints a table and ends with one JSON line of figures.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(ROOT))

SERVER_BINARY = Path(os.environ.get("BUILD_DIR", "/tmp/llama-server-build")) / "build" / "bin" / "llama-server"
SLOTS, CTX = 16, 8192
SERVER_BASE = ["-np", str(SLOTS), "-cb", "-c", str(CTX), "--metrics", "--alias", "bench"]
CONFIGS = {"default": [], "tuned": ["-t", "1", "--kv-unified"]}
# the cuts before top-p, said in every sampled request (or the engine's decoding)
SAMPLINGS = {"paper": {"top_k": 0, "min_p": 0.0}, "llama": {"top_k": 40, "min_p": 0.05}}
WORKERS = 16
TEMPERATURE, TOP_P = 1.0, 0.9
TOP_N = 20  # the answer position's listing the client asks for (what OpenAI-compatible servers list at most)


# --- the paths, each in a child process ------------------------------------------------------------------------


def child_engine(model: str, n_items: int, mode: str, workdir: Path, cuts: dict, threads: int) -> dict:
    import judge_local

    rows = judge_local.load_items(n_items)
    return judge_local.tui_run(model, rows, mode, 0, WORKERS, workdir, cuts, threads)


def child_api(url: str, n_items: int, mode: str, workdir: Path, cuts: dict) -> dict:
    import judge_local

    from tui_rater.domain.decoding import Decoding
    from tui_rater.domain.tasks import STORY
    from tui_rater.judge.spec import JudgeSpec
    from tui_rater.service.judging import plan_judge, start_judge
    from tui_rater.store.study import Study

    rows = judge_local.load_items(n_items)
    workdir.mkdir(parents=True, exist_ok=True)
    db = workdir / f"api-{mode}.db"
    study = Study.open(db)
    study.add_items(STORY, [{k: r[k] for k in ("id", "system", "prompt", "story")} for r in rows])
    spec = JudgeSpec(
        "api:bench",
        mode=mode,
        decoding=Decoding(
            samples=judge_local.SAMPLES,
            max_tokens=judge_local.MAX_TOKENS,
            temperature=TEMPERATURE,
            top_p=TOP_P,
            **cuts,
        ),
        max_retries=0,
        base_url=url,
    ).validate()
    plan = plan_judge(study, spec, [STORY.name])
    start, cpu = time.perf_counter(), time.process_time()
    run = start_judge(db, plan, WORKERS)
    run.wait()
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    if run.progress.fatal:
        raise SystemExit(f"api {mode}: {run.progress.fatal}")
    rater = plan.rater
    n, valued = study._db.conn.execute(
        "SELECT count(*), count(value) FROM ratings WHERE rater_id = ?", [rater.id]
    ).fetchone()
    counts = _summed([thread.counts for thread in run.threads])  # each worker's API backend counts its own
    study.close()
    return {
        "seconds": seconds,
        "process_cpu_s": cpu,
        "items_per_s": n_items / seconds,
        "ratings": n,
        "ratings_with_value": valued,
        "failed_jobs": run.progress.failed,
        "prompt_tokens_evaluated": counts.evaluated,
        "generated_tokens": counts.generated,
    }


def _summed(counts: list) -> object:
    from tui_rater.judge.backends.base import TokenCounts

    total = TokenCounts()
    for one in {id(c): c for c in counts if c is not None}.values():
        total.evaluated += one.evaluated
        total.generated += one.generated
    return total


class Connection:
    """One keep-alive HTTP/1.1 connection to the server: a request, then its whole answer, in turn."""

    def __init__(self, port: int):
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None

    async def post(self, path: str, body: dict):
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection("127.0.0.1", self.port)
            self.writer.get_extra_info("socket").setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        assert self.reader is not None
        data = json.dumps(body).encode()
        head = f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        self.writer.write(f"{head}Content-Length: {len(data)}\r\n\r\n".encode() + data)
        await self.writer.drain()
        status = int((await self.reader.readline()).split()[1])
        headers = {}
        while (line := await self.reader.readline()) not in (b"\r\n", b""):
            key, _, value = line.decode("latin-1").partition(":")
            headers[key.strip().lower()] = value.strip()
        if "content-length" in headers:
            payload = await self.reader.readexactly(int(headers["content-length"]))
        else:  # chunked
            parts = []
            while size := int((await self.reader.readline()).split(b";")[0], 16):
                parts.append(await self.reader.readexactly(size))
                await self.reader.readline()
            await self.reader.readline()
            payload = b"".join(parts)
        if status != 200:
            raise SystemExit(f"llama-server answered {status}: {payload[:300]!r}")
        return json.loads(payload)

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()


async def _client(port: int, bodies: list[dict], in_flight: int) -> list:
    queue: asyncio.Queue = asyncio.Queue()
    for i, body in enumerate(bodies):
        queue.put_nowait((i, body))
    answers: list = [None] * len(bodies)

    async def worker() -> None:
        connection = Connection(port)
        try:
            while not queue.empty():
                i, body = queue.get_nowait()
                answers[i] = await connection.post("/completion", body)
        finally:
            connection.close()

    await asyncio.gather(*(worker() for _ in range(in_flight)))
    return answers


def child_client(port: int, tokens_file: Path, n_items: int, mode: str, cuts: dict) -> dict:
    import judge_local

    items = json.loads(tokens_file.read_text())[:n_items]
    questions = [tokens for prompts in items for tokens in prompts]
    # llama-server's default, said here: a slot keeps its prompt, and a request sharing its prefix reuses it
    cached = {"cache_prompt": True}
    if mode == "text":
        sampling = {"temperature": TEMPERATURE, "top_p": TOP_P, **cuts}
        bodies = [
            {
                "prompt": t,
                "n_predict": judge_local.MAX_TOKENS,
                "n": judge_local.SAMPLES,
                **sampling,
                **cached,
            }  # no seed: llama-server gives a request's n completions the same one, and so the same reply
            for t in questions
        ]
        in_flight = SLOTS // judge_local.SAMPLES
    else:
        bodies = [{"prompt": t, "n_predict": 1, "n_probs": TOP_N, "temperature": 0.0, **cached} for t in questions]
        in_flight = SLOTS
    start, cpu = time.perf_counter(), time.process_time()
    answers = asyncio.run(_client(port, bodies, in_flight))
    seconds, cpu = time.perf_counter() - start, time.process_time() - cpu
    results = [r for a in answers for r in (a if isinstance(a, list) else [a])]
    out = {
        "seconds": seconds,
        "process_cpu_s": cpu,
        "items_per_s": len(items) / seconds,
        "requests": len(bodies),
        "results": len(results),
        "generated_tokens": sum(int(r.get("tokens_predicted", 0)) for r in results),
        "prompt_tokens_evaluated": sum(int(r.get("tokens_evaluated", 0)) for r in results),
    }
    if mode == "text":
        assert len(results) == len(questions) * judge_local.SAMPLES, len(results)
    else:  # how many of the scale's options (1-5) the top 20 listed: the rest would need a request each
        listed = 0
        for r in results:
            top = (r.get("completion_probabilities") or [{}])[0].get("top_logprobs") or []
            listed += len({str(p.get("token", "")).strip() for p in top} & {"1", "2", "3", "4", "5"})
        out["options_listed_of_5"] = listed / max(len(results), 1)
    return out


def child(args) -> None:
    workdir = Path(args.workdir)
    cuts = SAMPLINGS[args.sampling]
    if args.child == "engine":
        out = child_engine(args.model, args.items, args.mode, workdir, cuts, args.threads)
    elif args.child == "api":
        out = child_api(f"http://127.0.0.1:{args.port}/v1", args.items, args.mode, workdir, cuts)
    else:
        out = child_client(args.port, Path(args.tokens), args.items, args.mode, cuts)
    # VmHWM, not ru_maxrss: after fork + exec, ru_maxrss keeps the parent's peak (the bench's own ~470 MB)
    hwm = [line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("VmHWM:")]
    out["peak_rss_mb"] = int(hwm[0].split()[1]) / 1024 if hwm else float("nan")
    print(json.dumps(out), flush=True)


# --- the server ------------------------------------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    def __init__(self, binary: Path, model: str, config: str, log: Path):
        self.port = free_port()
        args = [str(binary), "-m", model, "--host", "127.0.0.1", "--port", str(self.port), *SERVER_BASE]
        self.args = args + CONFIGS[config]
        self.log = open(log, "ab")
        self.proc = subprocess.Popen(self.args, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 180
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"llama-server exited ({self.proc.returncode}); its log: {log}")
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as reply:
                    if reply.status == 200:
                        break
            except OSError:
                pass
            time.sleep(0.2)
        else:
            self.stop()
            raise SystemExit(f"llama-server did not answer /health in 180 s; its log: {log}")

    def cpu_s(self) -> float:
        fields = Path(f"/proc/{self.proc.pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")  # utime + stime

    def peak_rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
        return float("nan")

    def metrics(self) -> dict:
        wanted = ("n_decode_total", "prompt_tokens_total", "tokens_predicted_total", "n_busy_slots_per_decode")
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/metrics", timeout=5) as reply:
            text = reply.read().decode()
        out = {}
        for line in text.splitlines():
            name, _, value = line.partition(" ")
            key = name.removeprefix("llamacpp:")
            if key in wanted:
                out[key] = float(value)
        return out

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self.log.close()


# --- the rounds ------------------------------------------------------------------------------------------------


def one_run(path: str, config: str | None, sampling: str, mode: str, n_items: int, ctx: dict, tag: str) -> dict:
    workdir = ctx["workdir"] / tag
    command = [sys.executable, __file__, "--child", path, "--mode", mode, "--items", str(n_items),
               "--workdir", str(workdir), "--model", ctx["model"], "--tokens", str(ctx["tokens"]),
               "--sampling", sampling]  # fmt: skip
    server = None
    if path == "engine" and config is not None:  # the engine as the server is tuned: --threads 1
        command += ["--threads", "1"]
        config = None
    if config is not None:
        server = Server(ctx["binary"], ctx["model"], config, ctx["workdir"] / "server.log")
        command += ["--port", str(server.port)]
    load_before = os.getloadavg()[0]
    try:
        server_cpu = server.cpu_s() if server else 0.0
        done = subprocess.run(command, capture_output=True, text=True, env=ctx["env"])
        if done.returncode != 0:
            raise SystemExit(f"{tag} failed:\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}")
        out = json.loads(done.stdout.strip().splitlines()[-1])
        if server:
            out["server_cpu_s"] = server.cpu_s() - server_cpu
            out["server_peak_rss_mb"] = server.peak_rss_mb()
            out["server_metrics"] = server.metrics()
    finally:
        if server:
            server.stop()
    out["load_before_after"] = [load_before, os.getloadavg()[0]]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", type=Path, default=SERVER_BINARY, help="the llama-server binary")
    parser.add_argument("--text-items", type=int, default=3)
    parser.add_argument("--dist-items", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--configs", default="default,tuned")
    parser.add_argument("--samplings", default="paper,llama")
    parser.add_argument("--paths", default="engine,api,client")
    parser.add_argument("--modes", default="text,distribution")
    # in a child process
    parser.add_argument("--child", choices=("engine", "api", "client"), help=argparse.SUPPRESS)
    parser.add_argument("--mode", help=argparse.SUPPRESS)
    parser.add_argument("--items", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--workdir", help=argparse.SUPPRESS)
    parser.add_argument("--model", help=argparse.SUPPRESS)
    parser.add_argument("--tokens", help=argparse.SUPPRESS)
    parser.add_argument("--port", type=int, help=argparse.SUPPRESS)
    parser.add_argument("--sampling", default="paper", choices=tuple(SAMPLINGS), help=argparse.SUPPRESS)
    parser.add_argument("--threads", type=int, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args)
        return
    if not args.server.is_file():
        raise SystemExit(f"no llama-server at {args.server}: build it with bench/build_llama_server.sh (or --server)")
    configs, paths, modes = args.configs.split(","), args.paths.split(","), args.modes.split(",")
    samplings = args.samplings.split(",")
    for config in configs:
        if config not in CONFIGS:
            raise SystemExit(f"--configs: {config!r} is none of {', '.join(CONFIGS)}")
    for sampling in samplings:
        if sampling not in SAMPLINGS:
            raise SystemExit(f"--samplings: {sampling!r} is none of {', '.join(SAMPLINGS)}")
    import judge_local

    version = subprocess.run([str(args.server), "--version"], capture_output=True, text=True)
    out: dict = {
        "bench": "judge_server",
        "machine": f"{platform.machine()} {platform.processor() or ''}".strip(),
        "cpus": os.cpu_count(),
        "llama_server": (version.stdout + version.stderr).strip().splitlines()[:1],
        "server_args": SERVER_BASE,
        "configs": {c: CONFIGS[c] for c in configs},
        "samplings": {s: SAMPLINGS[s] for s in samplings},
        "text_items": args.text_items,
        "dist_items": args.dist_items,
        "load_average_start": os.getloadavg()[0],
    }
    with tempfile.TemporaryDirectory() as tmp:
        workdir = Path(tmp)
        env = {**os.environ, "TUI_RATER_CACHE_DIR": str(workdir / "cache")}
        os.environ["TUI_RATER_CACHE_DIR"] = env["TUI_RATER_CACHE_DIR"]
        model = str(judge_local.write_model(workdir / "bench-test.gguf", "test"))
        rows = judge_local.load_items(max(args.text_items, args.dist_items))
        tokens = workdir / "tokens.json"
        tokens.write_text(json.dumps(judge_local.prompt_tokens(model, rows, 0)))
        ctx = {"workdir": workdir, "model": model, "tokens": tokens, "binary": args.server, "env": env}
        plan = []
        for mode in modes:
            n = args.text_items if mode == "text" else args.dist_items
            # distribution mode samples nothing: one sampling
            for sampling in samplings if mode == "text" else samplings[:1]:
                for path in paths:
                    # the engine once with every core, and once as "tuned" is (one thread: --threads 1)
                    engine_configs = [None] + (["tuned"] if "tuned" in configs else [])
                    for config in engine_configs if path == "engine" else configs:
                        plan.append((path, config, sampling, mode, n))
        runs: dict = {}
        for r in range(args.repeats):
            for path, config, sampling, mode, n in plan if r % 2 == 0 else plan[::-1]:
                where = f"{mode}-{sampling}" if mode == "text" else mode
                name = f"{where}/{path}" + (f"@{config}" if config else "")
                result = one_run(path, config, sampling, mode, n, ctx, f"{name.replace('/', '-')}-{r}")
                runs.setdefault(name, []).append(result)
                print(f"round {r + 1}: {name}: {json.dumps(_rounded(result))}", flush=True)
    out["load_average_end"] = os.getloadavg()[0]
    out["runs"] = runs
    out["summary"] = summarise(runs)
    report(out)


def summarise(runs: dict) -> dict:
    summary = {}
    for name, results in runs.items():
        mode = name.split("/")[0]
        engine = runs.get(f"{mode}/engine")
        row = {
            "items_per_s_median": statistics.median(r["items_per_s"] for r in results),
            "items_per_s_runs": [r["items_per_s"] for r in results],
            "judge_cpu_s_median": statistics.median(r["process_cpu_s"] for r in results),
            "judge_peak_rss_mb": max(r["peak_rss_mb"] for r in results),
            "load_before": [r["load_before_after"][0] for r in results],
        }
        if "server_cpu_s" in results[0]:
            row["server_cpu_s_median"] = statistics.median(r["server_cpu_s"] for r in results)
            row["server_peak_rss_mb"] = max(r["server_peak_rss_mb"] for r in results)
        if engine:
            # per round, so that a round's load falls on both sides of the ratio
            ratios = [e["items_per_s"] / r["items_per_s"] for e, r in zip(engine, results, strict=False)]
            row["engine_vs_this_median"] = statistics.median(ratios)
        summary[name] = row
    return summary


def report(out: dict) -> None:
    print(f"\n{'path':>32} {'items/s':>8} {'engine ×':>9} {'judge CPU-s':>12} {'server CPU-s':>13} "
          f"{'judge RSS MB':>13} {'server RSS MB':>14}")  # fmt: skip
    for name, row in out["summary"].items():
        server_cpu = f"{row['server_cpu_s_median']:.1f}" if "server_cpu_s_median" in row else "-"
        server_rss = f"{row['server_peak_rss_mb']:.0f}" if "server_peak_rss_mb" in row else "-"
        print(f"{name:>32} {row['items_per_s_median']:>8.3f} {row.get('engine_vs_this_median', 1):>8.2f}× "
              f"{row['judge_cpu_s_median']:>12.1f} {server_cpu:>13} {row['judge_peak_rss_mb']:>13.0f} "
              f"{server_rss:>14}")  # fmt: skip
    print(f"load average: {out['load_average_start']:.1f} at the start, {out['load_average_end']:.1f} at the end")
    print(json.dumps(_rounded(out)))


def _rounded(value):
    if isinstance(value, float):
        return round(value, 4)
    if isinstance(value, dict):
        return {k: _rounded(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


if __name__ == "__main__":
    main()

"""API judge throughput against a loopback OpenAI-compatible endpoint that answers after a fixed delay.

- plain: every request answered after DELAY; with 16 workers the ideal is 16 / DELAY jobs/s
  (target: >= 0.9 of ideal);
- 429: the same server answers every 5th request at once with 429 + Retry-After: 1
  (target: nothing lost, rate >= 0.7 of ideal).

The ideal is measured, not assumed: a bare client with 16 threads firing requests at the same
server in the same run is the baseline the queue is compared against too.

    python bench/judge_api.py [--jobs 480] [--delay 0.2]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tui_rater.domain.decoding import Decoding  # noqa: E402
from tui_rater.domain.tasks import TITLE_FLUENCY  # noqa: E402
from tui_rater.judge.spec import JudgeSpec  # noqa: E402
from tui_rater.service.judging import plan_judge, start_judge  # noqa: E402
from tui_rater.store.study import Study  # noqa: E402

SERVER = textwrap.dedent("""
    import json, sys, threading, time
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
    delay, every = float(sys.argv[1]), int(sys.argv[2])
    count = [0]
    lock = threading.Lock()
    body = json.dumps({"id": "x", "object": "chat.completion", "created": 0, "model": "m",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "I would rate it a 4."},
        "finish_reason": "stop"}], "usage": {"prompt_tokens": 50, "completion_tokens": 8, "total_tokens": 58}}).encode()
    import socket
    class H(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        def setup(self):
            super().setup()
            # as uvicorn, vLLM and llama.cpp's server do: no Nagle delay on keep-alive answers
            self.request.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        def log_message(self, *a): pass
        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length", 0)))
            with lock:
                count[0] += 1
                n = count[0]
            if every and n % every == 0:
                out, status, extra = b'{"error": {"message": "slow down"}}', 429, {"retry-after": "1"}
            else:
                time.sleep(delay)
                out, status, extra = body, 200, {}
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(out)))
            for k, v in extra.items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(out)
    class S(ThreadingHTTPServer):
        daemon_threads = True
        request_queue_size = 128
    server = S(("127.0.0.1", 0), H)
    print(server.server_address[1], flush=True)
    server.serve_forever()
""")


def start_server(delay: float, every: int):
    proc = subprocess.Popen([sys.executable, "-c", SERVER, str(delay), str(every)], stdout=subprocess.PIPE, text=True)
    port = int(proc.stdout.readline())
    return proc, f"http://127.0.0.1:{port}/v1"


def bare_client(url: str, n: int, workers: int) -> float:
    """16 threads posting as fast as the server answers: the measured ideal."""
    payload = json.dumps({"model": "m", "messages": [{"role": "user", "content": "x"}]}).encode()
    counter = iter(range(n))
    lock = threading.Lock()

    def run():
        while True:
            with lock:
                if next(counter, None) is None:
                    return
            request = urllib.request.Request(url + "/chat/completions", payload, {"content-type": "application/json"})
            urllib.request.urlopen(request).read()

    start = time.perf_counter()
    threads = [threading.Thread(target=run) for _ in range(workers)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return n / (time.perf_counter() - start)


def queue_rate(url: str, n_jobs: int, workers: int, workdir: Path, name: str) -> dict:
    db = workdir / f"{name}.db"
    study = Study.open(db)
    study.add_items(
        TITLE_FLUENCY,
        [{"id": f"t{i}", "system": None, "title": f"Headline number {i} about markets"} for i in range(n_jobs)],
    )
    spec = JudgeSpec("api:m", decoding=Decoding(samples=1), base_url=url, max_retries=0).validate()
    plan = plan_judge(study, spec, [TITLE_FLUENCY.name])
    rater = plan.rater
    start = time.perf_counter()
    run = start_judge(db, plan, workers)
    run.wait()
    progress = run.progress
    seconds = time.perf_counter() - start
    stored = study._db.conn.execute(
        "SELECT count(*) FROM ratings WHERE rater_id = ? AND value IS NOT NULL", [rater.id]
    ).fetchone()[0]
    # steady state: from the first stored result to the last (start-up of 16 clients excluded)
    from datetime import datetime

    stamps = [
        datetime.fromisoformat(r[0]).timestamp()
        for r in study._db.conn.execute(
            "SELECT created_at FROM ratings WHERE rater_id = ? ORDER BY created_at", [rater.id]
        )
    ]
    steady = (len(stamps) - 1) / (stamps[-1] - stamps[0]) if len(stamps) > 1 and stamps[-1] > stamps[0] else 0.0
    return {
        "jobs": n_jobs,
        "stored": stored,
        "seconds": round(seconds, 3),
        "jobs_per_s": n_jobs / seconds,
        "steady_jobs_per_s": steady,
        "retried": progress.retried,
        "failed": progress.failed,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=480)
    parser.add_argument("--delay", type=float, default=0.2)
    parser.add_argument("--workers", type=int, default=16)
    args = parser.parse_args()
    ideal = args.workers / args.delay
    out = {"bench": "judge_api", "delay_s": args.delay, "workers": args.workers, "ideal_jobs_per_s": ideal}
    with tempfile.TemporaryDirectory() as tmp:
        for name, every in (("plain", 0), ("429_every_5th", 5)):
            proc, url = start_server(args.delay, every)
            try:
                if name == "plain":
                    out["bare_client_per_s"] = round(bare_client(url, args.workers * 10, args.workers), 2)
                result = queue_rate(url, args.jobs, args.workers, Path(tmp), name)
            finally:
                proc.terminate()
            result["vs_ideal"] = round(result["jobs_per_s"] / ideal, 3)
            result["steady_vs_ideal"] = round(result["steady_jobs_per_s"] / ideal, 3)
            result["jobs_per_s"] = round(result["jobs_per_s"], 2)
            result["steady_jobs_per_s"] = round(result["steady_jobs_per_s"], 2)
            out[name] = result
            target = 0.9 if name == "plain" else 0.7
            print(
                f"{name:>14}: steady {result['steady_jobs_per_s']} jobs/s = {result['steady_vs_ideal']:.2f} of ideal "
                f"{ideal:g}/s (target >= {target}); overall incl. start-up {result['jobs_per_s']} = "
                f"{result['vs_ideal']:.2f}; stored {result['stored']}/{result['jobs']}, retried {result['retried']}",
                flush=True,
            )
    print(json.dumps(out))


if __name__ == "__main__":
    main()

"""`judge --batch` against a loopback server implementing OpenAI's files and batches endpoints (and the plain chat
endpoint, for the live run the batch is compared with), through the real CLI in subprocesses: each call exits,
the batch id lives in the study file, and a later call reads the replies as a live run would have."""

from __future__ import annotations

import email.parser
import itertools
import json
import subprocess
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.judge.conftest import deterministic_answer
from tests.support import STORIES, run_cli_process, story_study
from tui_rater.judge.batch import parse_custom_id
from tui_rater.store.study import Study


class BatchServer:
    """Files, batches and chat completions on 127.0.0.1. A batch stays 'in_progress' until ``finish`` is set;
    then each line is answered as the chat endpoint answers the same body, except the jobs in ``erroring``
    (a 500 in the error file) and ``dropped`` (no line at all, as when a batch expires)."""

    def __init__(self):
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict] = {}
        self.live_bodies: list[dict] = []
        self.uploaded: list[list[dict]] = []
        self.cancelled: list[str] = []
        self.finish = False
        self.erroring: set[int] = set()
        self.dropped: set[int] = set()
        self.ids = itertools.count(1)
        self.hang_s = 0.0  # creating a batch waits this long (a process killed between upload and batch id)
        self.creating = threading.Event()
        self.lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status: int, payload: bytes, kind: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("content-type", kind)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                if self.path.split("?")[0] == "/v1/batches" and server.hang_s:
                    server.creating.set()
                    time.sleep(server.hang_s)  # the client is killed meanwhile
                with server.lock:
                    status, answer = server.post(self.path.split("?")[0], self.headers.get("content-type", ""), raw)
                self._send(status, json.dumps(answer).encode())

            def do_GET(self):
                with server.lock:
                    status, payload = server.get(self.path.split("?")[0])
                self._send(status, payload)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def post(self, path: str, content_type: str, raw: bytes) -> tuple[int, dict]:
        if path == "/v1/chat/completions":
            body = json.loads(raw)
            self.live_bodies.append(body)
            return 200, deterministic_answer(body)
        if path == "/v1/files":
            message = email.parser.BytesParser().parsebytes(f"content-type: {content_type}\r\n\r\n".encode() + raw)
            parts = {part.get_param("name", header="content-disposition"): part for part in message.get_payload()}
            assert parts["purpose"].get_payload() == "batch"
            content = parts["file"].get_payload(decode=True)
            file_id = f"file-{next(self.ids)}"
            self.files[file_id] = content
            self.uploaded.append([json.loads(line) for line in content.decode().splitlines()])
            return 200, self._file(file_id, "batch")
        if path == "/v1/batches":
            body = json.loads(raw)
            assert (body["endpoint"], body["completion_window"]) == ("/v1/chat/completions", "24h")
            batch_id = f"batch_{next(self.ids)}"
            self.batches[batch_id] = {"id": batch_id, "input_file_id": body["input_file_id"], "status": "in_progress"}
            return 200, self._batch(batch_id)
        if path.startswith("/v1/batches/") and path.endswith("/cancel"):
            batch_id = path.split("/")[3]
            self.cancelled.append(batch_id)
            self.batches[batch_id]["status"] = "cancelled"
            return 200, self._batch(batch_id)
        return 404, {"error": {"message": f"no {path}"}}

    def get(self, path: str) -> tuple[int, bytes]:
        if path.startswith("/v1/batches/"):
            batch_id = path.split("/")[3]
            if self.finish and self.batches[batch_id]["status"] == "in_progress":
                self._complete(batch_id)
            return 200, json.dumps(self._batch(batch_id)).encode()
        if path.startswith("/v1/files/") and path.endswith("/content"):
            return 200, self.files[path.split("/")[3]]
        return 404, b'{"error": {"message": "not here"}}'

    def _complete(self, batch_id: str) -> None:
        batch = self.batches[batch_id]
        output, errors = [], []
        for n, line in enumerate(self.files[batch["input_file_id"]].decode().splitlines()):
            request = json.loads(line)
            assert (request["method"], request["url"]) == ("POST", "/v1/chat/completions")
            job_id = parse_custom_id(request["custom_id"])[0]
            if job_id in self.dropped:
                continue
            if job_id in self.erroring:
                response = {"status_code": 500, "body": {"error": {"message": "overloaded"}}}
                errors.append({"id": f"r{n}", "custom_id": request["custom_id"], "response": response, "error": None})
                continue
            response = {"status_code": 200, "request_id": f"q{n}", "body": deterministic_answer(request["body"])}
            output.append({"id": f"r{n}", "custom_id": request["custom_id"], "response": response, "error": None})
        for name, lines in (("output_file_id", output), ("error_file_id", errors)):
            if lines:
                file_id = f"file-{next(self.ids)}"
                self.files[file_id] = "".join(json.dumps(line) + "\n" for line in lines).encode()
                batch[name] = file_id
        batch["status"] = "completed"
        batch["counts"] = (len(output) + len(errors), len(output), len(errors))

    def _file(self, file_id: str, purpose: str) -> dict:
        size = len(self.files[file_id])
        return {"id": file_id, "object": "file", "bytes": size, "created_at": 0, "filename": "x", "purpose": purpose}

    def _batch(self, batch_id: str) -> dict:
        batch = self.batches[batch_id]
        total, done, failed = batch.get("counts", (0, 0, 0))
        return {
            "id": batch_id,
            "object": "batch",
            "endpoint": "/v1/chat/completions",
            "errors": None,
            "input_file_id": batch["input_file_id"],
            "completion_window": "24h",
            "status": batch["status"],
            "output_file_id": batch.get("output_file_id"),
            "error_file_id": batch.get("error_file_id"),
            "created_at": 0,
            "request_counts": {"total": total, "completed": done, "failed": failed},
        }


@pytest.fixture
def batch_server():
    server = BatchServer()
    yield server
    server.http.shutdown()


def _judge(db, url: str, *flags: str):
    result = run_cli_process(
        "judge", "--db", db, "--task", "story", "--model", "api:m", "--base-url", url, "--samples", "1", *flags
    )
    assert "Traceback" not in result.stderr, result.stderr
    return result


def _jobs(db) -> dict[int, tuple[str, str | None]]:
    study = Study.open(db, create=False)
    try:
        return {r[0]: (r[1], r[2]) for r in study.db.conn.execute("SELECT id, status, batch_id FROM jobs")}
    finally:
        study.close()


def _ratings(db) -> dict[tuple[str, str, int], tuple]:
    """What a rating stores, by (item id, attribute, sample), without when it was stored or its ids."""
    study = Study.open(db, create=False)
    try:
        rows = study.db.conn.execute(
            "SELECT i.id, r.attribute, r.sample, r.value, r.raw, r.parse_status, r.details, r.presentation, "
            "j.id FROM ratings r JOIN items i ON i.key = r.item_key JOIN jobs j ON j.id = r.job_id"
        ).fetchall()
    finally:
        study.close()
    return {(r[0], r[1], r[2]): (r[3], r[4], r[5], json.loads(r[6] or "null"), r[7]) for r in rows}


def test_a_batch_is_submitted_polled_read_as_live_replies_and_cancelled(tmp_path, batch_server):
    db = story_study(tmp_path / "batch.db")
    flags = ("--max-retries", "0", "--batch")

    # 1. submit: every job's request in one file, the batch id stored with the jobs, the process exits
    submitted = _judge(db, batch_server.url, *flags)
    assert submitted.returncode == 0, submitted.stderr
    assert "submitted batch batch_2: 16 requests" in submitted.stdout
    jobs = _jobs(db)
    assert len(jobs) == 16 and set(jobs.values()) == {("batched", "batch_2")}
    assert batch_server.live_bodies == []  # nothing was asked live
    [lines] = batch_server.uploaded
    assert sorted(parse_custom_id(line["custom_id"])[0] for line in lines) == sorted(jobs)

    # 2. still running: its status, nothing read, nothing sent again
    polled = _judge(db, batch_server.url, *flags)
    assert polled.returncode == 0, polled.stderr
    assert "batch batch_2: in_progress" in polled.stdout
    assert _jobs(db) == jobs and len(batch_server.uploaded) == 1 and _ratings(db) == {}

    # `queue` counts them as batched; `queue --cancel` leaves them (the server's batch would run all the same)
    shown = run_cli_process("queue", "--db", db, "--cancel")
    assert shown.returncode == 0 and "16 jobs wait in a server's batch" in shown.stdout, shown.stderr
    assert _jobs(db) == jobs

    # 3. completed: read as live replies; a 500 line and a missing line put their jobs back in the queue
    erroring, dropped = sorted(jobs)[3], sorted(jobs)[10]
    batch_server.erroring, batch_server.dropped = {erroring}, {dropped}
    batch_server.finish = True
    read = _judge(db, batch_server.url, *flags)
    assert read.returncode == 0, read.stderr
    assert "batch batch_2 (completed) read: 14 jobs done, 2 queued again, 0 failed" in read.stdout
    after = _jobs(db)
    assert {s for j, (s, _) in after.items() if j not in (erroring, dropped)} == {"done"}
    # the job the batch left out is sent again at once; the one whose line failed waits for its backoff
    assert after[erroring] == ("queued", None)
    resent = after[dropped][1]
    assert after[dropped] == ("batched", resent) and f"submitted batch {resent}: 1 request," in read.stdout
    assert [parse_custom_id(line["custom_id"])[0] for line in batch_server.uploaded[-1]] == [dropped]
    study = Study.open(db, create=False)
    try:
        errors = dict(study.db.conn.execute("SELECT id, error_kind FROM jobs WHERE error_kind IS NOT NULL"))
    finally:
        study.close()
    assert errors == {erroring: "server_error", dropped: "batch_completed"}
    batched = _ratings(db)
    assert len(batched) == 14
    assert "ok" in {r[2] for r in batched.values()}

    # the same judge live, on another copy of the study, against the same server's chat endpoint: the requests
    # are the lines the batch held, and the ratings stored are the same, value by value
    live_db = story_study(tmp_path / "live.db")
    live = _judge(live_db, batch_server.url, "--max-retries", "0", "--workers", "1")
    assert live.returncode in (0, 1), live.stderr
    assert sorted(json.dumps(b, sort_keys=True) for b in batch_server.live_bodies) == sorted(
        json.dumps(line["body"], sort_keys=True) for line in lines
    )
    live_ratings = _ratings(live_db)
    assert len(live_ratings) == 16
    assert {key: live_ratings[key] for key in batched} == batched

    # 4. the failed line's job goes in a newer batch after its backoff; --cancel stops both on the server
    batch_server.finish = False
    time.sleep(1.5)
    again = _judge(db, batch_server.url, *flags)
    assert again.returncode == 0, again.stderr
    assert f"batch {resent}: in_progress" in again.stdout
    newest = _jobs(db)[erroring][1]
    assert newest not in (None, resent) and _jobs(db)[erroring] == ("batched", newest)
    cancelled = _judge(db, batch_server.url, *flags, "--cancel")
    assert cancelled.returncode == 0, cancelled.stderr
    assert sorted(batch_server.cancelled) == sorted([resent, newest])
    assert f"cancelled batches {', '.join(batch_server.cancelled)}; 2 jobs queued again" in cancelled.stdout
    assert _jobs(db)[erroring] == ("queued", None) and _jobs(db)[dropped] == ("queued", None)
    assert len(_ratings(db)) == 14  # nothing stored twice, nothing lost


@pytest.mark.parametrize(
    ("flags", "rounds"),
    [
        (("--max-retries", "2"), 2),  # replies that do not read are regenerated in the next rounds
        (("--mode", "constrained", "--max-retries", "0"), 1),  # a JSON schema, as OpenAI takes it
        (("--conversation", "--max-retries", "0"), 4),  # one turn per round: each needs the reply before it
    ],
)
def test_jobs_of_several_requests_run_over_several_batches(tmp_path, batch_server, flags, rounds):
    """A job that needs another request (a regeneration, a conversation's next turn) asks it in the next
    round's batch; it ends once its replies are in, stored as a live run of the same judge stores it."""
    db = story_study(tmp_path / "batch.db", STORIES[:2])
    batch_server.finish = True  # each batch ends at once: the next call reads it
    for _ in range(8):
        result = _judge(db, batch_server.url, *flags, "--batch")
        assert result.returncode in (0, 1), result.stderr
        if "submitted batch" not in result.stdout:
            break
    assert set(_jobs(db).values()) == {("done", None)}
    assert len(batch_server.uploaded) >= rounds
    live_db = story_study(tmp_path / "live.db", STORIES[:2])
    assert _judge(live_db, batch_server.url, *flags, "--workers", "1").returncode in (0, 1)
    batched = _ratings(db)
    assert batched == _ratings(live_db) and len(batched) == 8
    if flags == ("--max-retries", "2"):  # the comparison covers regenerated replies
        assert any(r[3].get("attempts", 1) > 1 for r in batched.values())


def test_a_run_killed_while_submitting_loses_no_job(tmp_path, batch_server):
    """Killed (SIGKILL) after the upload, before the batch id is stored: the next run queues the dead process's
    jobs again at once and submits them all (the first batch, if the server made it, is not read)."""
    db = story_study(tmp_path / "batch.db", STORIES[:1])
    batch_server.hang_s = 20.0
    args = ["judge", "--db", db, "--task", "story", "--model", "api:m", "--base-url", batch_server.url]
    args += ["--samples", "1", "--batch"]
    proc = subprocess.Popen([sys.executable, "-m", "tui_rater.cli", *map(str, args)], stdout=subprocess.DEVNULL)
    try:
        assert batch_server.creating.wait(60), "the batch was never created"
        assert {status for status, _ in _jobs(db).values()} == {"leased"}  # held by the submitting process
    finally:
        proc.kill()
        proc.wait(30)
    batch_server.hang_s = 0.0
    again = _judge(db, batch_server.url, "--batch")
    assert again.returncode == 0, again.stderr
    jobs = _jobs(db)
    assert len(jobs) == 4 and len({batch for _, batch in jobs.values()}) == 1
    assert {status for status, _ in jobs.values()} == {"batched"}
    assert len(batch_server.uploaded) == 2 and len(batch_server.uploaded[-1]) == 4


@pytest.mark.parametrize(
    ("flags", "said"),
    [
        (("--model", "judge.gguf"), "it needs an API judge"),
        (("--model", "api:m", "--mode", "distribution"), "--mode distribution reads next-token probabilities"),
        (("--model", "api:m", "--mode", "implicit", "--task", "story-explicit"), "--mode implicit"),
    ],
)
def test_batch_refuses_what_it_cannot_ask(tmp_path, flags, said):
    db = story_study(tmp_path / "s.db")
    (tmp_path / "judge.gguf").write_bytes(b"GGUF")
    result = run_cli_process("judge", "--db", db, *flags, "--batch", cwd=tmp_path)
    assert result.returncode == 2, result.stderr
    assert said in result.stderr and "Traceback" not in result.stderr
    assert _jobs(db) == {}  # nothing enqueued

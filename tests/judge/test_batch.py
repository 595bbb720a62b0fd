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

# how long a misbehaving answer stalls or drips before the server ends it: a run's 1 s deadline must end it first,
# which the test measures from the moment the answer began (not from the process's start, which a loaded machine
# may take seconds over)
MISBEHAVE_S = 20.0


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
        # job id -> 'same' or 'different': its line comes twice in the output file, with the same or another answer
        self.twice: dict[int, str] = {}
        self.ids = itertools.count(1)
        self.hang_s = 0.0  # creating a batch waits this long (a process killed between upload and batch id)
        self.mangled: dict[int, str] = {}  # job id -> 'oversized' (a line past the cap) or 'truncated' (cut short)
        # a misbehaving server: what -> how ('poll', 'download' or 'upload' -> 'stall', 'drip' or 'endless')
        self.misbehave: dict[str, str] = {}
        self.stop = threading.Event()  # ends a stall or a drip at once (the fixture's teardown)
        self.misbehaving_since = 0.0  # when the last misbehaving answer began (time.monotonic)
        self.sent_whole = False  # an endless answer was sent whole: the client read 64 MB without stopping
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

            def _misbehave(self, how: str) -> None:
                """Headers, then a body that never arrives whole: bounded (at most MISBEHAVE_S, at most 64 MB)."""
                server.misbehaving_since = time.monotonic()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(1 << 30))
                self.end_headers()
                try:
                    if how == "stall":
                        server.stop.wait(MISBEHAVE_S)
                    elif how == "drip":  # a byte every 0.2 s: no read waits long, the answer never ends
                        for _ in range(int(MISBEHAVE_S / 0.2)):
                            self.wfile.write(b" ")
                            self.wfile.flush()
                            if server.stop.wait(0.2):
                                break
                    else:  # endless: far past any cap on an answer
                        chunk = b" " * (1 << 16)
                        for _ in range(1024):
                            self.wfile.write(chunk)
                        server.sent_whole = True
                except OSError:  # the client gave up: what the test wants
                    pass
                self.close_connection = True

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                if self.path.split("?")[0] == "/v1/files" and "upload" in server.misbehave:
                    return self._misbehave(server.misbehave["upload"])
                if self.path.split("?")[0] == "/v1/batches" and server.hang_s:
                    server.creating.set()
                    time.sleep(server.hang_s)  # the client is killed meanwhile
                with server.lock:
                    status, answer = server.post(self.path.split("?")[0], self.headers.get("content-type", ""), raw)
                self._send(status, json.dumps(answer).encode())

            def do_GET(self):
                path = self.path.split("?")[0]
                what = "download" if path.endswith("/content") else "poll"
                if what in server.misbehave:
                    return self._misbehave(server.misbehave[what])
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
            if self.batches[batch_id]["status"] != "in_progress":  # as OpenAI: an ended batch cannot be cancelled
                return 400, {
                    "error": {"message": f"Cannot cancel a batch with status '{self.batches[batch_id]['status']}'."}
                }
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
            if self.mangled.get(job_id) == "oversized":  # a reply past the cap on one answer (8 MB)
                response["body"]["choices"][0]["message"]["content"] += " " * (9 << 20)
            output.append({"id": f"r{n}", "custom_id": request["custom_id"], "response": response, "error": None})
            if job_id in self.twice:
                again = json.loads(json.dumps(response))
                if self.twice[job_id] == "different":
                    message = again["body"]["choices"][0]["message"]
                    message["content"] = "I would rate it a 1." if "5" in message["content"] else "Rating: 5"
                output.append({"id": f"r{n}b", "custom_id": request["custom_id"], "response": again, "error": None})
        # a truncated line is the file's last, cut in the middle, without its end of line
        output.sort(key=lambda line: self.mangled.get(parse_custom_id(line["custom_id"])[0]) == "truncated")
        for name, lines in (("output_file_id", output), ("error_file_id", errors)):
            if lines:
                file_id = f"file-{next(self.ids)}"
                text = "".join(json.dumps(line) + "\n" for line in lines)
                if name == "output_file_id" and "truncated" in self.mangled.values():
                    text = text[: len(text) - len(json.dumps(lines[-1])) // 2 - 1]
                self.files[file_id] = text.encode()
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
    server.stop.set()
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
        return {r[0]: (r[1], r[2]) for r in study._db.conn.execute("SELECT id, status, batch_id FROM jobs")}
    finally:
        study.close()


def _ratings(db) -> dict[tuple[str, str, int], tuple]:
    """What a rating stores, by (item id, attribute, sample), without when it was stored or its ids."""
    study = Study.open(db, create=False)
    try:
        rows = study._db.conn.execute(
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
        errors = dict(study._db.conn.execute("SELECT id, error_kind FROM jobs WHERE error_kind IS NOT NULL"))
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
    ("flags", "rounds", "stored"),
    [
        # replies that do not read are regenerated in the next rounds. Which replies do not read depends on the
        # request seeds, and so on the loopback server's port (part of the judge): with 1 sample, all 8 read in
        # about 1 run of 6. 5 samples give 40 replies; all 40 read in about 1 run of 8,000
        (("--max-retries", "2", "--samples", "5"), 2, 40),
        (("--mode", "constrained", "--max-retries", "0"), 1, 8),  # a JSON schema, as OpenAI takes it
        (("--conversation", "--max-retries", "0"), 4, 8),  # one turn per round: each needs the reply before it
    ],
)
def test_jobs_of_several_requests_run_over_several_batches(tmp_path, batch_server, flags, rounds, stored):
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
    assert batched == _ratings(live_db) and len(batched) == stored
    if "--max-retries" in flags and flags[flags.index("--max-retries") + 1] == "2":  # covers regenerated replies
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


def _rows(db, sql: str) -> list[tuple]:
    study = Study.open(db, create=False)
    try:
        return [tuple(r) for r in study._db.conn.execute(sql)]
    finally:
        study.close()


def test_jobs_cancelled_while_batched_never_store_their_replies(tmp_path, batch_server):
    """`queue --cancel` while a batch runs: the batch's later read stores no reply of the cancelled jobs and says how
    many it dropped; another judge's batch, not cancelled, is read whole."""
    db = story_study(tmp_path / "batch.db")
    for model in ("api:m", "api:other"):
        sent = _judge(db, batch_server.url, "--max-retries", "0", "--batch", "--model", model)
        assert sent.returncode == 0 and "submitted batch" in sent.stdout, sent.stderr
    raters = dict(_rows(db, "SELECT name, id FROM raters WHERE kind = 'llm'"))
    cancelled_rater = next(rid for name, rid in raters.items() if "other" not in name)
    name = next(name for name, rid in raters.items() if rid == cancelled_rater)
    batch_of = dict(_rows(db, "SELECT DISTINCT rater_id, batch_id FROM jobs"))
    assert len(set(batch_of.values())) == 2

    shown = run_cli_process("queue", "--db", db, "--cancel", "--rater", name)
    assert shown.returncode == 0, shown.stderr
    assert "cancelled 16 jobs; the replies of the 16 cancelled jobs waiting in a server's batch will not be stored" in (
        " ".join(shown.stdout.split())
    )
    by_status = _rows(db, "SELECT rater_id, status, count(*) FROM jobs GROUP BY rater_id, status ORDER BY rater_id")
    assert {(r, s) for r, s, _ in by_status} == {
        (cancelled_rater, "cancelled"),
        (next(r for r in raters.values() if r != cancelled_rater), "batched"),
    }

    batch_server.finish = True
    read = _judge(db, batch_server.url, "--max-retries", "0", "--batch", "--model", "api:other")
    assert read.returncode == 0, read.stderr
    assert "read: 16 jobs done, 0 queued again, 0 failed" in read.stdout and "dropped" not in read.stdout
    dropped = _judge(db, batch_server.url, "--max-retries", "0", "--batch")
    assert dropped.returncode == 0, dropped.stderr
    assert (
        f"batch {batch_of[cancelled_rater]} (completed) read: 0 jobs done, 0 queued again, 0 failed; "
        "16 replies dropped, not stored: their jobs were cancelled"
    ) in dropped.stdout
    assert "submitted" not in dropped.stdout  # a cancelled job is not sent again either
    stored = _rows(db, "SELECT j.rater_id, count(*) FROM ratings r JOIN jobs j ON j.id = r.job_id GROUP BY j.rater_id")
    assert stored == [(next(r for r in raters.values() if r != cancelled_rater), 16)]
    assert set(_rows(db, f"SELECT status, batch_id FROM jobs WHERE rater_id = {cancelled_rater}")) == {
        ("cancelled", None)
    }
    polls = len(batch_server.files)
    again = _judge(db, batch_server.url, "--max-retries", "0", "--batch")
    assert again.returncode == 0 and batch_of[cancelled_rater] not in again.stdout, again.stdout
    assert len(batch_server.files) == polls

    # retried, they are sent in a new batch: the cancel lost nothing
    assert run_cli_process("queue", "--db", db, "--retry", "--rater", name).returncode == 0
    resent = _judge(db, batch_server.url, "--max-retries", "0", "--batch")
    assert "submitted batch" in resent.stdout and ": 16 requests" in resent.stdout, resent.stdout


def test_an_unreadable_line_of_the_output_queues_its_job_again(tmp_path, batch_server):
    """The output file is read a line at a time: a line past the cap on one reply (skipped as it streams, never
    held whole) and a last line cut short each fail their job as a malformed reply would (queued again)."""
    db = story_study(tmp_path / "batch.db")
    flags = ("--max-retries", "0", "--batch")
    assert _judge(db, batch_server.url, *flags).returncode == 0
    jobs = sorted(_jobs(db))
    oversized, truncated = jobs[2], jobs[7]
    batch_server.mangled = {oversized: "oversized", truncated: "truncated"}
    batch_server.finish = True
    read = _judge(db, batch_server.url, *flags)
    assert read.returncode == 0, read.stderr
    assert "read: 14 jobs done, 2 queued again, 0 failed" in read.stdout
    errors = dict(_rows(db, "SELECT id, error_kind || ': ' || last_error FROM jobs WHERE status != 'done'"))
    assert errors.keys() == {oversized, truncated}
    assert "malformed" in errors[oversized] and "larger than 8 MB" in errors[oversized]
    assert "malformed" in errors[truncated] and "cut short" in errors[truncated]
    assert len(_ratings(db)) == 14


def test_result_lines_are_split_in_bounded_memory():
    """A line far past the cap costs no more memory than the cap: it is skipped as its bytes arrive."""
    import tracemalloc

    from tui_rater.judge.batch import Unreadable, split_lines

    def chunks():
        yield b'{"custom_id": "job-7-' + b"a" * 32 + b'", "x": "'
        for _ in range(64 * 16):  # 64 MB of one line, 64 KB at a time
            yield b"y" * (1 << 16)
        yield b'"}\n{"ok": 1}\n{"cut'

    tracemalloc.start()
    try:
        lines = list(split_lines(chunks(), limit=1 << 20))
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert [type(line) for line in lines] == [Unreadable, str, Unreadable]
    assert lines[0].head.startswith('{"custom_id": "job-7-') and lines[1] == '{"ok": 1}'
    assert peak < 8 << 20, peak


@pytest.mark.parametrize(
    ("what", "how", "said"),
    [
        ("poll", "stall", "no answer within 1 s"),
        ("poll", "drip", "no answer within 1 s"),  # each byte in time: only the total deadline stops it
        ("poll", "endless", "larger than 8 MB"),
        ("download", "stall", "no answer within"),
        ("upload", "stall", "no answer within 1 s"),
    ],
)
def test_a_server_that_stalls_or_sends_without_end_fails_the_run_in_one_sentence(
    tmp_path, batch_server, what, how, said
):
    """Every batch request goes through the live judge's limits (a total deadline, a cap on an answer): a server
    that stalls, drips or never ends its answer fails the run in one sentence, the jobs as they were."""
    db = story_study(tmp_path / "batch.db", STORIES[:1])
    # an endless answer must be ended by the 8 MB cap, not by the deadline: under load (6 busy loops on 2 cores)
    # reading 8 MB took over 1 s and the 1 s deadline said "no answer" first; the stalls and the drip are ended by it
    deadline = "60" if how == "endless" else "1"
    flags = ("--max-retries", "0", "--timeout", deadline, "--batch")
    if what != "upload":
        assert _judge(db, batch_server.url, *flags).returncode == 0
        batch_server.finish = what == "download"
    before = _rows(db, "SELECT id, status, batch_id, attempts, error_kind FROM jobs ORDER BY id")
    batch_server.misbehave = {what: how}
    failed = _judge(db, batch_server.url, *flags)
    ended = time.monotonic()
    assert failed.returncode != 0, failed.stdout
    [error] = [line for line in failed.stderr.splitlines() if line.startswith("tui-rater: error:")]
    assert said in error, failed.stderr
    if how == "endless":  # the cap ended it: the client stopped reading long before the server's 64 MB
        assert not batch_server.sent_whole
    else:  # the 1 s deadline ended it: the run was over while the server still stalled or dripped (MISBEHAVE_S)
        assert ended - batch_server.misbehaving_since < MISBEHAVE_S
    after = _rows(db, "SELECT id, status, batch_id, attempts, error_kind FROM jobs ORDER BY id")
    if what == "upload":  # never sent: queued as before the run, its attempt not counted
        assert before == [] and {row[1:] for row in after} == {("queued", None, 0, None)}
    else:
        assert after == before and {row[1] for row in after} == {"batched"}
    batch_server.misbehave = {}
    batch_server.stop.set()
    retried = _judge(db, batch_server.url, *flags)
    assert retried.returncode == 0, retried.stderr


def test_cancelling_a_batch_that_has_already_ended_lets_it_go_without_asking_the_server(tmp_path, batch_server):
    """A batch that ended (completed, failed, expired) before `--batch --cancel`: a server refuses to cancel it (OpenAI
    answers 400), which stopped the command. Its jobs are queued again, unread, as asked; running ones are cancelled."""
    db = story_study(tmp_path / "batch.db")
    flags = ("--max-retries", "0", "--batch")
    assert _judge(db, batch_server.url, *flags).returncode == 0
    [ended] = {batch_id for _, batch_id in _jobs(db).values()}
    batch_server._complete(ended)  # finished on the server, never read here
    cancelled = _judge(db, batch_server.url, *flags, "--cancel")
    assert cancelled.returncode == 0, cancelled.stderr
    assert f"batch {ended} had already ended (not read: nothing to cancel on the server); 16 jobs queued again" in (
        cancelled.stdout
    )
    assert batch_server.cancelled == []
    assert set(_jobs(db).values()) == {("queued", None)} and _ratings(db) == {}


def test_a_request_answered_twice_differently_fails_its_job_and_says_so(tmp_path, batch_server):
    """One custom_id twice in the output file with different answers: the first used to be stored silently ("8 of 8
    readings usable"). Now neither is: the job fails (conflict), said at the end; the same answer twice is kept."""
    db = story_study(tmp_path / "batch.db", STORIES[:2])
    flags = ("--max-retries", "0", "--batch")
    assert _judge(db, batch_server.url, *flags).returncode == 0
    jobs = sorted(_jobs(db))
    assert len(jobs) == 8
    batch_server.twice = {jobs[1]: "different", jobs[5]: "same"}
    batch_server.finish = True
    read = _judge(db, batch_server.url, *flags)
    assert read.returncode == 1, (read.stdout, read.stderr)  # a job failed: not a success
    assert "read: 7 jobs done, 0 queued again, 1 failed" in read.stdout, read.stdout
    assert " of 7 readings usable" in read.stdout, read.stdout  # the failed job's reading is not counted
    assert (
        "tui-rater: error: batch batch_2's results hold 1 request answered twice with different answers: that job "
        "failed (conflict), nothing of it stored (`tui-rater queue --retry` asks again)"
    ) in read.stderr
    stored = _ratings(db)
    assert len(stored) == 7
    study = Study.open(db, create=False)
    try:
        status, kind = study._db.conn.execute("SELECT status, error_kind FROM jobs WHERE id = ?", [jobs[1]]).fetchone()
        assert (status, kind) == ("failed", "conflict")
        assert study._db.conn.execute("SELECT count(*) FROM ratings WHERE job_id = ?", [jobs[1]]).fetchone()[0] == 0
        assert study._db.conn.execute("SELECT count(*) FROM ratings WHERE job_id = ?", [jobs[5]]).fetchone()[0] == 1
    finally:
        study.close()

"""Issue 24 (trust, third pass), hangs and resources: a server that drips its headers, one that never answers,
and a reply that is small on the wire and huge decoded. Through the real CLI against loopback servers."""

from __future__ import annotations

import gzip
import json
import re
import socket
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from tests.support import SAMPLE, digest, ok_body, run_cli_process


class RawServer:
    """A loopback TCP server answering each connection with ``answer(connection)``, in a thread of its own."""

    def __init__(self, answer):
        self.sock = socket.socket()
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(64)
        self.answer, self.connections, self.stopped = answer, 0, threading.Event()
        # when the first connection came (time.monotonic): a run's time from there leaves out its start-up (imports
        # that took 15 s and more on a loaded 2-core machine), which is not what a deadline here is about
        self.first_at: float | None = None
        threading.Thread(target=self._accept, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1"

    def _accept(self) -> None:
        while not self.stopped.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            if self.first_at is None:
                self.first_at = time.monotonic()
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            conn.settimeout(120)
            request = b""
            while b"\r\n\r\n" not in request:
                request += conn.recv(65536)
            self.answer(conn, self.stopped)
        except OSError:
            pass
        finally:
            conn.close()

    def close(self) -> None:
        self.stopped.set()
        self.sock.close()


def _drip_headers(conn: socket.socket, stopped: threading.Event) -> None:
    for byte in b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n" * 100:
        if stopped.is_set():
            return
        conn.sendall(bytes([byte]))
        time.sleep(1.0)


def _silent(conn: socket.socket, stopped: threading.Event) -> None:
    stopped.wait(120)


def _body(payload: bytes, encoding: str) -> bytes:
    head = f"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-encoding: {encoding}\r\n"
    return head.encode() + f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n".encode() + payload


def _gzip_bomb(conn: socket.socket, stopped: threading.Event) -> None:
    # 100 MB of spaces before a valid reply: ~100 KB on the wire
    payload = gzip.compress(b" " * (100 << 20) + ok_body().encode(), compresslevel=9)
    conn.sendall(_body(payload, "gzip"))


def _gzip_small(conn: socket.socket, stopped: threading.Event) -> None:
    conn.sendall(_body(gzip.compress(ok_body("Rating: 4").encode()), "gzip"))


@pytest.fixture
def study(tmp_path) -> Path:
    db = tmp_path / "s.db"
    assert run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db).returncode == 0
    return db


@pytest.fixture
def raw_server():
    servers = []

    def start(answer) -> RawServer:
        servers.append(RawServer(answer))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def _judge(db: Path, url: str, *flags: str, timeout: float = 180):
    """The run's result, and when it ended (time.monotonic)."""
    result = run_cli_process(
        "judge", "--db", db, "--model", "api:m", "--base-url", url, "--samples", "1", *flags, timeout=timeout
    )
    return result, time.monotonic()


def since_first_contact(server: RawServer, ended: float) -> float:
    """Seconds from the server's first connection to the run's end: what the server's behaviour cost the run."""
    assert server.first_at is not None, "the run never reached the server"
    return ended - server.first_at


def test_headers_dripped_a_byte_a_second_end_at_the_timeout(study, raw_server):
    server = raw_server(_drip_headers)
    result, ended = _judge(study, server.url, "--limit", "2", "--timeout", "3")
    took = since_first_contact(server, ended)
    # every request ends at its 3 s deadline (the read timeout restarted with each byte: forever); after
    # 8 jobs in a row without an answer the run stops in one sentence instead of retrying for minutes
    assert result.returncode == 2 and re.search(r"\b(8|9|1\d) jobs in a row got no answer", result.stderr), (
        result.stderr
    )
    assert "timeout" in result.stderr and took < 60, took
    with sqlite3.connect(study) as conn:
        assert conn.execute("SELECT count(*) FROM jobs WHERE status = 'leased'").fetchone()[0] == 0


def test_the_check_against_dripped_headers_ends_too(study, raw_server):
    server = raw_server(_drip_headers)
    before = digest(study)
    result = run_cli_process(
        "judge", "--db", study, "--model", "api:m", "--base-url", server.url, "--timeout", "3", "--check",
        "--check-items", "1", timeout=180,
    )  # fmt: skip
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert since_first_contact(server, time.monotonic()) < 60 and digest(study) == before


def test_a_silent_server_stops_the_run_with_one_sentence(study, raw_server):
    server = raw_server(_silent)
    result, ended = _judge(study, server.url, "--limit", "3", "--timeout", "2")
    took = since_first_contact(server, ended)
    assert result.returncode == 2 and re.search(r"\b(8|9|1\d) jobs in a row got no answer", result.stderr), (
        result.stderr
    )
    assert "run the same command again to continue" in result.stderr and took < 60, took


def test_a_gzip_bomb_is_refused_by_its_decoded_size(study, raw_server):
    server = raw_server(_gzip_bomb)
    result, _ = _judge(study, server.url, "--limit", "1", "--workers", "1", "--timeout", "20")
    with sqlite3.connect(study) as conn:
        errors = [e for (e,) in conn.execute("SELECT last_error FROM jobs WHERE last_error IS NOT NULL")]
        stored = conn.execute("SELECT count(*) FROM ratings WHERE raw IS NOT NULL").fetchone()[0]
    assert errors and all("larger than 8 MB" in e for e in errors), (errors, result.stderr)
    assert stored == 0


def test_a_small_gzip_reply_is_read(study, raw_server):
    server = raw_server(_gzip_small)
    result, _ = _judge(study, server.url, "--limit", "1", "--timeout", "20")
    assert result.returncode == 0, result.stderr
    with sqlite3.connect(study) as conn:
        rows = conn.execute("SELECT raw, value FROM ratings WHERE raw IS NOT NULL").fetchall()
    assert rows and all(raw == "Rating: 4" and value == 4.0 for raw, value in rows)
    assert json.loads(ok_body("x"))["choices"]  # the body the server compressed is the ordinary one

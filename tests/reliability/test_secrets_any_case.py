"""A URL's secret echoed back in another letter case or encoding is never stored (issue 36.6).

A server echoed the request's URL back in lower case: the secret it carried (`?sig=…`) was stored in the study,
because the scrub looked for the secret as written. Through the real CLI, then the study read with sqlite3."""

from __future__ import annotations

import base64
import json
import os
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import quote

import pytest

from tests.support import run_cli_process, story_study

SIG = "SeCrEt-Sig-Zm9v+Ab/42"  # mixed case, with characters that percent-encoding changes


@pytest.fixture
def echoing_server():
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            self.rfile.read(int(self.headers.get("content-length", 0)))
            path = self.path
            echoed = [
                path.lower(),
                path.upper(),
                quote(SIG, safe="").lower(),
                quote(SIG, safe="").upper(),
                base64.b64encode(SIG.encode()).decode(),
                SIG.swapcase(),
            ]
            content = "I would rate it a 4. (you called " + " | ".join(echoed) + ")"
            body = json.dumps(
                {
                    "id": "x",
                    "object": "chat.completion",
                    "model": SIG.lower(),
                    "choices": [
                        {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
                    ],
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()
    server.server_close()


def test_a_secret_echoed_in_another_case_or_encoding_is_never_stored(tmp_path, echoing_server):
    db = story_study(tmp_path / "s.db")
    url = f"{echoing_server}?sig={quote(SIG, safe='')}&api-version=2024-06-01"
    env = {**os.environ, "TEST_KEY": "k-for-this-server"}
    judged = run_cli_process(
        "judge", "--db", db, "--model", "api:echo", "--base-url", url, "--api-key-env", "TEST_KEY",
        "--limit", "1", "--samples", "1", env=env,
    )  # fmt: skip
    assert judged.returncode == 0, judged.stderr
    with sqlite3.connect(db) as conn:
        raws = [r[0] for r in conn.execute("SELECT raw FROM ratings WHERE raw IS NOT NULL")]
        dumped = "\n".join(conn.iterdump())  # every table: ratings, replies cached, judges' sources
    assert raws and all("(you called /v1/chat/completions?sig=[key]&api-version=2024-06-01" in r for r in raws), raws
    assert all(r.count("[key]") == 6 for r in raws), raws[0]
    lowered = dumped.lower()
    for form in (SIG, quote(SIG, safe=""), base64.b64encode(SIG.encode()).decode()):
        assert form.lower() not in lowered, form
    assert judged.stdout.lower().count(SIG.lower()) == 0 and judged.stderr.lower().count(SIG.lower()) == 0

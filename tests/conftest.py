"""Fixtures for every test folder. Helpers that are not fixtures are in tests/support.py."""

from __future__ import annotations

import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support import Script, copy_demo, run_cli_process
from tui_rater.judge.tiny_gguf import write_tiny_gguf


@pytest.fixture(scope="session", autouse=True)
def _private_cache_dir(tmp_path_factory):
    """Model hashes (tui_rater.judge.spec.file_sha256) are cached in a temporary folder, never the user's."""
    os.environ["TUI_RATER_CACHE_DIR"] = str(tmp_path_factory.mktemp("user-cache"))


@pytest.fixture(scope="session")
def demo_original(tmp_path_factory) -> Path:
    """What `tui-rater demo --no-app` imports (HANNA's stories, people and an LLM: 2,304 ratings), built once per
    session. Never change it: take the `demo` fixture (a copy) or `copy_demo` it into a folder of your own."""
    db = tmp_path_factory.mktemp("demo") / "demo.db"
    env = {k: v for k, v in os.environ.items() if not k.startswith("TUI_RATER_")}  # no annotator, no user config
    env |= {"XDG_CONFIG_HOME": str(db.parent / "config"), "HOME": str(db.parent)}
    result = run_cli_process("demo", "--no-app", "--db", db, cwd=db.parent, env=env)
    assert result.returncode == 0, result.stderr
    return db


@pytest.fixture
def demo(demo_original, tmp_path) -> Path:
    """This test's own copy of the demo study (tmp_path/demo/study.db)."""
    return copy_demo(demo_original, tmp_path / "demo")


@pytest.fixture
def db_path(tmp_path) -> Path:
    return tmp_path / "study.db"


@pytest.fixture
def cli(capsys):
    """Run the CLI in-process; return (exit code, stdout, stderr)."""
    from tui_rater.cli import main

    def run(*args: str):
        code = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory) -> Path:
    """A random-weight GGUF that real llama.cpp loads (made here, in seconds)."""
    return write_tiny_gguf(tmp_path_factory.mktemp("model") / "tiny.gguf", seed=7)


@pytest.fixture
def fake_server():
    """Start a loopback HTTP server that answers POSTs from a ``Script``; returns its /v1 base URL."""
    import json

    servers = []

    def start(script: Script) -> str:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                raw = self.rfile.read(int(self.headers.get("content-length", 0)))
                try:
                    sent = json.loads(raw)
                except ValueError:
                    sent = None
                status, headers, body, delay = script.next({k.lower(): v for k, v in self.headers.items()}, sent)
                if delay:
                    time.sleep(delay)
                self.send_response(status)
                for k, v in {"content-type": "application/json", **headers}.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(body.encode())

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1"

    yield start
    for server in servers:
        server.shutdown()


@pytest.fixture
def serve_zoo():
    """Start the loopback zoo (tests/zoo.py: a bad, or good, reply per item); returns (its Zoo, its /v1 URL)."""
    from tests import zoo

    servers = []

    def start(**behaviour) -> tuple[zoo.Zoo, str]:
        found = zoo.Zoo(**behaviour)
        server, url = zoo.serve(found)
        servers.append(server)
        return found, url

    yield start
    for server in servers:
        server.shutdown()

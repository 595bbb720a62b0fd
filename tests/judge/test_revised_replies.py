"""A judge that revises its score is stored as its revision, or as a typed failure -- never its first number
(issue 30, item 2) -- by the judge worker and by `reparse` alike: both read a reply through the protocol's parser
(domain/modes.py's TextMode.read; a batch's replies are run by the same worker).

A loopback OpenAI-compatible server answers each story with the reply its text names; `tui-rater judge` and
`tui-rater reparse` run in-process through the CLI.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tui_rater.store.study import Study

# story text -> the judge's reply, and what the study must store (value, status)
REPLIES = {
    "story-lower": (
        "I'd give it a 4. On second thought, the ending is rushed, so I'll lower it to 3.",
        (3.0, "ok"),
    ),
    "story-raise": ("Score: 2. Thinking about it more, I'd bump it up to a 4.", (4.0, "ok")),
    "story-unsaid": (
        "I'd give it a 4. On second thought, the ending is rushed, so I'll lower it.",
        (None, "ambiguous"),
    ),
    "story-two": ("I'd give it a 4.\n\nScore: 3", (None, "ambiguous")),
    "story-list": ("\n1. The story is about ___.\n2. The main character is ___.\n3. ", (None, "ambiguous")),
    "story-plain": ("Rating: 4/5", (4.0, "ok")),
}


@pytest.fixture
def revising_judge():
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            prompt = body["messages"][-1]["content"]
            text = next(reply for key, (reply, _) in REPLIES.items() if key in prompt)
            payload = json.dumps(
                {
                    "id": "r",
                    "object": "chat.completion",
                    "created": 0,
                    "model": "m",
                    "choices": [
                        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": text}}
                    ],
                }
            ).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


def _stored(db):
    study = Study.open(db)
    rows = study._db.conn.execute(
        "SELECT r.id, i.id, r.value, r.parse_status FROM ratings r JOIN items i ON i.key = r.item_key "
        "WHERE r.job_id IS NOT NULL AND r.attribute = 'likability'"
    ).fetchall()
    study.close()
    return {item: (rating_id, value, status) for rating_id, item, value, status in rows}


def test_a_revised_score_is_stored_as_its_revision_and_reparse_reads_it_the_same(tmp_path, revising_judge, cli):
    db = tmp_path / "s.db"
    study = Study.open(db)
    stories = [{"id": key, "system": "s", "prompt": "A dragon knits.", "story": f"The {key} tale."} for key in REPLIES]
    study.add_items(study.task("story"), stories)
    study.close()
    code, _, err = cli(
        "judge", "--db", db, "--task", "story", "--model", "api:m", "--base-url", revising_judge,
        "--samples", "1", "--max-retries", "0", "--workers", "1",
    )  # fmt: skip
    assert "Traceback" not in err, err
    stored = _stored(db)
    assert {item: (value, status) for item, (_, value, status) in stored.items()} == {
        key: want for key, (_, want) in REPLIES.items()
    }

    # a study read by the parser before this change held the first number, ok: reparse reads the revision
    study = Study.open(db)
    with study._db.conn:
        for key in ("story-lower", "story-unsaid", "story-two", "story-list"):
            study._db.conn.execute("UPDATE ratings SET value = 4, parse_status = 'ok' WHERE id = ?", [stored[key][0]])
    study.close()
    code, out, _ = cli("reparse", "--db", db)
    assert code == 0 and " 4 changed" in out, out
    assert {item: (value, status) for item, (_, value, status) in _stored(db).items()} == {
        key: want for key, (_, want) in REPLIES.items()
    }

"""`--model hf:…` against a hostile hub (issue 36.6): a loopback server reached through ``HF_ENDPOINT``, as in
`test_hub_model.py`, that names its file with a path out of the cache, cuts the download short, or claims 1 TB.

Each used to end in exit 70 "a bug in tui-rater" (and the ETag's path wrote a 10 MB file outside the Hugging Face
cache); each is now one sentence, exit 1 or 2, nothing written outside the cache and no judge stored.
"""

from __future__ import annotations

import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.judge.test_hub_model import COMMIT, _env, _study
from tests.support import run_cli_process

SIZE = 10 << 20  # what the hub says the file holds


class HostileHub:
    def __init__(self, case: str):
        hub = self
        self.case = case

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, body: bool) -> None:
                etag, commit, size, sent = "a" * 64, COMMIT, SIZE, SIZE
                if hub.case == "etag":
                    etag = "../../../../outside"
                elif hub.case == "commit":
                    commit = "../../../../outside"
                elif hub.case == "short":
                    sent = 1 << 20  # 1 MB of the 10 MB said
                elif hub.case == "huge":
                    size = 1 << 40
                self.send_response(200)
                self.send_header("X-Repo-Commit", commit)
                self.send_header("ETag", f'"{etag}"')
                self.send_header("Content-Length", str(size))
                self.end_headers()
                if body:
                    self.close_connection = True
                    try:
                        self.wfile.write(b"GGUF" + bytes(min(sent, 1 << 20) - 4))
                        self.wfile.write(bytes(sent - min(sent, 1 << 20)))
                    except OSError:
                        pass

            def do_HEAD(self):
                self._answer(body=False)

            def do_GET(self):
                self._answer(body=True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


CASES = {
    "etag": "names o/r/x.gguf's ETag '../../../../outside', which is not a plain name",
    "commit": "names o/r/x.gguf's commit '../../../../outside', which is not a plain name",
    "short": "the download of o/r/x.gguf from {url} failed (peer closed connection without sending complete message "
    "body (received 1048576 bytes, expected 10485760)); run the same command again to resume it",
    "huge": "says o/r/x.gguf is 1,099.5 GB, more than the",
}


@pytest.mark.parametrize("case", list(CASES))
def test_a_hostile_hub_is_one_sentence_and_writes_nothing_outside_the_cache(tmp_path, case):
    hub = HostileHub(case)
    try:
        db = _study(tmp_path)
        result = run_cli_process(
            "judge", "--db", db, "--model", "hf:o/r/x.gguf", env=_env(tmp_path, hub.url), timeout=300
        )
    finally:
        hub.close()
    assert result.returncode in (1, 2), (result.returncode, result.stderr)
    errors = [line for line in result.stderr.splitlines() if line.startswith("tui-rater: error:")]
    assert len(errors) == 1 and CASES[case].format(url=hub.url) in errors[0], result.stderr
    assert "Traceback" not in result.stderr and "a bug in tui-rater" not in result.stderr
    outside = [p for p in tmp_path.rglob("*") if p.is_file() and "hf" not in p.relative_to(tmp_path).parts]
    assert sorted(p.name for p in outside) == ["s.db"], outside  # the study, and nothing the hub named
    assert sqlite3.connect(db).execute("SELECT count(*) FROM raters").fetchone()[0] == 0


def test_a_path_out_of_the_cache_in_the_model_name_is_one_sentence(tmp_path):
    db = _study(tmp_path)
    result = run_cli_process(
        "judge", "--db", db, "--model", "hf:o/r/../../../x.gguf", env=_env(tmp_path, "http://127.0.0.1:9")
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr == (
        "tui-rater: error: 'hf:o/r/../../../x.gguf' is not a Hub model: its path may not hold '.', '..' or '\\' "
        "(hf:OWNER/REPO/FILE.gguf)\n"
    )

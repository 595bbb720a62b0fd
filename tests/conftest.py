from __future__ import annotations

import hashlib
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
SAMPLE = ROOT / "sample_data"


def digest(path: Path) -> str | None:
    """SHA-256 of a file (None if absent): 'the database is byte-for-byte unchanged'."""
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


@pytest.fixture(scope="session", autouse=True)
def _private_cache_dir(tmp_path_factory):
    """Model hashes (tui_rater.judge.spec.file_sha256) are cached in a temporary folder, never the user's."""
    os.environ["TUI_RATER_CACHE_DIR"] = str(tmp_path_factory.mktemp("user-cache"))


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


def run_cli_process(*args: str, cwd: Path | None = None, env: dict | None = None, timeout: float = 120):
    return subprocess.run(
        [sys.executable, "-m", "tui_rater.cli", *map(str, args)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )

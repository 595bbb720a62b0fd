"""Start-up pays only for what the command uses (issue 35): `--help` and `info` import no numpy, polars or openai,
and read no installed package's metadata (sqlite-utils' plugin scan parsed every distribution's entry points)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tui_rater.store.study import Study

HEAVY = ("numpy", "polars", "openai", "importlib.metadata", "textual")


def _imported(*args: str) -> set[str]:
    """The modules a real `tui-rater` process imported, from ``python -X importtime``."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tui_rater.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "NO_COLOR": "1"},
    )
    assert done.returncode == 0, done.stderr[-2000:]
    lines = [line for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert lines, done.stderr[-2000:]
    return {line.rsplit("|", 1)[1].strip() for line in lines}


@pytest.mark.parametrize("command", [["--help"], ["annotate", "--help"], ["report", "--help"], ["judge", "--help"]])
def test_help_imports_nothing_heavy(command):
    imported = _imported(*command)
    assert "tui_rater.cli" in imported
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))


def test_info_imports_nothing_heavy(tmp_path):
    study = Study.open(tmp_path / "s.db")
    study.human("ann")
    study._db.conn.close()
    imported = _imported("info", "--db", str(tmp_path / "s.db"))
    assert "sqlite3" in imported
    assert not imported & set(HEAVY), sorted(imported & set(HEAVY))

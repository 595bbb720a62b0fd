"""Start-up pays only for what the command uses (issue 35): `--help` and `info` import no numpy, polars or openai,
and read no installed package's metadata (sqlite-utils' plugin scan parsed every distribution's entry points)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from tui_rater.store.study import Study

HEAVY = (
    "numpy",
    "polars",
    "openai",
    "llama_cpp",
    "importlib.metadata",
    "textual",
    # the reply parser compiles ~100 regular expressions on import (~40 ms); `tui_rater/__init__` loads it lazily,
    # and --mode's choices are constants (domain/mode_names.py) instead of the modes and the protocols
    "tui_rater.domain.parsing",
    "tui_rater.domain.modes",
    "tui_rater.domain.protocols",
)


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


def test_mode_names_are_the_modes():
    """--mode's choices are built from constants; they name exactly the built-in modes, in their order."""
    from tui_rater.domain.mode_names import MODE_NAMES
    from tui_rater.domain.modes import MODES

    assert tuple(MODES) == MODE_NAMES


def test_the_package_still_exports_the_parser():
    import tui_rater
    from tui_rater.domain import parsing

    assert tui_rater.parse_score is parsing.parse_score
    assert tui_rater.ParseResult is parsing.ParseResult
    assert tui_rater.parse_score("Score: 4", (1, 5)) == parsing.ParseResult(4.0)

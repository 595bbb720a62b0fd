"""Static checks run with the tests (so `.ci/run` runs them): ruff, ruff format, import contracts, mypy.

Each check is the tool itself, run on the repository; a failure prints the tool's own report.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
BIN = Path(sys.executable).parent


def _tool(name: str) -> str:
    found = BIN / name if (BIN / name).exists() else shutil.which(name)
    if not found:
        pytest.fail(f"{name} is not installed: install the test extra (pip install -e '.[test]')")
    return str(found)


def _run(*command: str) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_lint():
    result = _run(_tool("ruff"), "check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format():
    result = _run(_tool("ruff"), "format", "--check", "--no-cache", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_import_contracts():
    """domain imports nothing of the project; store only domain; judge and stats only domain/store;
    service on top of them; ui and cli on top; nothing below the UI imports Textual."""
    result = _run(_tool("lint-imports"), "--no-cache")
    assert result.returncode == 0, result.stdout + result.stderr


def test_mypy_strict():
    """mypy --strict on what pyproject.toml's [tool.mypy] names: the whole tui_rater package.

    The cache (.mypy_cache, git-ignored) makes a second run take seconds; a cold one takes about 25 s."""
    result = _run(sys.executable, "-m", "mypy", "--config-file", "pyproject.toml", "--cache-dir", ".mypy_cache")
    assert result.returncode == 0, result.stdout + result.stderr


def test_no_import_cycles_between_modules():
    import grimp

    # no cache: a stale one can hide a cycle
    graph = grimp.build_graph("tui_rater", exclude_type_checking_imports=True, cache_dir=None)
    modules = sorted(graph.modules)
    cycles = []
    for module in modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if imported != module and graph.chain_exists(importer=imported, imported=module, as_packages=False):
                cycles.append((module, imported))
    assert not cycles, f"import cycles: {cycles[:5]}"


def test_only_the_store_speaks_to_the_database_and_only_backends_know_their_kind():
    """Issue 31: outside ``store/`` no module reaches through a study to its SQLite connection (a query there is
    a named store function: ``store/progress_reads.py`` holds the ones `progress` and the sections used to run),
    and outside ``judge/backends/`` nothing asks whether a judge is an API (a backend declares its abilities)."""
    import re

    # ``Study._db`` is the store's own: ``study._db``, ``study.db`` and ``anything.db.query(...)`` are store-only
    pattern = re.compile(r"\._db\b|\.db\.\w|\bstudy\.db\b|\bis_api\b")
    found = []
    for path in sorted((ROOT / "tui_rater").rglob("*.py")):
        relative = path.relative_to(ROOT / "tui_rater").as_posix()
        if relative.startswith(("store/", "judge/backends/")):
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if pattern.search(line):
                found.append(f"tui_rater/{relative}:{number}: {line.strip()}")
    assert found == []


def test_a_study_shows_no_database_to_the_layers_above(tmp_path):
    """Issue 31 item 2: the study's SQLite database is private to ``store/`` (``Study._db``): a ``Study`` has no
    public ``db``/``conn``, and what it offers the layers above is ``domain.study_store.StudyStore`` (mypy checks
    that ``Study`` satisfies it: ``store/study.py`` ends with that check)."""
    from tui_rater.store.study import Study

    study = Study.open(tmp_path / "s.db")
    try:
        assert not hasattr(study, "db") and not hasattr(study, "conn")
        public = {name for name in dir(study) if not name.startswith("_")}
        assert not any("sqlite" in type(getattr(study, name)).__module__ for name in public - {"tasks"})
    finally:
        study.close()

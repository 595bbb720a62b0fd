"""The service layer is the CLI's one door to the study, the judges and the statistics (issue 31): an import
contract says so, and the package's exports are the use cases, loaded only when used."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parent.parent.parent
BELOW = ("tui_rater.store", "tui_rater.judge", "tui_rater.stats")


def _contract() -> dict:
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    found = [c for c in config["tool"]["importlinter"]["contracts"] if c.get("id") == "cli-through-service"]
    assert len(found) == 1, "pyproject.toml has no contract keeping the CLI off store, judge and stats"
    return found[0]


def test_the_cli_imports_store_judge_or_stats_only_where_the_contract_says_why():
    contract = _contract()
    assert contract["type"] == "forbidden" and sorted(contract["forbidden_modules"]) == sorted(BELOW)
    graph = grimp.build_graph(
        "tui_rater", cache_dir=None
    )  # no stale cache; TYPE_CHECKING imports count: a type is an import too
    direct = set()
    for module in graph.find_children("tui_rater.cli") | {"tui_rater.cli"}:
        for imported in graph.find_modules_directly_imported_by(module):
            if imported.startswith(BELOW):
                direct.add(f"{module} -> {imported}")
    assert direct == set(contract.get("ignore_imports", [])), sorted(direct)
    assert len(direct) <= 1  # the goal: none, or very few (each with its reason in pyproject.toml)
    kept = subprocess.run(
        [str(Path(sys.executable).parent / "lint-imports"), "--no-cache", "--contract", "cli-through-service"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert kept.returncode == 0, kept.stdout + kept.stderr


def test_the_service_exports_the_use_cases_and_loads_none_until_used():
    code = (
        "import sys, tui_rater.service as s\n"
        "heavy = [m for m in ('numpy', 'polars', 'openai', 'llama_cpp', 'tui_rater.store') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "missing = [name for name in s.__all__ if getattr(s, name, None) is None]\n"
        "assert not missing, missing\n"
        "assert callable(s.judge) and callable(s.report) and callable(s.open_study)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


def test_the_app_imports_no_store_judge_or_stats_module_not_even_for_a_type():
    """Issue 31 item 1: the app's models (the annotator's session, the adjudicator's) and the study type come
    through ``service`` (``service.session``, ``service.study``); the contract names no exception."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    (contract,) = [c for c in config["tool"]["importlinter"]["contracts"] if c.get("id") == "ui-through-service"]
    assert contract.get("ignore_imports", []) == []
    graph = grimp.build_graph("tui_rater", cache_dir=None)  # TYPE_CHECKING imports count: a type is an import too
    direct = sorted(
        f"{module} -> {imported}"
        for module in graph.find_children("tui_rater.ui") | graph.find_descendants("tui_rater.ui") | {"tui_rater.ui"}
        for imported in graph.find_modules_directly_imported_by(module)
        if imported.startswith(BELOW)
    )
    assert direct == []

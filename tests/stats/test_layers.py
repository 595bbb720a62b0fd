"""stats uses only domain and store (no judge, service, ui, cli; no Textual), and the report asks the
protocols instead of recognising tasks by name, field or scale kind."""

from __future__ import annotations

import re
import subprocess
import sys

from tests.support import ROOT

MODULES = [
    "tui_rater.stats.sections",  # first: no cycle back through report
    "tui_rater.stats.report",
    "tui_rater.stats.render",
    "tui_rater.stats.live",
    "tui_rater.stats.records",
    "tui_rater.stats.html",  # and its plots: matplotlib only when a plot is drawn
]


def test_stats_imports_only_domain_store_and_itself():
    code = (
        "import sys, importlib\n"
        f"for name in {MODULES!r}: importlib.import_module(name)\n"
        "bad = sorted(m for m in sys.modules if m.startswith('tui_rater.') and m.split('.')[1] not in "
        "('domain', 'store', 'stats', 'config') or m.split('.')[0] in ('textual', 'llama_cpp', 'openai', "
        "'matplotlib'))\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_no_protocol_is_recognised_by_name_or_scale_kind_in_stats():
    pattern = re.compile(r"is_spa|is_pairwise|task\.name ==|scale\.kind|\bkind == .choice.")
    found = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in sorted((ROOT / "tui_rater" / "stats").rglob("*.py"))
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1)
        if pattern.search(line)
    ]
    assert found == []

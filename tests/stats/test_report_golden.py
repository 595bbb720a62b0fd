"""Every report on the bundled data, and on a study that reaches every section, is what it was (issue 23).

The golden files in tests/data/report/ were written by the code before the report's sections were reshaped
(``tests/stats/golden.py`` builds the studies and says how to regenerate them). A reshaping changes no
number and no layout; a deliberate correction of a number updates the files in a commit of its own that
says why.
"""

from __future__ import annotations

import difflib
import json
from pathlib import Path

import pytest

from tests.stats.golden import GOLDEN, REPORTS, report, studies
from tui_rater.stats.sections import SECTIONS


@pytest.fixture(scope="module")
def found(tmp_path_factory):
    return studies(tmp_path_factory.mktemp("golden"))


# an HTML report draws its figures with matplotlib (seconds each): with the slow tests
NAMES = [pytest.param(name, marks=pytest.mark.slow) if name.endswith(".html") else name for name, _, _ in REPORTS]


@pytest.mark.parametrize("name", NAMES)
def test_the_report_is_byte_for_byte_what_it_was(found, name):
    expected = (GOLDEN / name).read_text(encoding="utf-8")
    written = report(found, name)
    if written != expected:
        diff = difflib.unified_diff(
            expected.splitlines(), written.splitlines(), f"golden/{name}", "now", lineterm="", n=1
        )
        pytest.fail("the report changed:\n" + "\n".join(list(diff)[:60]))


def test_every_table_of_every_section_has_rows_in_the_golden_study():
    """The wide study is worth comparing only while it reaches every table a section writes: a new section
    extends ``golden.wide_study`` (and the golden files, in a commit that says so)."""
    golden = json.loads((GOLDEN / "wide.json").read_text(encoding="utf-8"))
    tables = {r["table"] for records in golden["tasks"].values() for r in records}
    written = {table for section in SECTIONS.values() for table in section.tables}
    assert written - tables == set()
    assert len(written) >= 25  # table1, welch, ..., notes: every table of today's sections


@pytest.mark.skipif(not Path("/proc/cpuinfo").exists(), reason="the pin is for x86-64 Linux")
def test_the_arithmetic_is_pinned_before_numpy_is_imported(capsys):
    """The golden reports hold only where the machine's arithmetic is the one they were written with (``tests``'
    package pins it before numpy is imported): numpy's dispatch without AVX-512, OpenBLAS on its Haswell kernels."""
    import numpy as np

    with open("/proc/cpuinfo", encoding="utf-8") as handle:
        flags = next((line.split(":", 1)[1].split() for line in handle if line.startswith("flags")), [])
    np.show_runtime()
    shown = capsys.readouterr().out
    found = shown.split("'found':", 1)[1].split("]", 1)[0]
    if "avx512f" in flags:
        assert "X86_V4" not in found and "AVX512" not in found, shown
    if "avx2" in flags and "'architecture'" in shown:
        assert "'architecture': 'Haswell'" in shown, shown

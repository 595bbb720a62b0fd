"""A report section is one object (issue 23): a misspelt section or table name raises, never an empty table.

The names are checked where they are used: a protocol naming a section (at import for the registered
protocols, when a report is built for one registered later), a section writing a record of a table it did
not declare, a layout reading a table it did not declare, and the registry (every table written is
printed, every table printed is written).
"""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from collections.abc import Sequence
from typing import ClassVar

import pytest

from tests.stats.simulated import likert_study
from tui_rater.domain import protocols
from tui_rater.domain.errors import UserError
from tui_rater.domain.protocols import LikertRating
from tui_rater.domain.tasks import Attribute
from tui_rater.stats import render
from tui_rater.stats.report import Report, build_report
from tui_rater.stats.sections import SECTIONS, check_layouts, check_protocols, layouts, register, scores
from tui_rater.stats.sections.base import Found, Layout, Section, Who
from tui_rater.stats.sections.data import ReportData


class MisspeltTable1(LikertRating):
    name: ClassVar[str] = "likert-misspelt"
    report_sections: ClassVar[tuple[str, ...]] = ("tabel1", "table2")


@pytest.fixture(scope="module")
def story(tmp_path_factory):
    found = likert_study(tmp_path_factory.mktemp("sections") / "story.db", humans=3, prompts=6, seed=1)
    study = found.open()
    yield study
    study.close()


def test_every_registered_protocol_names_registered_sections():
    check_protocols(protocols.REGISTRY.values())  # what importing the sections did
    for protocol in protocols.REGISTRY.values():
        assert all(name in SECTIONS for name in protocol.report_sections), protocol.name


def test_a_protocol_naming_a_misspelt_section_raises_naming_it():
    with pytest.raises(
        UserError, match=r"'likert-misspelt' names report sections that do not exist: tabel1 \(there are: table1"
    ):
        check_protocols([MisspeltTable1()])


def test_a_report_for_a_protocol_registered_later_with_a_misspelt_section_raises(story):
    protocols.register(MisspeltTable1())
    try:
        task = story.task("story")
        misspelt = dataclasses.replace(
            task, attributes=tuple(dataclasses.replace(a, protocol="likert-misspelt") for a in task.attributes)
        )
        with pytest.raises(UserError, match="tabel1"):  # not built in: its author's slip, one sentence
            Report(story, misspelt).build()
    finally:
        protocols.REGISTRY.pop(MisspeltTable1.name)


def test_a_section_writing_a_table_it_does_not_declare_raises(story):
    def misspelt(data: ReportData, attributes: Sequence[Attribute]) -> None:
        data.add("tabel1", attributes[0].name, "all", "humans", "mean", value=1.0, n=1)

    report = Report(story, story.task("story"))
    with pytest.raises(ValueError, match="writes table 'tabel1'"):
        report._compute(Section("table1", misspelt, ("table1", "welch")), list(report.task.attributes))
    # outside a section too (a helper called on its own): only tables some section writes
    with pytest.raises(ValueError, match="tabel1"):
        report.add("tabel1", "likability", "all", "humans", "mean", value=1.0)


def test_a_layout_reading_a_table_it_does_not_declare_raises(story):
    records = build_report(story, "story")
    misspelt = Layout("table1", "Table 1", ("table1", "welch"), lambda found, who: (found.of("tabel1"), None)[1])
    with pytest.raises(ValueError, match="reads table 'tabel1'"):
        misspelt.table(Found(records), Who(records))
    with pytest.raises(ValueError, match="tabel1"):
        Found(records, ("table1",)).get("tabel1", "likability", "all", "humans", None, "mean")
    assert scores.TABLE1.table(Found(records), Who(records)) is not None  # the real one prints rows


def test_the_registry_refuses_a_table_nobody_prints_and_a_name_taken():
    orphan = Section("orphan", lambda data, attributes: None, ("orphan_table",))
    register(orphan)
    try:
        with pytest.raises(ValueError, match=r"write tables no layout prints: \['orphan_table'\]"):
            check_layouts()
    finally:
        SECTIONS.pop("orphan")
    unread = Section("unread", lambda data, attributes: None, (), (Layout("x", "X", ("tabel1",), lambda f, w: None),))
    register(unread)
    try:
        with pytest.raises(ValueError, match=r"read tables no section writes: \['tabel1'\]"):
            check_layouts()
    finally:
        SECTIONS.pop("unread")
    check_layouts()
    with pytest.raises(ValueError, match="already registered"):
        register(SECTIONS["table1"])


def test_every_table_printed_is_a_layout_and_every_layout_is_printed_once(story):
    records = build_report(story, "story")
    names = [layout.name for layout in layouts()]
    assert len(names) == len(set(names))
    printed = [name for name, _ in render.named_tables(records)]
    assert printed == [name for name in names if name in printed]  # in the report's order
    assert {"table1", "table2", "pairs", "verdict", "readings"} <= set(printed)


def test_importing_the_sections_with_a_misspelt_protocol_fails_at_import():
    """A built-in protocol that names a misspelt section stops the import: no report prints without it."""
    code = (
        "from typing import ClassVar\n"
        "from tui_rater.domain import protocols\n"
        "from tui_rater.domain.protocols import LikertRating\n"
        "class P(LikertRating):\n"
        "    name: ClassVar[str] = 'likert-misspelt'\n"
        "    report_sections: ClassVar[tuple[str, ...]] = ('tabel1',)\n"
        "protocols.register(P())\n"
        "import tui_rater.stats.report\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode != 0
    assert "'likert-misspelt' names report sections that do not exist: tabel1" in done.stderr

"""A report section as one object: the name protocols give it, what it computes, the record tables it writes,
and the layout of the tables it prints (a section and its printed table used to be joined by strings across
two modules, and a typo printed an empty table).

- ``Section.compute(data, attributes)`` appends records (``records.Record``) to the report data; the
  report lets it write only the tables it declares (``tables``), so a misspelt table name raises.
- ``Layout.lay_out(found, who)`` turns records into (title, header, rows): the layout every renderer
  reads (Rich, Markdown, HTML). It reads records through ``Found``, which refuses a table the layout
  did not declare in ``reads``; the registry (``sections/__init__.py``) checks at import that every
  table read is written by some section and every table written is read by some layout.
- Settings a user gives (SPA's τ, the alt-test's ε) are one typed value, ``settings.ReportSettings``,
  given to the report once; a section reads its own part (``data.settings.spa``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from tui_rater.domain.readiness import NOT_READY
from tui_rater.domain.tasks import Attribute
from tui_rater.stats.records import Record
from tui_rater.stats.sections.data import ReportData

Table = tuple[str, list[str], list[list[str]]]  # (title, header, rows): what a renderer prints
Key = tuple[str, str, str, str, str | None, str]  # (table, attribute, system, evaluator, evaluator_b, statistic)
NOT_READY_MARK = f" ⚠ {NOT_READY}"


def not_ready_note(reason: str) -> str:
    """What a record of a judge that is not agreement-ready carries in its note (``readings.mark_not_ready``)."""
    return f"{NOT_READY}: {reason}"


def without_not_ready(note: str) -> str:
    """A record's note without the not-agreement-ready mark ``mark_not_ready`` appended last: a table that says it
    once (a footnote) shows the rest."""
    if note.startswith(f"{NOT_READY}: "):
        return ""
    cut = note.find(f"; {NOT_READY}: ")
    return note[:cut] if cut >= 0 else note


class Footnotes:
    """Notes said once under a table, numbered; each row that needs one carries its number (``[1]``): 21 rows of
    one judge that is not agreement-ready once repeated its note 21 times in the table's caption."""

    def __init__(self) -> None:
        self.numbers: dict[str, int] = {}

    def mark(self, note: str) -> str:
        return f"[{self.numbers.setdefault(note, len(self.numbers) + 1)}]"

    def said(self) -> str:
        return "; ".join(f"[{n}] {note}" for note, n in self.numbers.items())


class Runs(Enum):
    """When a section runs: where a question's protocol names it, for every question a judge read, or always."""

    NAMED = "named"  # on the questions whose protocol names it (``EvaluationProtocol.report_sections``)
    JUDGED = "judged"  # on every question, where any judge left a reading (failed ones included)
    ALWAYS = "always"  # once per task, whatever its questions (the notes people left)


@dataclass(frozen=True)
class _Indexed:
    """The records by key and by table, built once per report and shared by every layout's view."""

    records: list[Record]
    by_key: dict[Key, Record]
    by_table: dict[str, list[Record]]

    @classmethod
    def of(cls, records: list[Record]) -> _Indexed:
        by_table: dict[str, list[Record]] = {}
        for record in records:
            by_table.setdefault(record.table, []).append(record)
        by_key: dict[Key, Record] = {
            (r.table, r.attribute, r.system, r.evaluator, r.evaluator_b, r.statistic): r for r in records
        }
        return cls(records, by_key, by_table)


class Found:
    """The report's records as one layout may read them: only the tables it declared (``Layout.reads``)."""

    def __init__(self, records: list[Record] | _Indexed, reads: Iterable[str] | None = None) -> None:
        self._indexed = records if isinstance(records, _Indexed) else _Indexed.of(records)
        self.reads = None if reads is None else frozenset(reads)

    def reading(self, reads: Iterable[str]) -> Found:
        """The same records, read by a layout that declared ``reads`` (the index is shared, not rebuilt)."""
        return Found(self._indexed, reads)

    def _check(self, table: str) -> None:
        if self.reads is not None and table not in self.reads:  # a misspelt table would print an empty table
            raise ValueError(
                f"a layout reads table {table!r}, which it does not declare (it reads {sorted(self.reads)})"
            )

    def of(self, table: str) -> list[Record]:
        """The records of one table, in the order they were computed."""
        self._check(table)
        return self._indexed.by_table.get(table, [])

    def get(
        self, table: str, attribute: str, system: str, evaluator: str, evaluator_b: str | None, statistic: str
    ) -> Record | None:
        self._check(table)
        return self._indexed.by_key.get((table, attribute, system, evaluator, evaluator_b, statistic))

    def keys(self, table: str, *fields: str) -> list[tuple[Any, ...]]:
        """The distinct values of ``fields`` among the table's records, in first-seen order."""
        return list(dict.fromkeys(tuple(getattr(r, f) for f in fields) for r in self.of(table)))


class Who:
    """A rater's name as shown: a judge that is not agreement-ready (``sections/readings.py``) carries the mark."""

    def __init__(self, records: list[Record]) -> None:
        # (judge, question) -> why it is not agreement-ready
        self.reasons = {
            (r.evaluator, r.attribute): r.note
            for r in records
            if r.table == "readings" and r.statistic == "agreement_ready" and r.value == 0
        }
        self.not_ready = set(self.reasons)

    def reason(self, name: str | None, attribute: str) -> str | None:
        """Why the judge is not agreement-ready on the question (None: it is, or it is no judge)."""
        return self.reasons.get((name or "", attribute))

    def __call__(self, name: str | None, attribute: str) -> str:
        name = name or ""
        if (name, attribute) in self.not_ready or (attribute == "*" and any(j == name for j, _ in self.not_ready)):
            return name + NOT_READY_MARK
        return name


@dataclass(frozen=True)
class Layout:
    """One printed table: its name (the HTML report groups tables by it), title, the record tables it reads,
    and how it lays them out (None: nothing to show)."""

    name: str
    title: str
    reads: tuple[str, ...]
    lay_out: Callable[[Found, Who], Table | None]

    def table(self, found: Found, who: Who) -> Table | None:
        return self.lay_out(found.reading(self.reads), who)


@dataclass(frozen=True)
class Section:
    """One report section: ``name`` is what protocols call it; ``compute`` appends records of ``tables`` only;
    ``layouts`` print them (in the report's order, ``sections.LAYOUTS``)."""

    name: str
    compute: Callable[[ReportData, Sequence[Attribute]], None]
    tables: tuple[str, ...]
    layouts: tuple[Layout, ...] = field(default=())
    runs: Runs = Runs.NAMED

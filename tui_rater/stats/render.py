"""Rendering report records: Rich tables, Markdown, JSON, CSV. No statistics here.

What each table shows is its section's layout (``sections/base.Layout``, in the section's module); this
module only prints those layouts. A judge that is not agreement-ready (``sections/readings.py``) is
marked beside its name wherever its agreement numbers appear (``base.Who``).
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Mapping
from typing import Any

from tui_rater.domain.display import spreadsheet_safe
from tui_rater.stats.provenance import Shaped
from tui_rater.stats.records import SCHEMA, Record, as_dicts
from tui_rater.stats.sections import layouts
from tui_rater.stats.sections.base import Found, Table, Who


def tables(records: list[Record]) -> list[Table]:
    """(title, header, rows) per table: the layout shared by the Rich, Markdown and HTML renderers."""
    return [table for _, table in named_tables(records)]


def named_tables(records: list[Record]) -> list[tuple[str, Table]]:
    """(the table's name, the table) for each table with rows, in the report's order (``sections.layouts``):
    the HTML report groups them by name."""
    found, who = Found(records), Who(records)
    out: list[tuple[str, Table]] = []
    for layout in layouts():
        table = layout.table(found, who)
        if table is not None:
            out.append((layout.name, table))
    return out


# the leading columns that name a row (what it is about): a stacked row shows them as its heading
KEY_COLUMNS = {"attribute", "judge", "evaluator", "LLM", "rater", "raters", "system", "run", "System X", "System Y"}
WRAP_MIN = 16  # a column that must wrap keeps at least this many characters (or its longest word) a line
STACK_LABEL = 24  # characters of a field's name in a stacked row


def to_rich(records: list[Record], task: str) -> Any:
    """The tables as Rich renderables, each laid out for the width it is printed at (``Laid``)."""
    from rich.console import Group

    return Group(*(Laid(f"{task}: {title}", header, rows) for title, header, rows in tables(records)))


def _cell_width(text: str) -> int:
    from rich.cells import cell_len

    return cell_len(text)


def _longest_word(text: str) -> int:
    return max((_cell_width(word) for word in text.split()), default=0)


def layout(header: list[str], rows: list[list[str]], width: int) -> str:
    """How a table fits in ``width`` columns: ``grid`` (every cell on one line), ``wrap`` (a grid whose long
    cells wrap between words, each column at least WRAP_MIN wide or as wide as its longest word) or
    ``stack`` (one block per row, a field a line), when even the wrapped grid would break words or
    squeeze a column to a word a line."""
    columns = list(zip(header, *rows))
    natural = [max(_cell_width(cell) for cell in column) for column in columns]
    frame = 3 * len(columns) + 1  # a border per column and the last, a space of padding either side of each
    if sum(natural) + frame <= width:
        return "grid"
    least = [
        min(full, max(WRAP_MIN, max(_longest_word(cell) for cell in column))) for full, column in zip(natural, columns)
    ]
    return "wrap" if sum(least) + frame <= width else "stack"


class Laid:
    """One table, laid out when printed, for the console's width (80 columns included): see ``layout``."""

    def __init__(self, title: str, header: list[str], rows: list[list[str]]) -> None:
        self.title, self.header, self.rows = title, header, rows

    def __rich_console__(self, console: Any, options: Any) -> Any:
        from rich.table import Table

        width = options.max_width
        how = layout(self.header, self.rows, width)
        if how == "stack":
            yield from self._stacked(width)
            return
        table = Table(
            title=_literal(self.title), title_justify="left", show_lines=how == "wrap", collapse_padding=False
        )
        columns = list(zip(self.header, *self.rows))
        for name, column in zip(self.header, columns):
            least = min(max(_cell_width(c) for c in column), max(WRAP_MIN, max(_longest_word(c) for c in column)))
            table.add_column(_literal(name), overflow="fold", min_width=least if how == "wrap" else None)
        for row in self.rows:
            table.add_row(*(_literal(cell) for cell in row))
        yield table

    def _stacked(self, width: int) -> Any:
        from rich.padding import Padding
        from rich.table import Table
        from rich.text import Text

        keys = 0
        while keys < len(self.header) - 1 and self.header[keys] in KEY_COLUMNS:
            keys += 1
        keys = max(keys, 1)
        yield _literal(self.title, style="bold")
        label = min(STACK_LABEL, max(_cell_width(name) for name in self.header[keys:]))
        for row in self.rows:
            heading = " · ".join(cell for cell in row[:keys] if cell)
            yield _literal(heading or "–", style="bold")
            grid = Table(box=None, show_header=False, show_edge=False, pad_edge=False, padding=(0, 1))
            grid.add_column(width=label, overflow="fold", style="dim")
            grid.add_column(overflow="fold", ratio=1)
            for name, cell in zip(self.header[keys:], row[keys:]):
                if cell:
                    grid.add_row(_literal(name), _literal(cell))
            yield Padding(grid, (0, 0, 0, 2))
        yield Text("")


def _literal(value: str, style: str = "") -> Any:
    from rich.text import Text

    from tui_rater.domain.display import safe_text

    # names of tasks, systems, raters and attributes come from data: never markup, never escapes
    return Text(safe_text(value, inline=True), style=style)


def _markdown_cell(cell: str) -> str:
    """A cell of one table row: its pipes escaped, its line breaks as <br> (an item id or a comment with a line
    break ended the row, and what followed became markdown of its own: a heading, a row of another table)."""
    return re.sub(r"\r\n|\r|\n", "<br>", cell.replace("|", "\\|"))


# the annotators a lead left out (``report --exclude-annotator``): task -> name -> their ratings left out. Kept apart
# from any other note on what shaped the numbers (its own JSON key, its own paragraph).
Excluded = dict[str, dict[str, int]]
EXCLUDED_WHY = "left out by the lead (report --exclude-annotator): none of their ratings is in any table, verdict or "
EXCLUDED_WHY += "system score of this report"


def excluded_sentence(excluded: dict[str, int]) -> str:
    """'Annotators left out …: carol (40 ratings).' for one task's exclusions."""
    who = ", ".join(f"{name} ({count} rating{'s' if count != 1 else ''})" for name, count in excluded.items())
    return f"Annotators {EXCLUDED_WHY}: {who}."


def to_markdown(
    records: list[Record], task: str, shaped: Shaped | None = None, excluded: dict[str, int] | None = None
) -> str:
    lines = [f"# tui-rater report: {task}", ""]
    if shaped is not None:  # what shaped the numbers, in the file itself
        lines += [_markdown_cell(" ".join(shaped.sentences())), ""]
    if excluded:
        lines += [_markdown_cell(excluded_sentence(excluded)), ""]
    for title, header, rows in tables(records):
        lines += [f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(_markdown_cell(cell) for cell in row) + " |" for row in rows]
        lines.append("")
    return "\n".join(lines)


def to_json(
    reports: dict[str, list[Record]],
    study_path: str,
    shaped: Mapping[str, Shaped] | None = None,
    excluded: Excluded | None = None,
) -> str:
    """``metadata``: per task, what shaped its numbers besides the ratings (``stats/provenance.py``);
    ``excluded_annotators``: the people the lead left out (``report --exclude-annotator``)."""
    found = shaped or {}
    payload: dict[str, Any] = {
        "schema": SCHEMA,
        "study": study_path,
        "metadata": {"tasks": {task: found[task].as_dict() for task in reports if task in found}},
    }
    if excluded:
        names = sorted({name for counts in excluded.values() for name in counts})
        payload["excluded_annotators"] = {"names": names, "why": EXCLUDED_WHY, "ratings_left_out": excluded}
    payload["tasks"] = {task: as_dicts(records) for task, records in reports.items()}
    return json.dumps(payload, indent=1)


CSV_FIELDS = [
    "table",
    "task",
    "attribute",
    "system",
    "evaluator",
    "evaluator_b",
    "statistic",
    "value",
    "n",
    "p",
    "note",
    "ci_low",
    "ci_high",
    "ci",
]


def to_csv(
    reports: dict[str, list[Record]], *, raw: bool = False, shaped: Mapping[str, Shaped] | None = None
) -> tuple[str, int]:
    """The records as CSV, and how many text cells got a leading ``'`` so that a spreadsheet shows them
    instead of running them as formulas (task, rater and system names come from data); none with ``raw``.
    Each task's rows begin with what shaped its numbers (table ``metadata``, ``stats/provenance.py``)."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS, restval="")
    writer.writeheader()
    neutralised = 0
    found = shaped or {}
    for task, records in reports.items():
        said = found[task].rows() if task in found else []
        for row in [*said, *as_dicts(records)]:
            if not raw:
                safe = {k: spreadsheet_safe(v) if isinstance(v, str) else v for k, v in row.items()}
                neutralised += sum(safe[k] != row[k] for k in row)
                row = safe
            writer.writerow(row)
    return buffer.getvalue(), neutralised

"""Rendering report records: Rich tables, Markdown, JSON, CSV. No statistics here.

A judge that is not agreement-ready (``sections/readings.py``) is marked beside its name wherever
its agreement numbers appear.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from typing import Any

from tui_rater.domain.display import spreadsheet_safe
from tui_rater.stats import render_notes, render_verdict
from tui_rater.stats.records import ALL, HUMANS, SCHEMA, Record, as_dicts

TITLES = {
    "table1": "Table 1 — mean ± std, Krippendorff's α (ordinal / interval), % items all raters agree",
    "table2": "Table 2 — Kendall's τ between the humans' and each LLM's per-item score",
    "pairs": "Rater pairs — Kendall's τ, every human vs every other and vs each LLM, systems pooled",
    "table6": "Table 6 — Kendall's τ between two human raters per writer, mean over the rater pairs",
    "table12": "Table 12 — each human rater's mean per system",
    "retest": "Test–retest — each rater against themselves (annotate --retest); their first ratings vs each judge",
    "table3": "Table 3 — judge runs differing only in instruction / temperature: mean ± std per writer",
    "nominal": "Verdict shares and agreement among each evaluator's annotators (α nominal, % all agree)",
    "nominal_pairs": "Agreement on nominal answers — Cohen's κ (unweighted), α nominal, % exact",
    "spa": "SPA (Ethayarajh & Jurafsky Table 1 layout): Holm-corrected * α=.10, ** .05, *** .01",
    "position": "Pairwise judgements in both orders: position bias, order consistency, final verdicts",
    "bt": "Bradley–Terry abilities (MM) from all pairwise preferences",
    "meta": "Meta-evaluation against human scores (Chen et al.): sample- and dataset-level, τ-b over pairs",
    "pair_meta": (
        "Pairwise meta-evaluation (Chen et al. Tables 5–8): Kendall's τ-b of the judge's verdicts against "
        "the humans' preference, by difficulty"
    ),
    "readings": "Judge readings — typed failures, scale mass, agreement-ready",
    "extremes": (
        "Items a judge rated at the scale's end on every attribute and sample (check for injected instructions)"
    ),
    "judges": "Judges — the labels above: rater id and name; `tui-rater judges` lists each one's full provenance",
    **render_verdict.TITLES,
    **render_notes.TITLES,
}
NOT_READY_MARK = " ⚠ not agreement-ready"
Table = tuple[str, list[str], list[list[str]]]
Index = dict[tuple[Any, ...], Record]


def _fmt(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def _stars(p: float | None) -> str:
    if p is None:
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def _spa_stars(p: float | None) -> str:
    # the SPA paper marks Holm-corrected significance at alpha = .10 (*), .05 (**), .01 (***)
    if p is None:
        return ""
    return "***" if p < 0.01 else "**" if p < 0.05 else "*" if p < 0.10 else ""


def _index(records: list[Record]) -> Index:
    return {(r.table, r.attribute, r.system, r.evaluator, r.evaluator_b, r.statistic): r for r in records}


def _value(record: Record | None, digits: int = 2, suffix: str = "") -> str:
    return "n/a" if record is None or record.value is None else f"{record.value:.{digits}f}{suffix}"


def _systems(records: list[Record], table: str) -> list[str]:
    """The systems of a table, the pooled one (``all``) last."""
    return sorted({r.system for r in records if r.table == table}, key=lambda s: (s == ALL, s))


def _column(system: str) -> str:
    return "all (pooled)" if system == ALL else system


class _Who:
    """A rater's name as shown: a judge that is not agreement-ready carries the mark."""

    def __init__(self, records: list[Record]) -> None:
        self.not_ready = {
            (r.evaluator, r.attribute)
            for r in records
            if r.table == "readings" and r.statistic == "agreement_ready" and r.value == 0
        }

    def __call__(self, name: str | None, attribute: str) -> str:
        name = name or ""
        if (name, attribute) in self.not_ready or (attribute == "*" and any(j == name for j, _ in self.not_ready)):
            return name + NOT_READY_MARK
        return name


def tables(records: list[Record]) -> list[Table]:
    """(title, header, rows) per table: the layout shared by the Rich, Markdown and HTML renderers."""
    return [table for _, table in named_tables(records)]


def named_tables(records: list[Record]) -> list[tuple[str, Table]]:
    """(the table's name, the table) for each table with rows: the HTML report groups them by name."""
    by, who = _index(records), _Who(records)
    out: list[tuple[str, Table]] = []
    builders: list[Callable[[list[Record], Index, _Who], Table | None]] = [
        _table1,
        _table2,
        _pairs,
        _table6,
        _table12,
        _table3,
        _nominal,
        _nominal_pairs,
        _spa,
        _position,
        _bt,
        _meta,
        _pair_meta,
        *render_verdict.BUILDERS,
        _retest,
        _readings,
        _extremes,
        _judges,
        *render_notes.BUILDERS,
    ]
    for build in builders:
        table = build(records, by, who)
        if table is not None:
            out.append((build.__name__.removeprefix("_"), table))
    return out


def _table1(records: list[Record], by: Index, who: _Who) -> Table | None:
    systems = _systems(records, "table1")
    if not systems:
        return None
    attributes = list(dict.fromkeys(r.attribute for r in records if r.table == "table1"))
    evaluators = list(dict.fromkeys(r.evaluator for r in records if r.table == "table1"))
    rows = []
    for attribute in attributes:
        for evaluator in evaluators:
            row = [attribute, who(evaluator, attribute)]
            for system in systems:
                mean = by.get(("table1", attribute, system, evaluator, None, "mean"))
                if mean is None or mean.value is None:
                    row.append("n/a")
                    continue
                std = by.get(("table1", attribute, system, evaluator, None, "std"))
                welch = by.get(("welch", attribute, system, evaluator, None, "welch_t"))
                cell = f"{_value(mean)}±{_value(std)}{_stars(welch.p if welch else None)}"
                a_o = by.get(("table1", attribute, system, evaluator, None, "alpha_ordinal"))
                a_i = by.get(("table1", attribute, system, evaluator, None, "alpha_interval"))
                exact = by.get(("table1", attribute, system, evaluator, None, "percent_exact"))
                cell += f" α {_value(a_o)}/{_value(a_i)} {_value(exact, 0)}%"
                shared = by.get(("table1", attribute, system, evaluator, None, "mean_on_shared_items"))
                humans = by.get(("table1", attribute, system, evaluator, None, "humans_mean_on_shared_items"))
                if shared is not None and humans is not None:  # the judge rated other items than the humans
                    cell += f"; on the {shared.n} items both rated: {_value(shared)} vs humans {_value(humans)}"
                row.append(cell)
            rows.append(row)
    title = TITLES["table1"] + " (* Welch p<.05 vs the reference system)"
    return title, ["attribute", "evaluator", *map(_column, systems)], rows


def _table2(records: list[Record], by: Index, who: _Who) -> Table | None:
    pairs = list(dict.fromkeys((r.attribute, r.evaluator_b) for r in records if r.table == "table2"))
    if not pairs:
        return None
    systems = _systems(records, "table2")
    overall = systems[-1]
    rows = []
    for attribute, judge in pairs:
        row = [attribute, who(judge, attribute)]
        for system in systems:
            tau = by.get(("table2", attribute, system, HUMANS, judge, "kendall_tau"))
            row.append("n/a" if tau is None or tau.value is None else f"{tau.value:.3f}{_stars(tau.p)}")
        row.append(_value(by.get(("table2", attribute, overall, HUMANS, judge, "bias_llm_minus_human"))))
        row.append(_value(by.get(("table2", attribute, overall, HUMANS, judge, "qw_kappa"))))
        row.append(_value(by.get(("table2", attribute, overall, HUMANS, judge, "exact_agreement")), 0, "%"))
        rows.append(row)
    header = ["attribute", "LLM", *[f"τ {_column(s)}" for s in systems], "bias", "qw κ", "exact"]
    return TITLES["table2"], header, rows


def _pairs(records: list[Record], by: Index, who: _Who) -> Table | None:
    rows = [
        [
            r.attribute,
            who(r.evaluator, r.attribute),
            who(r.evaluator_b, r.attribute),
            "n/a" if r.value is None else f"{r.value:.3f}{_stars(r.p)}",
            str(r.n),
        ]
        for r in records
        if r.table == "pairs"
    ]
    return (TITLES["pairs"], ["attribute", "rater", "rater", "τ", "n"], rows) if rows else None


def _table6(records: list[Record], by: Index, who: _Who) -> Table | None:
    systems = _systems(records, "table6")
    if not systems:
        return None
    rows = []
    attributes = list(dict.fromkeys(r.attribute for r in records if r.table == "table6"))
    pairs = list(dict.fromkeys((r.evaluator, r.evaluator_b) for r in records if r.table == "table6"))
    for attribute in attributes:
        for a, b in pairs:
            label = "mean over pairs" if b is None else f"{a} – {b}"
            cells = [
                _value(by.get(("table6", attribute, s, a, b, "mean_pair_tau" if b is None else "kendall_tau")), 3)
                for s in systems
            ]
            rows.append([attribute, label, *cells])
    rows.sort(key=lambda row: (attributes.index(row[0]), row[1] != "mean over pairs"))
    return TITLES["table6"], ["attribute", "raters", *systems], rows


def _table12(records: list[Record], by: Index, who: _Who) -> Table | None:
    systems = _systems(records, "table12")
    if not systems:
        return None
    keys = list(dict.fromkeys((r.attribute, r.evaluator) for r in records if r.table == "table12"))
    rows = [
        [attribute, rater, *[_value(by.get(("table12", attribute, s, rater, None, "mean"))) for s in systems]]
        for attribute, rater in keys
    ]
    return TITLES["table12"], ["attribute", "rater", *systems], rows


def _table3(records: list[Record], by: Index, who: _Who) -> Table | None:
    systems = _systems(records, "table3")
    if not systems:
        return None
    rows = []
    keys = list(dict.fromkeys((r.attribute, r.evaluator) for r in records if r.table == "table3"))
    for attribute, run in keys:
        spread = by.get(("table3", attribute, systems[0], run, None, "std_of_means"))
        if spread is not None:
            cells = [_value(by.get(("table3", attribute, s, run, None, "std_of_means"))) for s in systems]
            rows.append([attribute, "spread: std of the runs' means", *cells, ""])
            continue
        cells, setup = [], ""
        for system in systems:
            mean = by.get(("table3", attribute, system, run, None, "mean"))
            std = by.get(("table3", attribute, system, run, None, "std"))
            cells.append(f"{_value(mean)}±{_value(std)}")
            setup = setup or (mean.note.split(";")[0] if mean else "")
        rows.append([attribute, who(run, attribute), *cells, setup])
    return TITLES["table3"], ["attribute", "run", *map(_column, systems), "setup"], rows


def _nominal(records: list[Record], by: Index, who: _Who) -> Table | None:
    keys = list(dict.fromkeys((r.attribute, r.evaluator, r.system) for r in records if r.table == "nominal"))
    if not keys:
        return None
    rows = []
    for attribute, evaluator, system in keys:
        shares = [
            r
            for r in records
            if r.table == "nominal"
            and (r.attribute, r.evaluator, r.system) == (attribute, evaluator, system)
            and r.statistic.startswith("share_")
        ]
        cell = "  ".join(f"{r.statistic.removeprefix('share_')} {_value(r)}" for r in shares)
        alpha = by.get(("nominal", attribute, system, evaluator, None, "alpha_nominal"))
        exact = by.get(("nominal", attribute, system, evaluator, None, "percent_exact"))
        n = shares[0].n if shares else 0
        rows.append(
            [attribute, who(evaluator, attribute), _column(system), cell, _value(alpha), _value(exact, 0, "%"), str(n)]
        )
    header = ["attribute", "evaluator", "system", "verdict shares", "α nominal", "all agree", "items"]
    return TITLES["nominal"], header, rows


def _nominal_pairs(records: list[Record], by: Index, who: _Who) -> Table | None:
    keys = list(
        dict.fromkeys(
            (r.attribute, r.system, r.evaluator, r.evaluator_b) for r in records if r.table == "nominal_pairs"
        )
    )
    if not keys:
        return None
    rows = []
    for attribute, system, a, b in keys:
        kappa = by.get(("nominal_pairs", attribute, system, a, b, "cohen_kappa"))
        alpha = by.get(("nominal_pairs", attribute, system, a, b, "alpha_nominal"))
        exact = by.get(("nominal_pairs", attribute, system, a, b, "exact_agreement"))
        n = exact.n if exact else 0
        rows.append(
            [
                attribute,
                who(a, attribute),
                who(b, attribute),
                _value(kappa, 3),
                _value(alpha, 3),
                _value(exact, 0, "%"),
                str(n),
            ]
        )
    return TITLES["nominal_pairs"], ["attribute", "rater", "rater", "κ", "α nominal", "exact", "n"], rows


def _spa(records: list[Record], by: Index, who: _Who) -> Table | None:
    rows = []
    for r in records:
        if r.table == "spa" and r.statistic == "p_x_over_y":
            likert = by.get(("spa", r.attribute, r.system, r.evaluator, r.evaluator_b, "likert_delta"))
            rows.append(
                [
                    r.system,
                    r.evaluator_b or "",
                    who(r.evaluator, "*"),
                    "n/a" if r.value is None else f"{r.value:.3f}{_spa_stars(r.p)}",
                    "n/a" if likert is None or likert.value is None else f"{likert.value:+.3f}{_spa_stars(likert.p)}",
                    str(r.n),
                ]
            )
    if not rows:
        return None
    kept = [f"{r.evaluator}: {r.note}" for r in records if r.table == "spa" and r.statistic == "annotators_kept"]
    title = TITLES["spa"] + ("; " + "; ".join(kept) if kept else "")
    return title, ["System X", "System Y", "evaluator", "P[X≻Y] (SPA)", "Likert Δ", "n"], rows


def _position(records: list[Record], by: Index, who: _Who) -> Table | None:
    rows = [
        [
            r.attribute,
            who(r.evaluator, r.attribute),
            r.statistic,
            f"{r.value:g}" if r.statistic.startswith("final_") and r.value is not None else _value(r),
            str(r.n),
        ]
        for r in records
        if r.table == "position"
    ]
    return (TITLES["position"], ["attribute", "judge", "statistic", "value", "pairs"], rows) if rows else None


def _bt(records: list[Record], by: Index, who: _Who) -> Table | None:
    rows = [
        [r.attribute, who(r.evaluator, r.attribute), r.system, _value(r, 3), str(r.n), r.note]
        for r in records
        if r.table == "bt"
    ]
    header = ["attribute", "evaluator", "system", "log-strength", "comparisons", "note"]
    return (TITLES["bt"], header, rows) if rows else None


def _meta(records: list[Record], by: Index, who: _Who) -> Table | None:
    rows = [
        [r.attribute, who(r.evaluator_b, r.attribute), r.statistic, _value(r, 3), str(r.n)]
        for r in records
        if r.table == "meta"
    ]
    return (TITLES["meta"], ["attribute", "judge", "statistic", "value", "n"], rows) if rows else None


def _pair_meta(records: list[Record], by: Index, who: _Who) -> Table | None:
    keys = list(dict.fromkeys((r.attribute, r.system, r.evaluator_b) for r in records if r.table == "pair_meta"))
    if not keys:
        return None
    rows = []
    for attribute, system, judge in keys:
        cells, cuts = [], ""
        for difficulty in ("hard", "medium", "easy", "all"):
            r = by.get(("pair_meta", attribute, system, HUMANS, judge, f"pair_tau_b_{difficulty}"))
            cells.append("n/a" if r is None else f"{_value(r, 3)} ({r.n})")
            parts = r.note.split("; ") if r is not None else []
            cuts = cuts or next((part for part in parts if part.startswith("human preference size")), "")
        rows.append([attribute, who(judge, attribute), *cells, cuts])
    header = ["attribute", "judge", "hard", "medium", "easy", "all", "difficulty: size of the humans' preference"]
    return TITLES["pair_meta"], header, rows


def _retest(records: list[Record], by: Index, who: _Who) -> Table | None:
    keys = list(dict.fromkeys((r.attribute, r.evaluator) for r in records if r.table == "retest"))
    if not keys:
        return None
    rows = []
    for attribute, person in keys:
        mine = [r for r in records if r.table == "retest" and (r.attribute, r.evaluator) == (attribute, person)]
        self_ = {r.statistic: r for r in mine if r.evaluator_b == person}
        pairs = self_["retest_alpha"].n if "retest_alpha" in self_ else 0
        judges = "; ".join(
            f"{r.evaluator_b} α {_value(r)} (n {r.n})" for r in mine if r.statistic == "first_vs_judge_alpha"
        )
        rows.append(
            [
                person,
                attribute,
                str(pairs),
                _value(self_.get("retest_alpha")),
                _value(self_.get("retest_kappa")),
                _value(self_.get("retest_exact"), 0, "%"),
                _value(self_.get("retest_shift")),
                _value(self_.get("retest_alpha_calibrated")),
                judges or "no judge",
            ]
        )
    header = [
        "rater",
        "attribute",
        "rated twice",
        "α self",
        "κ self",
        "identical",
        "shift",
        "α after calib.",
        "vs judges",
    ]
    return TITLES["retest"], header, rows


def _readings(records: list[Record], by: Index, who: _Who) -> Table | None:
    keys = list(dict.fromkeys((r.attribute, r.evaluator) for r in records if r.table == "readings"))
    if not keys:
        return None
    rows = []
    for attribute, judge in keys:
        mine = {
            r.statistic: r
            for r in records
            if r.table == "readings" and (r.attribute, r.evaluator) == (attribute, judge)
        }
        failures = ", ".join(
            f"{name.removeprefix('failures_')} {r.value:g}"
            for name, r in mine.items()
            if name.startswith("failures_") and r.value
        )
        ready = mine.get("agreement_ready")
        verdict = "yes" if ready is not None and ready.value == 1 else f"NO: {ready.note}" if ready else "n/a"
        if "implicit_no_outside_top5" in mine:  # the paper's formula, shown as a warning
            verdict += f"; {mine['implicit_no_outside_top5'].note}"
        rows.append(
            [
                judge,
                attribute,
                str(mine["readings"].n) if "readings" in mine else "0",
                _value(mine.get("ok_share")),
                failures or "none",
                _value(mine.get("mass_mean"), 3) if "mass_mean" in mine else "",
                _value(mine.get("mass_min"), 3) if "mass_min" in mine else "",
                verdict,
            ]
        )
    header = [
        "judge",
        "attribute",
        "readings",
        "ok share",
        "typed failures",
        "mass mean",
        "mass min",
        "agreement-ready",
    ]
    return TITLES["readings"], header, rows


def _extremes(records: list[Record], by: Index, who: _Who) -> Table | None:
    rows = [
        [r.evaluator, r.note.removeprefix("item "), r.system, r.statistic.replace("all_", "all at "), str(r.n)]
        for r in records
        if r.table == "extremes"
    ]
    return (TITLES["extremes"], ["judge", "item", "system", "ratings", "n"], rows) if rows else None


def _judges(records: list[Record], by: Index, who: _Who) -> Table | None:
    rows = [
        [r.evaluator, "n/a" if r.value is None else f"{r.value:.0f}", str(r.n), r.note]
        for r in records
        if r.table == "judges"
    ]
    return (TITLES["judges"], ["judge", "id", "readings", "rater"], rows) if rows else None


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


def to_markdown(records: list[Record], task: str) -> str:
    lines = [f"# tui-rater report: {task}", ""]
    for title, header, rows in tables(records):
        lines += [f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(_markdown_cell(cell) for cell in row) + " |" for row in rows]
        lines.append("")
    return "\n".join(lines)


def to_json(reports: dict[str, list[Record]], study_path: str) -> str:
    return json.dumps(
        {
            "schema": SCHEMA,
            "study": study_path,
            "tasks": {task: as_dicts(records) for task, records in reports.items()},
        },
        indent=1,
    )


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
]


def to_csv(reports: dict[str, list[Record]], *, raw: bool = False) -> tuple[str, int]:
    """The records as CSV, and how many text cells got a leading ``'`` so that a spreadsheet shows them
    instead of running them as formulas (task, rater and system names come from data); none with ``raw``."""
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=CSV_FIELDS)
    writer.writeheader()
    neutralised = 0
    for records in reports.values():
        for row in as_dicts(records):
            if not raw:
                safe = {k: spreadsheet_safe(v) if isinstance(v, str) else v for k, v in row.items()}
                neutralised += sum(safe[k] != row[k] for k in row)
                row = safe
            writer.writerow(row)
    return buffer.getvalue(), neutralised

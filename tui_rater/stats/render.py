"""Rendering report records: Rich tables, Markdown, JSON, CSV. No statistics here."""

from __future__ import annotations

import csv
import io
import json

from tui_rater.stats.report import ALL, HUMANS, SCHEMA, Record, as_dicts

TITLES = {
    "table1": "Table 1 — mean ± std, Krippendorff's α (ordinal / interval), % items all raters agree",
    "table2": "Table 2 — Kendall's τ between the humans' and each LLM's per-item mean",
    "pairs": "Rater pairs — Kendall's τ, every human vs every other (Table 6) and vs each LLM",
    "table3": "Table 3 — judge runs differing in variant / temperature",
    "spa": "SPA (Ethayarajh & Jurafsky Table 1 layout): Holm-corrected * α=.10, ** .05, *** .01",
    "position": "Pairwise judgements in both orders: position bias, order consistency, final verdicts",
    "bt": "Bradley–Terry abilities (MM) from all pairwise preferences",
    "meta": "Meta-evaluation against human scores (Chen et al.): sample- and dataset-level, τ-b over pairs",
    "extremes": (
        "Items a judge rated at the scale's end on every attribute and sample (check for injected instructions)"
    ),
}


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


def _index(records: list[Record]) -> dict:
    found = {}
    for r in records:
        found[(r.table, r.attribute, r.system, r.evaluator, r.evaluator_b, r.statistic)] = r
    return found


def tables(records: list[Record]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) per table: the layout shared by the Rich and Markdown renderers."""
    out = []
    by = _index(records)
    systems = sorted({r.system for r in records if r.table == "table1"}, key=lambda s: (s == ALL, s))
    attributes = list(dict.fromkeys(r.attribute for r in records))
    evaluators = list(dict.fromkeys(r.evaluator for r in records if r.table == "table1"))
    if systems:
        rows = []
        for attribute in attributes:
            for evaluator in evaluators:
                row = [attribute, evaluator]
                for system in systems:

                    def get(statistic, attribute=attribute, system=system, evaluator=evaluator):
                        return by.get(("table1", attribute, system, evaluator, None, statistic))

                    mean, std = get("mean"), get("std")
                    if mean is None or mean.value is None:
                        row.append("n/a")
                        continue
                    welch = by.get(("welch", attribute, system, evaluator, None, "welch_t"))
                    cell = f"{_fmt(mean.value)}±{_fmt(std.value if std else None)}{_stars(welch.p if welch else None)}"
                    a_o, a_i, ex = get("alpha_ordinal"), get("alpha_interval"), get("percent_exact")
                    cell += f" α {_fmt(a_o.value if a_o else None)}/{_fmt(a_i.value if a_i else None)}"
                    cell += f" {_fmt(ex.value if ex else None, 0)}%"
                    row.append(cell)
                rows.append(row)
        out.append(
            (TITLES["table1"] + " (* Welch p<.05 vs the reference system)", ["attribute", "evaluator", *systems], rows)
        )
    pairs2 = list(dict.fromkeys((r.attribute, r.evaluator_b) for r in records if r.table == "table2"))
    if pairs2:
        t2_systems = sorted({r.system for r in records if r.table == "table2"}, key=lambda s: (s == ALL, s))
        rows = []
        for attribute, judge in pairs2:
            row = [attribute, judge]
            for system in t2_systems:
                tau = by.get(("table2", attribute, system, HUMANS, judge, "kendall_tau"))
                row.append("n/a" if tau is None or tau.value is None else f"{tau.value:.3f}{_stars(tau.p)}")
            overall = t2_systems[-1]
            extra = {
                s: by.get(("table2", attribute, overall, HUMANS, judge, s))
                for s in ("bias_llm_minus_human", "qw_kappa", "exact_agreement")
            }
            row.append(_fmt(extra["bias_llm_minus_human"].value if extra["bias_llm_minus_human"] else None))
            row.append(_fmt(extra["qw_kappa"].value if extra["qw_kappa"] else None))
            row.append(_fmt(extra["exact_agreement"].value if extra["exact_agreement"] else None, 0) + "%")
            rows.append(row)
        out.append(
            (TITLES["table2"], ["attribute", "LLM", *[f"τ {s}" for s in t2_systems], "bias", "qw κ", "exact"], rows)
        )
    pair_rows = [
        [
            r.attribute,
            r.evaluator,
            r.evaluator_b or "",
            "n/a" if r.value is None else f"{r.value:.3f}{_stars(r.p)}",
            str(r.n),
        ]
        for r in records
        if r.table == "pairs"
    ]
    if pair_rows:
        out.append((TITLES["pairs"], ["attribute", "rater", "rater", "τ", "n"], pair_rows))
    t3 = [[r.attribute, r.evaluator, r.statistic, _fmt(r.value), r.note] for r in records if r.table == "table3"]
    if t3:
        out.append((TITLES["table3"], ["attribute", "run", "statistic", "value", "note"], t3))
    spa_rows = []
    for r in records:
        if r.table == "spa" and r.statistic == "p_x_over_y":
            likert = by.get(("spa", r.attribute, r.system, r.evaluator, r.evaluator_b, "likert_delta"))
            spa_rows.append(
                [
                    r.system,
                    r.evaluator_b or "",
                    r.evaluator,
                    "n/a" if r.value is None else f"{r.value:.3f}{_spa_stars(r.p)}",
                    "n/a" if likert is None or likert.value is None else f"{likert.value:+.3f}{_spa_stars(likert.p)}",
                    str(r.n),
                ]
            )
    if spa_rows:
        kept = [f"{r.evaluator}: {r.note}" for r in records if r.table == "spa" and r.statistic == "annotators_kept"]
        out.append(
            (
                TITLES["spa"] + ("; " + "; ".join(kept) if kept else ""),
                ["System X", "System Y", "evaluator", "P[X≻Y] (SPA)", "Likert Δ", "n"],
                spa_rows,
            )
        )
    position = [
        [r.attribute, r.evaluator, r.statistic, _fmt(r.value), str(r.n)] for r in records if r.table == "position"
    ]
    if position:
        out.append((TITLES["position"], ["attribute", "judge", "statistic", "value", "pairs"], position))
    bt = [[r.attribute, r.evaluator, r.system, _fmt(r.value, 3), str(r.n), r.note] for r in records if r.table == "bt"]
    if bt:
        out.append((TITLES["bt"], ["attribute", "evaluator", "system", "log-strength", "comparisons", "note"], bt))
    meta = [
        [r.attribute, r.evaluator_b or "", r.statistic, _fmt(r.value, 3), str(r.n)]
        for r in records
        if r.table == "meta"
    ]
    if meta:
        out.append((TITLES["meta"], ["attribute", "judge", "statistic", "value", "n"], meta))
    extremes = [
        [r.evaluator, r.note.removeprefix("item "), r.system, r.statistic.replace("all_", "all at "), str(r.n)]
        for r in records
        if r.table == "extremes"
    ]
    if extremes:
        out.append((TITLES["extremes"], ["judge", "item", "system", "ratings", "n"], extremes))
    return out


def to_rich(records: list[Record], task: str):
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    from tui_rater.domain.display import safe_text

    def literal(value: str) -> Text:
        # names of tasks, systems, raters and attributes come from data: never markup, never escapes
        return Text(safe_text(value, inline=True))

    parts = []
    for title, header, rows in tables(records):
        table = Table(title=literal(f"{task}: {title}"), title_justify="left", show_lines=False)
        for column in header:
            table.add_column(literal(column), overflow="fold")
        for row in rows:
            table.add_row(*(literal(cell) for cell in row))
        parts.append(table)
    return Group(*parts)


def to_markdown(records: list[Record], task: str) -> str:
    lines = [f"# tui-rater report: {task}", ""]
    for title, header, rows in tables(records):
        lines += [f"## {title}", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        lines += ["| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |" for row in rows]
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


def to_csv(reports: dict[str, list[Record]]) -> str:
    buffer = io.StringIO()
    fields = [
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
    writer = csv.DictWriter(buffer, fieldnames=fields)
    writer.writeheader()
    for records in reports.values():
        writer.writerows(as_dicts(records))
    return buffer.getvalue()

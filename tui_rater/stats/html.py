"""``report --format html``: one self-contained file with the tables and the plots.

It works offline: inline CSS, each plot an SVG image inlined as a ``data:`` URI (an SVG in an ``<img>``
cannot run script or fetch anything), no script, no font, no link. Every string from the data (names,
ids, questions, notes) is escaped with ``html.escape`` and appears only as text, never in an attribute.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Mapping

from tui_rater import __version__
from tui_rater.stats import figures, plots, render, render_verdict
from tui_rater.stats.records import Record
from tui_rater.stats.report import Report

# which tables go in which part of the page (the rest follow under "All tables")
VERDICT_TABLES = ("verdict", "verdict_across")
PPI_TABLES = ("ppi", "ppi_diff")
NOT_SHOWN = ("convergence",)  # drawn as curves instead

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1280px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 2px solid #ccc; margin-top: 2em; } h3 { margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0 1.5em; font-size: 12.5px; }
caption { text-align: left; font-weight: 600; padding: .3em 0; max-width: 1200px; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } tr:nth-child(even) td { background: #fafafa; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; height: auto; }
figcaption { color: #555; font-size: 12.5px; } .meta, .empty { color: #666; }
.caveats { background: #fff6e0; border-left: 4px solid #e0a000; padding: .2em 1em; margin: 0 0 1.5em; max-width: 1200px; }
"""


def e(text: object) -> str:
    return html.escape(str(text), quote=True)


class _Figures:
    """Numbers the figures in the page: an image's alt text is its number, never data."""

    def __init__(self) -> None:
        self.count = 0

    def __call__(self, svg: str | None, caption: str) -> list[str]:
        if svg is None:
            return []
        self.count += 1
        data = base64.b64encode(svg.encode("utf-8")).decode("ascii")
        return [
            f'<figure><img alt="figure {self.count}" src="data:image/svg+xml;base64,{data}">',
            f"<figcaption>Figure {self.count}. {e(caption)}</figcaption></figure>",
        ]


def to_html(reports: Mapping[str, Report], study_path: str) -> str:
    figure = _Figures()
    body = [f"<h1>tui-rater report</h1><p class=meta>study {e(study_path)} · tui-rater {e(__version__)}</p>"]
    for task, report in reports.items():
        body += _task(task, report, figure)
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>tui-rater report: {e(', '.join(reports))}</title>",
            f"<style>{CSS}</style></head><body>",
            *body,
            "</body></html>",
        ]
    )


def _task(task: str, report: Report, figure: _Figures) -> list[str]:
    out = [f"<h2>{e(task)}</h2>"]
    records = report.records
    if not records:
        return [*out, "<p class=empty>No ratings yet.</p>"]
    named = render.named_tables(records)
    out += _part("Can the judge stand in for the raters?", named, VERDICT_TABLES)
    out += _caveats(records)
    out += _verdict_curves(records, figure)
    out += _part("System scores, bias-corrected", named, PPI_TABLES)
    out += _ppi_curves(records, figure)
    out += _questions(report, figure)
    rest = tuple(name for name, _ in named if name not in (*VERDICT_TABLES, *PPI_TABLES, *NOT_SHOWN))
    out += _part("All tables", named, rest)
    return out


def _part(heading: str, named: list[tuple[str, render.Table]], names: tuple[str, ...]) -> list[str]:
    shown = [table for name, table in named if name in names]
    if not shown:
        return []
    return [f"<h3>{e(heading)}</h3>", *(_table(*table) for table in shown)]


def _caveats(records: list[Record]) -> list[str]:
    """Beside the verdict table: each verdict's caveats (the humans barely agree; the verdict has not settled)."""
    by = {(r.table, r.attribute, r.system, r.evaluator, r.evaluator_b, r.statistic): r for r in records}
    keys = dict.fromkeys((r.attribute, r.evaluator) for r in records if r.table == "verdict")
    items = [
        f"<li><strong>{e(attribute)} · {e(judge)}</strong>: {e(caveat.removeprefix('⚠ '))}</li>"
        for attribute, judge in keys
        for caveat in render_verdict.caveats(by, attribute, judge)
    ]
    if not items:
        return []
    return ["<div class=caveats><p><strong>⚠ Read the verdicts above with these caveats</strong></p><ul>", *items, "</ul></div>"]


def _table(title: str, header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{e(column)}</th>" for column in header)
    body = "".join("<tr>" + "".join(f"<td>{e(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><caption>{e(title)}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _by_attribute(found: list[figures.Curve]) -> dict[str, list[figures.Curve]]:
    grouped: dict[str, list[figures.Curve]] = {}
    for curve in found:
        grouped.setdefault(curve.attribute, []).append(curve)
    return grouped


def _verdict_curves(records: list[Record], figure: _Figures) -> list[str]:
    out = []
    for attribute, found in _by_attribute(figures.curves(records, "verdict_convergence")).items():
        caption = f"{attribute}: the alt-test's ω and ρ recomputed on the first n rated items (in rating order)"
        out += figure(plots.verdict_curves(attribute, found), caption)
    return out


def _ppi_curves(records: list[Record], figure: _Figures) -> list[str]:
    out = []
    for attribute, found in _by_attribute(figures.curves(records, "ppi_convergence")).items():
        for judge in dict.fromkeys(c.judge for c in found):
            caption = (
                f"{attribute} · {judge}: each system's prediction-powered mean and the humans-only mean, with "
                "their 95% intervals, on the first n rated items"
            )
            out += figure(plots.ppi_curves(attribute, judge, [c for c in found if c.judge == judge]), caption)
    return out


def _questions(report: Report, figure: _Figures) -> list[str]:
    drawings: list[tuple[Callable[[figures.QuestionFigures], str | None], str]] = [
        (plots.distributions, "rating distributions per evaluator"),
        (plots.scatter, "the humans' score of each item against each judge's, with the diagonal of agreement"),
        (plots.confusion, "confusion counts: the humans' score (rows) against each judge's (columns)"),
        (plots.calibration, "calibration: the judge's expected score (its distribution's mean) against the humans'"),
    ]
    out = []
    for question in figures.question_figures(report):
        shown = [figure(draw(question), f"{question.attribute}: {caption}") for draw, caption in drawings]
        if any(shown):
            out += [f"<h3>{e(question.attribute)}</h3>", *(line for lines in shown for line in lines)]
    return out

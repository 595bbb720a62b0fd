"""``report --format html``: one self-contained file with the tables and the plots.

It works offline: inline CSS, each plot an SVG image inlined as a ``data:`` URI (an SVG in an ``<img>``
cannot run script or fetch anything), no script, no font, no link. Every string from the data (names,
ids, questions, notes) is escaped with ``html.escape`` and appears as text, or in an image's alt text
(escaped with its quotes) that describes the figure.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import partial

from tui_rater import __version__
from tui_rater.domain.display import safe_text
from tui_rater.stats import figures, plots, plots_calibration, render
from tui_rater.stats.provenance import Shaped
from tui_rater.stats.records import Record
from tui_rater.stats.report import Report
from tui_rater.stats.sections import bias_corrected, calibration, converging, verdict
from tui_rater.stats.sections.base import Found, Table, Who, not_ready_note

# which tables go in which part of the page (the rest follow under "All tables")
VERDICT_TABLES = (verdict.VERDICT.name, verdict.ACROSS.name)
PPI_TABLES = (bias_corrected.MEANS.name, bias_corrected.DIFFERENCES.name, calibration.PPI.name)
CALIBRATION_TABLES = (calibration.CALIBRATION.name,)
NOT_SHOWN = (converging.CURVES.name,)  # drawn as curves instead

CSS = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 1280px; padding: 0 1em; color: #222; }
h1 { font-size: 1.6em; } h2 { border-bottom: 2px solid #ccc; margin-top: 2em; } h3 { margin-top: 1.6em; }
table { border-collapse: collapse; margin: .5em 0 1.5em; font-size: 12.5px; }
caption { text-align: left; font-weight: 600; padding: .3em 0; max-width: 1200px; }
th, td { border: 1px solid #ddd; padding: 3px 7px; text-align: left; vertical-align: top; }
th { background: #f3f3f3; } tr:nth-child(even) td { background: #fafafa; }
figure { margin: 1em 0 2em; } figure img { max-width: 100%; height: auto; }
figcaption { color: #555; font-size: 12.5px; } .meta, .empty { color: #666; }
.caveats { background: #fff6e0; border-left: 4px solid #e0a000; padding: .2em 1em; margin: 0 0 1.5em; }
"""


def e(text: object) -> str:
    return html.escape(str(text), quote=True)


Progress = Callable[[int, int, str], None]  # (figures drawn, figures in all, the one being drawn)


@dataclass
class _Job:
    """A figure still to draw: ``draw()`` gives its SVG or None; ``alt`` describes it for a screen reader."""

    draw: Callable[[], str | None]
    caption: str
    alt: str
    absent: str = ""  # said in its place when there is nothing to draw


Part = str | _Job


def to_html(
    reports: Mapping[str, Report],
    study_path: str,
    progress: Progress | None = None,
    shaped: Mapping[str, Shaped] | None = None,
    excluded: render.Excluded | None = None,
) -> str:
    """The page; ``progress`` hears of each figure before it is drawn (drawing is most of the time); ``shaped``:
    what shaped each task's numbers besides its ratings, said under its heading (``stats/provenance.py``);
    ``excluded``: the annotators the lead left out, said under each task's heading."""
    parts: list[Part] = [
        f"<h1>tui-rater report</h1><p class=meta>study {e(study_path)} · tui-rater {e(__version__)}</p>"
    ]
    for task, report in reports.items():
        left_out = (excluded or {}).get(task)
        said = [f'<p class="meta excluded">{e(render.excluded_sentence(left_out))}</p>'] if left_out else []
        parts += _task(task, report, (shaped or {}).get(task), said)
    jobs = [part for part in parts if isinstance(part, _Job)]
    body: list[str] = []
    number = 0
    for part in parts:
        if isinstance(part, str):
            body.append(part)
            continue
        if progress is not None:
            progress(jobs.index(part), len(jobs), part.caption)
        drawn = part.draw()
        if drawn is None:
            body += [f"<p class=empty>{e(part.absent)}</p>"] if part.absent else []
            continue
        number += 1
        data = base64.b64encode(drawn.encode("utf-8")).decode("ascii")
        body += [
            f'<figure><img alt="{e(part.alt)}" src="data:image/svg+xml;base64,{data}">',
            f"<figcaption>Figure {number}. {e(part.caption)}</figcaption></figure>",
        ]
    if progress is not None:
        progress(len(jobs), len(jobs), "")
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


def _task(task: str, report: Report, shaped: Shaped | None = None, notes: list[str] | None = None) -> list[Part]:
    out: list[Part] = [f"<h2>{e(task)}</h2>"]
    if shaped is not None:
        out.append(f"<p class=shaped>{e(' '.join(shaped.sentences()))}</p>")
    out += notes or []
    records = report.records
    if not records:
        return [*out, "<p class=empty>No ratings yet.</p>"]
    named = render.named_tables(records)
    out += _part("Can the judge stand in for the raters?", named, VERDICT_TABLES)
    out += _caveats(records)
    out += _error_bars(records, VERDICT_BARS, "The alt-test's ω and ρ with their 95% item-bootstrap intervals")
    out += _verdict_curves(records)
    out += _error_bars(records, AGREEMENT_BARS, "Agreement: each figure with its 95% item-bootstrap interval")
    out += _part("System scores, bias-corrected", named, PPI_TABLES)
    out += _ppi_curves(records)
    out += _part("Calibration of the judges' distributions", named, CALIBRATION_TABLES)
    out += _reliability(records)
    out += _questions(report)
    shown = (*VERDICT_TABLES, *PPI_TABLES, *CALIBRATION_TABLES, *NOT_SHOWN)
    rest = tuple(name for name, _ in named if name not in shown)
    out += _part("All tables", named, rest)
    out += _error_bars(records, BIAS_BARS, "Bias cards: each figure with its 95% item-bootstrap interval")
    return out


# (table, statistic, panel title): the figures drawn with their intervals as error bars
# (table, statistic, panel title, the dashed line: no bias, or where the verdict turns)
VERDICT_BARS = (
    ("verdict", "winning_rate", "ω (may replace at ≥ 0.5)", 0.5),
    ("verdict", "advantage_probability", "ρ", None),
)
AGREEMENT_BARS = (  # the humans among themselves (Table 1), each judge against the humans (Table 2)
    ("table1", "alpha_ordinal", "the people's α (ordinal)", None),
    ("table2", "kendall_tau", "judge vs people: Kendall's τ", 0.0),
    ("table2", "qw_kappa", "judge vs people: weighted κ", 0.0),
)
BIAS_BARS = (
    ("bias", "leniency", "leniency", 0.0),
    ("bias", "length_slope", "length slope (per SD)", 0.0),
    ("bias", "self_preference", "self-preference", 0.0),
    ("position", "first_position_rate", "first shown wins", 0.5),
    ("position", "order_consistency", "order consistency", None),
)


def _error_bars(
    records: list[Record], which: tuple[tuple[str, str, str, float | None], ...], caption: str
) -> list[Part]:
    """One figure: per statistic, each (question, judge)'s value and interval as an error bar."""
    panels: list[plots.Panel] = []
    for table, statistic, title, line in which:
        rows: list[plots.Bar] = [
            (f"{r.attribute} · {r.evaluator_b or r.evaluator}", r.value, r.ci_low, r.ci_high)
            for r in records
            if r.table == table
            and r.statistic == statistic
            and (r.evaluator_b is None or table == "table2")  # Table 2: the humans (a) against each judge (b)
            and r.value is not None
        ]
        panels.append((title, rows, line))
    if not any(rows for _, rows, _ in panels):
        return []
    described = "; ".join(
        f"{title}: "
        + ", ".join(
            f"{safe_text(name, inline=True)} {value:.2f}"
            + (f" [{low:.2f}, {high:.2f}]" if low is not None and high is not None else " (no interval)")
            for name, value, low, high in rows
        )
        for title, rows, _ in panels
        if rows
    )
    alt = f"Dot plots with error bars, one panel per figure: {described}."
    return [_Job(partial(plots.error_bars, caption, panels), caption, alt)]


def _part(heading: str, named: list[tuple[str, Table]], names: tuple[str, ...]) -> list[str]:
    shown = [table for name, table in named if name in names]
    if not shown:
        return []
    return [f"<h3>{e(heading)}</h3>", *(_table(*table) for table in shown)]


def _caveats(records: list[Record]) -> list[str]:
    """Beside the verdict table: each verdict's caveats (the humans barely agree; the verdict has not settled)."""
    found, who = Found(records, verdict.VERDICT.reads), Who(records)
    keys = found.keys("verdict", "attribute", "evaluator")
    # a judge that is not agreement-ready: each distinct reason once, with the rows it applies to
    not_ready: dict[str, list[str]] = {}
    for attribute, judge in keys:
        if (reason := who.reason(judge, attribute)) is not None:
            not_ready.setdefault(not_ready_note(reason), []).append(f"{judge} · {attribute}")
    items = [f"<li><strong>{e(', '.join(rows))}</strong>: {e(note)}</li>" for note, rows in not_ready.items()] + [
        f"<li><strong>{e(attribute)} · {e(judge)}</strong>: {e(caveat.removeprefix('⚠ '))}</li>"
        for attribute, judge in keys
        for caveat in verdict.caveats(found, attribute, judge)
    ]
    if not items:
        return []
    return [
        "<div class=caveats><p><strong>⚠ Read the verdicts above with these caveats</strong></p><ul>",
        *items,
        "</ul></div>",
    ]


def _table(title: str, header: list[str], rows: list[list[str]]) -> str:
    head = "".join(f"<th>{e(column)}</th>" for column in header)
    body = "".join("<tr>" + "".join(f"<td>{e(cell)}</td>" for cell in row) + "</tr>" for row in rows)
    return f"<table><caption>{e(title)}</caption><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _by_attribute(found: list[figures.Curve]) -> dict[str, list[figures.Curve]]:
    grouped: dict[str, list[figures.Curve]] = {}
    for curve in found:
        grouped.setdefault(curve.attribute, []).append(curve)
    return grouped


def _names(values: list[str]) -> str:
    shown = [safe_text(v, inline=True) for v in values]
    if len(shown) < 2:
        return "".join(shown)
    return ", ".join(shown[:-1]) + " and " + shown[-1]


def _span(found: list[figures.Curve], statistic: str) -> tuple[int, int]:
    ns = [n for c in found for n in c.series(statistic)[0]]
    return (min(ns), max(ns)) if ns else (0, 0)


def _verdict_curves(records: list[Record]) -> list[Part]:
    out: list[Part] = []
    for attribute, found in _by_attribute(figures.curves(records, "verdict_convergence")).items():
        caption = f"{attribute}: the alt-test's ω and ρ recomputed on the first n rated items (in rating order)"
        low, high = _span(found, "winning_rate")
        last = "; ".join(
            f"{safe_text(c.judge, inline=True)} {values[-1]:.2f}"
            for c in found
            if (values := c.series("winning_rate")[1])
        )
        alt = (
            f"Two line charts for {safe_text(attribute, inline=True)}: the winning rate ω (left, with the 0.5 line "
            f"from which a judge may replace the humans) and the advantage probability ρ (right) of "
            f"{_names([c.judge for c in found])}, recomputed on the first {low} to {high} rated items; "
            f"ω at {high} items: {last}."
        )
        absent = f"{attribute}: no convergence plot yet: " + (
            f"the alt-test's curve has a single point ({high} rated items; it is drawn from two points on)"
            if high
            else "the alt-test has no ω yet on these rated items (the verdict table says why)"
        )
        out.append(_Job(partial(plots.verdict_curves, attribute, found), caption, alt, absent))
    return out


def _ppi_curves(records: list[Record]) -> list[Part]:
    out: list[Part] = []
    for attribute, found in _by_attribute(figures.curves(records, "ppi_convergence")).items():
        for judge in dict.fromkeys(c.judge for c in found):
            mine = [c for c in found if c.judge == judge]
            caption = (
                f"{attribute} · {judge}: each system's prediction-powered mean and the humans-only mean, with "
                "their 95% intervals, on the first n rated items"
            )
            low, high = _span(mine, "ppi_mean")
            finals = "; ".join(
                f"{safe_text(c.system, inline=True)} {means[-1]:.2f}"
                for c in mine
                if (means := c.series("ppi_mean")[1])
            )
            alt = (
                f"Line charts for {safe_text(attribute, inline=True)} and the judge {safe_text(judge, inline=True)}, "
                f"one per system ({_names([c.system for c in mine])}): the prediction-powered mean and the "
                f"humans-only mean with their 95% bands on the first {low} to {high} rated items; the "
                f"prediction-powered mean at the end: {finals}."
            )
            absent = f"{attribute} · {judge}: no convergence plot yet: each system's curve has fewer than two points"
            out.append(_Job(partial(plots.ppi_curves, attribute, judge, mine), caption, alt, absent))
    return out


def _reliability(records: list[Record]) -> list[Part]:
    found = plots_calibration.reliabilities(records)
    out: list[Part] = []
    for attribute in dict.fromkeys(r.attribute for r in found):
        mine = [r for r in found if r.attribute == attribute]
        caption = (
            f"{attribute}: reliability diagram: the share of the people's ratings at each judge's most probable "
            "point against the judge's probability of it (10 bins), before and after the cross-fitted recalibration"
        )
        alt = (
            f"Line charts for {safe_text(attribute, inline=True)}, one per judge ({_names([r.judge for r in mine])}): "
            "per bin of the judge's probability of its most probable point (across), the share of the people's "
            "ratings at that point (up), as the judge said and after recalibration, with the diagonal of a "
            "calibrated judge."
        )
        out.append(_Job(partial(plots_calibration.reliability, attribute, mine), caption, alt))
    return out


def _questions(report: Report) -> list[Part]:
    out: list[Part] = []
    for question in figures.question_figures(report):
        jobs = [job for job in _question_jobs(question) if job is not None]
        if jobs:
            out += [f"<h3>{e(question.attribute)}</h3>", *jobs]
    return out


def _question_jobs(q: figures.QuestionFigures) -> list[_Job | None]:
    name = safe_text(q.attribute, inline=True)
    shown = [d.evaluator for d in q.distributions if sum(d.counts) or d.values]
    points = ", ".join(safe_text(p, inline=True) for p in q.label_names)
    if q.label_names:
        what = "item verdicts" if q.nominal else "ratings"
        spread = f"Bar chart for {name}: the share of {what} at each scale point ({points}) of {_names(shown)}."
    else:
        spread = f"Histogram for {name}: the density of the ratings from {q.low:g} to {q.high:g} of {_names(shown)}."
    scat = [p.judge for p in q.scatters]
    conf = [c.judge for c in q.confusions]
    cal = [p.judge for p in q.calibrations]

    def per(kind: str, judges: list[str]) -> str:
        return f"{kind}{'s' if len(judges) > 1 else ''} for {name}, one per judge ({_names(judges)})"

    return [
        _Job(partial(plots.distributions, q), f"{q.attribute}: rating distributions per evaluator", spread)
        if shown
        else None,
        _Job(
            partial(plots.scatter, q),
            f"{q.attribute}: the humans' score of each item against each judge's, with the diagonal of agreement",
            per("Scatter plot", scat) + ": the humans' score of each item (across) against the judge's (up), a "
            "dot's size its count, and the dashed diagonal where they agree; items: "
            + ", ".join(str(len(p.human)) for p in q.scatters)
            + ".",
        )
        if scat
        else None,
        _Job(
            partial(plots.confusion, q),
            f"{q.attribute}: confusion counts: the humans' score (rows) against each judge's (columns)",
            per("Heat map", conf) + f": how many items got each humans' score (rows) and judge's score (columns), "
            f"over {points}.",
        )
        if conf
        else None,
        _Job(
            partial(plots.calibration, q),
            f"{q.attribute}: calibration: the judge's expected score (its distribution's mean) against the humans'",
            per("Calibration plot", cal) + ": the judge's expected score of each item (across) against the humans' "
            "mean (up), the humans' mean per bin of expected score, and the diagonal of a calibrated judge.",
        )
        if cal
        else None,
    ]

"""The HTML report's plots: matplotlib figures written as SVG text (``figures.py`` has their numbers).

matplotlib is imported here only, when an HTML report is asked for; headless commands never pay for it.
Figures are made with ``matplotlib.figure.Figure`` (no pyplot, no global state, safe off the main
thread) on the Agg backend, text drawn as paths (no fonts needed to view the file). Every string from
the data is shown literally: control characters become visible placeholders and ``$`` cannot start
mathtext.
"""

from __future__ import annotations

import io
import textwrap
import warnings
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from tui_rater.domain.display import safe_text
from tui_rater.stats.figures import Confusion, Curve, Paired, QuestionFigures

if TYPE_CHECKING:
    from matplotlib.axes import Axes
    from matplotlib.figure import Figure

NAME_WIDTH = 40  # characters of a name shown in a plot
COLUMNS = 3  # panels per row
SCATTER_MAX = 4000  # distinct points drawn in a scatter (more would make a slow, huge SVG)
PANEL = (4.2, 3.4)  # inches of one panel: width, height
CHAR_WIDTH = 0.62  # a character's average width, in units of the font size (DejaVu Sans, generous)
SHORT_NAME = 5  # characters: scale points named no longer than this are laid out like numbers
MIN_POINTS = 2  # a convergence curve is drawn from two points on (one point on an axis of its own is noise)


def fitted(text: str, inches: float, points: float = 10.0) -> str:
    """``text`` wrapped onto lines that fit ``inches`` at a font of ``points`` (a title, an axis label): a
    label longer than its axis was cut at the figure's edge ("mans") or ran into the title above it."""
    chars = max(10, int(inches * 72 / (points * CHAR_WIDTH)))
    kept = text.replace(r"\$", "\x00")  # an escaped $ (``label``) is never split from its backslash
    lines = textwrap.wrap(kept, chars, break_long_words=True, break_on_hyphens=False)
    return "\n".join(lines).replace("\x00", r"\$") if lines else text


def label(text: str) -> str:
    """Data as literal plot text: no control characters, no mathtext, not too long."""
    shown = safe_text(str(text))
    if len(shown) > NAME_WIDTH:
        shown = shown[: NAME_WIDTH - 1] + "…"
    return shown.replace("$", r"\$")


def _figure(
    panels: int, width: float = PANEL[0], height: float = PANEL[1], fixed: bool = False
) -> tuple[Figure, list[Axes]]:
    """The figure and its panels; ``fixed``: laid out by ``_fixed_layout`` once drawn on (else constrained)."""
    import matplotlib

    matplotlib.use("Agg")
    from matplotlib.figure import Figure

    columns = min(COLUMNS, max(1, panels))
    rows = (panels + columns - 1) // columns
    figure = Figure(figsize=(width * columns, height * rows), layout=None if fixed else "constrained")
    axes = figure.subplots(rows, columns, squeeze=False).ravel().tolist()
    for extra in axes[panels:]:
        extra.set_visible(False)
    return figure, axes[:panels]


def svg(figure: Figure) -> str:
    """The figure as SVG text, reproducible (no date, fixed ids)."""
    import matplotlib

    buffer = io.StringIO()
    with warnings.catch_warnings(), matplotlib.rc_context({"svg.hashsalt": "tui-rater", "svg.fonttype": "path"}):
        warnings.simplefilter("ignore", UserWarning)  # a glyph missing from the font is drawn as a box
        figure.savefig(buffer, format="svg", metadata={"Date": None, "Creator": None})
    return buffer.getvalue()


# --- per question -------------------------------------------------------------------------------------


def distributions_figure(question: QuestionFigures) -> Figure | None:
    shown = [d for d in question.distributions if sum(d.counts) or d.values]
    if not shown:
        return None
    short = _short_names(question)
    figure, (axes,) = _figure(1, width=7.0, height=3.6, fixed=short)
    if question.label_names and any(d.counts for d in shown):
        x = np.arange(len(question.label_names))
        width = 0.8 / len(shown)
        for i, d in enumerate(shown):
            total = max(1, sum(d.counts))
            axes.bar(x + i * width - 0.4 + width / 2, np.array(d.counts) / total, width, label=label(d.evaluator))
        across = max(0.6, 6.0 / len(question.label_names))  # inches a point's name may take
        axes.set_xticks(x, [fitted(label(name), across, 9) for name in question.label_names], fontsize=9)
        axes.set_ylabel("share of " + ("item verdicts" if question.nominal else "ratings"))
    else:
        bins = np.linspace(question.low, question.high, 21).tolist()
        for d in shown:
            axes.hist(d.values, bins=bins, density=True, histtype="step", linewidth=1.5, label=label(d.evaluator))
        axes.set_ylabel("density")
    axes.set_title(fitted(f"{label(question.attribute)}: rating distributions", 6.6, 12))
    axes.legend(fontsize="small")
    if short:
        _fixed_layout(figure, [axes])
    return figure


def _short_names(question: QuestionFigures) -> bool:
    """Are the scale's point names as short as numbers (the figure can then be laid out by hand)?"""
    return all(len(label(name)) <= SHORT_NAME for name in question.label_names)


def _diagonal(axes: Axes, low: float, high: float) -> None:
    axes.plot([low, high], [low, high], color="grey", linestyle="--", linewidth=1, label="diagonal: agreement")
    pad = (high - low) * 0.05
    axes.set_xlim(low - pad, high + pad)
    axes.set_ylim(low - pad, high + pad)
    axes.set_aspect("equal")


def _bubbles(axes: Axes, x: np.ndarray, y: np.ndarray) -> int:
    """Identical (x, y) pairs as one point sized by their count; at most SCATTER_MAX points, drawn at random."""
    pairs, counts = np.unique(np.column_stack([x, y]), axis=0, return_counts=True)
    if len(pairs) > SCATTER_MAX:
        keep = np.random.default_rng(0).choice(len(pairs), SCATTER_MAX, replace=False)
        pairs, counts = pairs[keep], counts[keep]
    axes.scatter(pairs[:, 0], pairs[:, 1], s=12 * np.sqrt(counts), alpha=0.5, linewidths=0)
    return len(pairs)


def scatter_figure(question: QuestionFigures) -> Figure | None:
    return _panels(
        question.scatters, lambda axes, p: _scatter_panel(axes, p, question), "human vs judge per item", True
    )


def _scatter_panel(axes: Axes, paired: Paired, question: QuestionFigures) -> None:
    _bubbles(axes, paired.human, paired.judge_values)
    _diagonal(axes, question.low, question.high)
    axes.set_xlabel("humans' score of the item")
    axes.set_ylabel(fitted(f"{label(paired.judge)}'s score", PANEL[1] * 0.7))
    axes.set_title(fitted(f"{label(question.attribute)} · n {len(paired.human)}", PANEL[0] * 0.8), fontsize="medium")


def calibration_figure(question: QuestionFigures) -> Figure | None:
    return _panels(
        question.calibrations,
        lambda axes, p: _calibration_panel(axes, p, question),
        "calibration: expected score vs humans",
        True,
    )


def _calibration_panel(axes: Axes, paired: Paired, question: QuestionFigures) -> None:
    expected, human = paired.judge_values, paired.human
    axes.scatter(expected, human, s=8, alpha=0.3, linewidths=0, label="items")
    edges = np.linspace(question.low, question.high, 11)
    which = np.clip(np.digitize(expected, edges) - 1, 0, len(edges) - 2)
    centres, means = [], []
    for b in range(len(edges) - 1):
        inside = which == b
        if inside.sum() >= 3:  # a bin mean of fewer items is noise
            centres.append(float(expected[inside].mean()))
            means.append(float(human[inside].mean()))
    axes.plot(centres, means, marker="o", color="C3", label="humans' mean per bin (≥ 3 items)")
    _diagonal(axes, question.low, question.high)
    axes.set_xlabel(fitted(f"{label(paired.judge)}: expected score", PANEL[0] * 0.7))
    axes.set_ylabel("humans' mean")
    axes.set_title(fitted(f"{label(question.attribute)} · n {len(expected)}", PANEL[0] * 0.8), fontsize="medium")
    axes.legend(fontsize="x-small", loc="upper left")


def confusion_figure(question: QuestionFigures) -> Figure | None:
    return _panels(
        question.confusions,
        lambda axes, c: _confusion_panel(axes, c, question),
        "confusion: humans × judge",
        _short_names(question),
    )


def _confusion_panel(axes: Axes, found: Confusion, question: QuestionFigures) -> None:
    counts = found.counts
    axes.imshow(counts, cmap="Blues", vmin=0)
    ticks = np.arange(len(question.label_names))
    names = [label(name) for name in question.label_names]
    upright = _short_names(question)  # long names stand on end under their column, wrapped
    axes.set_xticks(ticks, [fitted(name, 1.0, 8) for name in names], fontsize=8, rotation=0 if upright else 90)
    axes.set_yticks(ticks, [fitted(name, 1.0, 8) for name in names], fontsize=8)
    top = max(1, int(counts.max()))
    for (row, column), count in np.ndenumerate(counts):
        if count:
            colour = "white" if count > top / 2 else "black"
            axes.text(column, row, str(count), ha="center", va="center", fontsize="small", color=colour)
    axes.set_xlabel(fitted(label(found.judge), PANEL[0] * 0.7))
    axes.set_ylabel("humans")
    axes.set_title(fitted(label(question.attribute), PANEL[0] * 0.8), fontsize="medium")


def _panels(
    items: Sequence[Any], draw: Callable[[Axes, Any], None], title: str, numeric_ticks: bool = False
) -> Figure | None:
    if not items:
        return None
    figure, axes = _figure(len(items), fixed=numeric_ticks)
    for ax, item in zip(axes, items):
        draw(ax, item)
    figure.suptitle(fitted(title, PANEL[0] * min(COLUMNS, len(items)) * 0.9, 12))
    if numeric_ticks:
        _fixed_layout(figure, axes)
    return figure


LINE = 0.18  # inches of a line of 10-point text, with its leading
TICK_LABEL = 0.45  # inches of a numeric tick label on the y axis (up to 5 characters)


def _lines(text: str) -> int:
    return text.count("\n") + 1 if text.strip() else 0


def _fixed_layout(figure: Figure, axes: Sequence[Axes]) -> None:
    """Margins computed from the figure's own texts instead of the constrained layout, which measures
    every text in two passes and doubled the time of a figure. Only for panels whose tick labels are
    numbers (their width is known): the labels and titles have been wrapped to fit (``fitted``), so their
    line counts give the room they take. tests/stats/test_plot_layout.py measures the drawn result."""
    width, height = figure.get_size_inches()
    ncols = min(COLUMNS, len(axes))
    nrows = (len(axes) + ncols - 1) // ncols
    title = figure.get_suptitle()
    ylabel = max(_lines(ax.get_ylabel()) for ax in axes)
    xlabel = max(_lines(ax.get_xlabel()) for ax in axes)
    panel_title = max(_lines(ax.get_title()) for ax in axes)
    left = 0.15 + TICK_LABEL + ylabel * LINE + 0.1
    right = 0.25
    bottom = 0.15 + LINE + xlabel * LINE + 0.1
    top = 0.12 + _lines(title) * LINE * 1.25 + panel_title * LINE * 1.25 + 0.12
    gap_w = left + 0.1
    gap_h = bottom + panel_title * LINE * 1.25 + 0.15
    axes_w = (width - left - right - (ncols - 1) * gap_w) / ncols
    axes_h = (height - top - bottom - (nrows - 1) * gap_h) / nrows
    figure.subplots_adjust(
        left=left / width,
        right=1 - right / width,
        bottom=bottom / height,
        top=1 - top / height,
        wspace=gap_w / axes_w,
        hspace=gap_h / axes_h if nrows > 1 else 0.2,
    )


# --- convergence --------------------------------------------------------------------------------------


def verdict_curves_figure(attribute: str, found: Sequence[Curve]) -> Figure | None:
    """ω and ρ against the rated items, one line per judge; None when no curve has MIN_POINTS points."""
    drawn = [c for c in found if len(c.series("winning_rate")[0]) >= MIN_POINTS]
    if not drawn:
        return None
    figure, (omega, rho) = _figure(2, fixed=True)
    for c in drawn:
        omega.plot(*c.series("winning_rate"), marker="o", label=label(c.judge))
        rho.plot(*c.series("advantage_probability"), marker="o", label=label(c.judge))
    omega.axhline(0.5, color="grey", linestyle="--", linewidth=1, label="ω = 0.5: may replace")
    omega.set_ylim(-0.05, 1.05)
    omega.set_ylabel("winning rate ω")
    rho.set_ylim(-0.05, 1.05)
    rho.set_ylabel("advantage probability ρ")
    for ax in (omega, rho):
        ax.set_xlabel("rated items")
        ax.legend(fontsize="small")
    figure.suptitle(fitted(f"{label(attribute)}: the alt-test as ratings arrive", PANEL[0] * 2 * 0.9, 12))
    _fixed_layout(figure, [omega, rho])
    return figure


def ppi_curves_figure(attribute: str, judge: str, found: Sequence[Curve]) -> Figure | None:
    shown = [c for c in found if max(len(c.series("ppi_mean")[0]), len(c.series("classical_mean")[0])) >= MIN_POINTS]
    if not shown:  # (a single point would sit alone on an axis of its own, 9.6 to 10.4 rated items)
        return None
    figure, axes = _figure(len(shown), fixed=True)
    for ax, c in zip(axes, shown):
        for prefix, colour, name in (("classical", "C1", "humans only"), ("ppi", "C0", "prediction-powered")):
            ns, means = c.series(f"{prefix}_mean")
            _, low = c.series(f"{prefix}_ci_low")
            _, high = c.series(f"{prefix}_ci_high")
            if not ns:
                continue
            ax.plot(ns, means, color=colour, marker=".", label=name)
            if len(low) == len(ns) == len(high):
                ax.fill_between(ns, low, high, color=colour, alpha=0.2, linewidth=0)
        ax.set_xlabel("rated items")
        ax.set_ylabel("mean (95% interval)")
        ax.set_title(fitted(label(c.system), PANEL[0] * 0.8), fontsize="medium")
        ax.legend(fontsize="small")
    width = PANEL[0] * min(COLUMNS, len(shown)) * 0.9
    figure.suptitle(fitted(f"{label(attribute)} · {label(judge)}: system means as ratings arrive", width, 12))
    _fixed_layout(figure, axes)
    return figure


# --- figures with their intervals ----------------------------------------------------------------------

Bar = tuple[str, float, float | None, float | None]  # (row label, value, 95 % low, high): low/high None: none


Panel = tuple[str, Sequence[Bar], float | None]  # (title, rows, where "no bias" / the verdict's line lies)


def error_bars_figure(title: str, panels: Sequence[Panel]) -> Figure | None:
    """One panel per statistic: each row's value as a dot with its 95 % interval as an error bar (a row without
    an interval is a hollow dot), and a dashed line at the panel's reference; None when no panel has a row."""
    shown = [(name, rows, line) for name, rows, line in panels if rows]
    if not shown:
        return None
    tallest = max(len(rows) for _, rows, _ in shown)
    figure, axes = _figure(len(shown), height=max(PANEL[1], 0.9 + 0.28 * tallest))
    for ax, (name, rows, line) in zip(axes, shown):
        if line is not None:
            ax.axvline(line, linestyle="--", color="grey", linewidth=0.8)
        y = np.arange(len(rows))[::-1]
        values = np.array([r[1] for r in rows], dtype=float)
        low = np.array([r[1] if r[2] is None else r[2] for r in rows], dtype=float)
        high = np.array([r[1] if r[3] is None else r[3] for r in rows], dtype=float)
        bounded = np.array([r[2] is not None and r[3] is not None for r in rows])
        ax.errorbar(
            values[bounded],
            y[bounded],
            xerr=[values[bounded] - low[bounded], high[bounded] - values[bounded]],
            fmt="o",
            capsize=3,
        )
        ax.plot(values[~bounded], y[~bounded], "o", mfc="none", color="grey")
        ax.set_yticks(y, [label(r[0]) for r in rows], fontsize="small")
        ax.set_title(fitted(label(name), PANEL[0] * 0.5), fontsize="medium")
    figure.suptitle(fitted(title, PANEL[0] * min(COLUMNS, len(shown)) * 0.9, 12))
    return figure


# --- as SVG text (what the HTML page inlines) ------------------------------------------------------------


def _svg_of(figure: Figure | None) -> str | None:
    return None if figure is None else svg(figure)


def distributions(question: QuestionFigures) -> str | None:
    return _svg_of(distributions_figure(question))


def scatter(question: QuestionFigures) -> str | None:
    return _svg_of(scatter_figure(question))


def calibration(question: QuestionFigures) -> str | None:
    return _svg_of(calibration_figure(question))


def confusion(question: QuestionFigures) -> str | None:
    return _svg_of(confusion_figure(question))


def verdict_curves(attribute: str, found: Sequence[Curve]) -> str | None:
    return _svg_of(verdict_curves_figure(attribute, found))


def ppi_curves(attribute: str, judge: str, found: Sequence[Curve]) -> str | None:
    return _svg_of(ppi_curves_figure(attribute, judge, found))


def error_bars(title: str, panels: Sequence[Panel]) -> str | None:
    return _svg_of(error_bars_figure(title, panels))

"""The reliability diagram of the HTML report (``sections/calibration.py`` has its numbers): per question, one panel
per judge with a distribution -- the share of the people's ratings at the judge's most probable point against the
judge's probability of it, per bin of that probability, before and after the cross-fitted recalibration, and the
diagonal of a calibrated judge. Drawn like ``plots.py``'s figures (matplotlib's Agg, SVG text, data as literal text).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from tui_rater.stats import plots
from tui_rater.stats.records import Record

if TYPE_CHECKING:
    from matplotlib.figure import Figure


@dataclass
class Reliability:
    attribute: str
    judge: str
    bins: dict[str, list[tuple[float, float, int]]] = field(default_factory=dict)  # "" / "_after" -> bins


def reliabilities(records: list[Record]) -> list[Reliability]:
    """The reliability bins of every (question, judge) in the report's ``calibration`` records."""
    found: dict[tuple[str, str], dict[str, dict[int, dict[str, float | int]]]] = {}
    for r in records:
        if r.table != "calibration" or not r.statistic.startswith("reliability_") or r.value is None:
            continue
        kind, _, rest = r.statistic.removeprefix("reliability_").partition("_")
        after = "_after" if rest.startswith("after_") else ""
        b = int(rest.removeprefix("after_"))
        point = found.setdefault((r.attribute, r.evaluator), {}).setdefault(after, {}).setdefault(b, {})
        point[kind], point["n"] = r.value, r.n
    out = []
    for (attribute, judge), which in found.items():
        mine = Reliability(attribute, judge)
        for after, bins in which.items():
            mine.bins[after] = [
                (float(p["confidence"]), float(p["share"]), int(p["n"]))
                for _, p in sorted(bins.items())
                if "confidence" in p and "share" in p
            ]
        out.append(mine)
    return out


def reliability(attribute: str, found: list[Reliability]) -> str | None:
    figure = reliability_figure(attribute, found)
    return None if figure is None else plots.svg(figure)


def reliability_figure(attribute: str, found: list[Reliability]) -> Figure | None:
    shown = [r for r in found if any(r.bins.values())]
    if not shown:
        return None
    figure, axes = plots._figure(len(shown))
    for ax, r in zip(axes, shown):
        for after, colour, name in (("", "C0", "as the judge said"), ("_after", "C2", "after recalibration")):
            bins = r.bins.get(after, [])
            if bins:
                ax.plot([b[0] for b in bins], [b[1] for b in bins], marker="o", color=colour, label=name)
        ax.plot([0, 1], [0, 1], linestyle="--", color="0.5", linewidth=1, label="calibrated")
        ax.set_xlim(0, 1)
        ax.set_ylim(0, 1)
        ax.set_xlabel(plots.fitted("the judge's probability of its top point (bin mean)", plots.PANEL[0] * 0.8))
        ax.set_ylabel(plots.fitted("share of people's ratings at that point", plots.PANEL[1] * 0.8))
        ax.set_title(plots.fitted(plots.label(r.judge), plots.PANEL[0] * 0.8), fontsize="medium")
        ax.legend(fontsize="x-small", loc="upper left")
    figure.suptitle(plots.fitted(f"{plots.label(attribute)}: reliability diagram", 6.6, 12))
    return figure

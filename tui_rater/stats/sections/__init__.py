"""The report's sections, by the names protocols give them (``EvaluationProtocol.report_sections``).

Each section is a function of the shared report data (``data.ReportData``) and the task's questions
whose protocol names it; it appends records. ``ORDER`` is the order they appear in a report. A
protocol from a fourth paper names the sections that apply to its values, or adds one here.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from tui_rater.domain.tasks import Attribute
from tui_rater.stats.sections import (
    bias_corrected,
    converging,
    extremes,
    judges,
    meta,
    nominal,
    pairwise,
    raters,
    readings,
    retest,
    scores,
    spa,
    verdict,
)
from tui_rater.stats.sections.data import ReportData

Section = Callable[[ReportData, Sequence[Attribute]], None]

SECTIONS: dict[str, Section] = {
    "table1": scores.table1,  # with Welch's t-test
    "table2": scores.table2,
    "pairs": scores.pairs,
    "raters": raters.raters,  # Table 6 per writer, Table 12 per rater
    "table3": scores.table3,
    "meta": meta.meta,
    "nominal": nominal.nominal,
    "position": pairwise.position,
    "bt": pairwise.bt,
    "pair_meta": pairwise.pair_meta,
    "spa": spa.spa,
    # can the judge stand in for the raters? (docs/VERDICT.md)
    "verdict": verdict.verdict,  # the alternative annotator test; across questions too
    "ppi": bias_corrected.ppi,  # bias-corrected system means (ordinal and interval questions)
    "convergence": converging.convergence,  # both as human ratings arrive
    "retest": retest.retest,  # a person against themselves (annotate --retest), and each judge
    "extremes": extremes.extremes,
}
ORDER = tuple(SECTIONS)
# every question, whatever its protocol: how its judges' answers could be read
ALWAYS: dict[str, Section] = {"readings": readings.readings, "judges": judges.judges}

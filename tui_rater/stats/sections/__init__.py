"""The report's sections, one object each (``base.Section``), by the names protocols give them
(``EvaluationProtocol.report_sections``).

``SECTIONS`` is the order they are computed in (and their records appear in JSON and CSV); ``LAYOUTS``
the order their tables are printed in. A protocol from a fourth paper names the sections that apply to
its values, or adds one: a module here with its compute function and its ``Section`` (tables written,
layouts), registered with ``register``. Every name is checked when this package is imported: a
protocol naming a section nobody computes, a layout reading a table nobody writes, or a table written
that no layout prints, raises here rather than printing an empty table.
"""

from __future__ import annotations

from collections.abc import Iterable

from tui_rater.domain import protocols
from tui_rater.domain.errors import UserError
from tui_rater.domain.protocols import EvaluationProtocol
from tui_rater.stats.sections import (
    bias_card,
    bias_corrected,
    calibration,
    ceiling,
    converging,
    extremes,
    judges,
    jury,
    meta,
    nominal,
    notes,
    pairwise,
    raters,
    readings,
    reliability,
    retest,
    scores,
    spa,
    verdict,
)
from tui_rater.stats.sections.base import Layout, Runs, Section

SECTIONS: dict[str, Section] = {}


def register(section: Section) -> Section:
    """Add a section (after the others: its records and tables come last); a name taken is refused."""
    if section.name in SECTIONS:
        raise ValueError(f"a report section named {section.name!r} is already registered")
    SECTIONS[section.name] = section
    return section


for _section in (
    *scores.SECTIONS[:3],  # table1 (with Welch's t-test), table2, pairs
    raters.SECTION,  # Table 6 per writer, Table 12 per rater
    scores.SECTIONS[3],  # table3
    ceiling.SECTION,  # each judge figure beside a held-out person's
    meta.SECTION,
    nominal.SECTION,
    *pairwise.SECTIONS,  # position, bt, pair_meta
    spa.SECTION,
    # can the judge stand in for the raters? (docs/VERDICT.md)
    verdict.SECTION,
    jury.SECTION,  # does a jury do better than its best member?
    bias_corrected.SECTION,
    calibration.PPI_SECTION,  # means from the judge's whole distribution
    calibration.CALIBRATION_SECTION,
    converging.SECTION,
    retest.SECTION,
    bias_card.SECTION,
    reliability.SECTION,  # every person and judge on one scale (stats/rater_model.py)
    extremes.SECTION,
    readings.SECTION,  # every question a judge read
    judges.SECTION,
    notes.SECTION,  # whatever the questions
):
    register(_section)

# the order the tables are printed in: scores, then nominal answers and pairs, then whether the judge may
# stand in for the raters, then what every report ends with
LAYOUTS: tuple[Layout, ...] = (
    scores.TABLE1,
    scores.TABLE2,
    scores.PAIRS,
    raters.TABLE6,
    raters.TABLE12,
    scores.TABLE3,
    ceiling.CEILING,
    ceiling.STRATA,
    nominal.SHARES,
    nominal.PAIRS,
    spa.TABLE,
    pairwise.POSITION,
    pairwise.BT,
    meta.TABLE,
    pairwise.PAIR_META,
    verdict.VERDICT,
    verdict.ACROSS,
    jury.TABLE,
    bias_corrected.MEANS,
    bias_corrected.DIFFERENCES,
    calibration.PPI,
    calibration.CALIBRATION,
    converging.CURVES,
    retest.TABLE,
    bias_card.CARD,
    reliability.TABLE,
    readings.TABLE,
    extremes.TABLE,
    judges.TABLE,
    notes.TABLE,
)


def layouts() -> tuple[Layout, ...]:
    """Every printed table, in order: ``LAYOUTS``, then those of sections registered later."""
    listed = set(LAYOUTS)
    return LAYOUTS + tuple(layout for s in SECTIONS.values() for layout in s.layouts if layout not in listed)


def check_layouts() -> None:
    """Every table a layout reads is written by a section, and every table written is read by a layout."""
    written = {table for s in SECTIONS.values() for table in s.tables}
    read = {table for layout in layouts() for table in layout.reads}
    if read - written:
        raise ValueError(f"report layouts read tables no section writes: {sorted(read - written)}")
    if written - read:
        raise ValueError(f"report sections write tables no layout prints: {sorted(written - read)}")
    shown = [layout for s in SECTIONS.values() for layout in s.layouts]
    if sorted(layout.name for layout in LAYOUTS) != sorted(layout.name for layout in shown if layout in LAYOUTS):
        raise ValueError("LAYOUTS and the sections' layouts differ")


def check_protocols(found: Iterable[EvaluationProtocol]) -> None:
    """A protocol that names a section nobody computes: one of ours is a bug (it raises, naming it); an installed
    package's (``protocols/discovery.py``) is its author's slip, said in one sentence."""
    for protocol in found:
        unknown = [name for name in protocol.report_sections if SECTIONS.get(name) is None]
        if unknown and protocol.name not in protocols.BUILT_IN:
            raise UserError(
                f"the protocol {protocol.name!r} names report sections that do not exist: {', '.join(unknown)} "
                f"(there are: {', '.join(SECTIONS)})"
            )
        if unknown:
            raise ValueError(f"the protocol {protocol.name!r} names unknown report sections: {unknown}")
        always = [name for name in protocol.report_sections if SECTIONS[name].runs is not Runs.NAMED]
        if always:
            raise ValueError(f"the protocol {protocol.name!r} names sections that run for every task: {always}")


check_layouts()
check_protocols(protocols.REGISTRY.values())

"""``tui-rater sample-size``: from a pilot, how many human-rated items each estimate of the mean human rating needs
for an interval of a given half-width, against the humans-only mean (``stats/ppi_plan.py``).

The estimates are the report's ``ppi_distribution`` ones (``stats/sections/calibration.py:estimates``), computed
the same way on the same items; only the sample size is new here.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace
from typing import Any

import numpy as np
from scipy import stats as sp

from tui_rater.domain.errors import UserError
from tui_rater.service.reports import _with_inclusion
from tui_rater.stats import neyman, ppi_plan
from tui_rater.stats.ppi_plan import ASSUMPTIONS as ASSUMPTIONS  # the CLI prints them (it reads stats only here)
from tui_rater.stats.ppi_plan import Need as Need
from tui_rater.stats.ppi_recal import Estimate
from tui_rater.stats.records import ALL, HUMANS
from tui_rater.stats.report import ReportSettings
from tui_rater.stats.sections import bias_corrected
from tui_rater.stats.sections.calibration import METHODS, estimates, questions
from tui_rater.stats.sections.data import ReportData
from tui_rater.store.study import Study

SHOWN = dict(METHODS)


@dataclass(frozen=True)
class SampleSizeOptions:
    task: str
    half_width: float  # the target half-width of the interval, in the question's scale points
    confidence: float = 0.95
    attributes: tuple[str, ...] = ()  # only these questions (default: every question with a mean)
    judges: tuple[str, ...] = ()  # only these judges (default: every judge that rated the question)
    # the new human-rated items the stratified methods allocate across their strata (None: the number that the
    # method needs for the half-width, less the pilot)
    new_items: int | None = None


@dataclass(frozen=True)
class Planned:
    """One question, judge and method: the human-rated items it needs, and how many fewer than humans only."""

    attribute: str
    judge: str
    method: str
    rated: int  # the pilot: items people rated so far (of those the judge rated)
    items: int  # items the judge rated
    need: ppi_plan.Need
    fewer: int | None  # humans only's n minus this method's n
    fewer_cautious: int | None  # the same at the upper ends of the pilot's intervals
    allocation: Allocation | None = None  # stratified methods: where the new ratings should go

    def as_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out.update(out.pop("need"))
        if self.allocation is None:
            out.pop("allocation")
        return out


def _check(options: SampleSizeOptions) -> None:
    """The Python API's bad values as the CLI's: one sentence (a NaN half-width crashed ``math.ceil``, a negative one
    planned for its absolute value, a confidence of 0 divided by zero)."""
    h, c = options.half_width, options.confidence
    if not (isinstance(h, (int, float)) and math.isfinite(h) and h > 0):
        raise UserError(f"the half-width must be a finite number above 0, not {h!r}")
    if not (isinstance(c, (int, float)) and 0 < c < 1):
        raise UserError(f"the confidence must be a number between 0 and 1 (e.g. 0.95), not {c!r}")


@dataclass(frozen=True)
class Allocation:
    """Neyman allocation of ``new`` more human-rated items across a stratified method's strata (``stats/neyman.py``):
    per stratum N_h, the pilot's n⁰_h and S_h, and the new m_h; the half-width expected with these totals, and with
    the same number drawn uniformly from the unrated items."""

    new: int
    strata: list[neyman.StratumAllocation]
    half_width: float | None
    half_width_uniform: float | None
    lam: float
    note: str = ""


def _difference(a: int | None, b: int | None) -> int | None:
    return None if a is None or b is None else a - b


def sample_size(study: Study, options: SampleSizeOptions) -> list[Planned]:
    """One row per question, judge and method (the humans-only mean first for each question and judge)."""
    _check(options)
    task = study.task(options.task)  # an unknown task: one sentence
    verdict = _with_inclusion(study, task.name, ReportSettings().verdict)
    data = ReportData(study, task, replace(ReportSettings(), verdict=verdict))
    asked = questions(data, task.attributes)
    if options.attributes:
        names = {a.name for a in asked}
        unknown = [a for a in options.attributes if a not in names]
        if unknown:
            raise UserError(
                f"task {task.name!r} has no question {unknown[0]!r} with a mean to plan for "
                f"(questions: {', '.join(sorted(names)) or 'none'})"
            )
        asked = [a for a in asked if a.name in options.attributes]
    if not asked:
        raise UserError(f"task {task.name!r} has no ordinal or interval question with scale points to plan for")
    if not data.humans:
        raise UserError(f"no person has rated task {task.name!r} yet: rate a pilot of a few dozen items first")
    judges = list(data.judges)
    if options.judges:
        unknown = [j for j in options.judges if j not in judges]
        if unknown:
            raise UserError(f"no judge {unknown[0]!r} rated task {task.name!r} (judges: {', '.join(judges) or 'none'})")
        judges = [j for j in judges if j in options.judges]
    if not judges:
        raise UserError(f"no judge has rated task {task.name!r}: run `tui-rater judge` on every item first")
    rows: list[Planned] = []
    for attribute in asked:
        human = data.item_values(HUMANS, attribute, ALL)
        for judge in judges:
            f = data.item_values(judge, attribute, ALL)
            if np.all(np.isnan(f)):
                continue
            if data.settings.verdict.design is not None:
                raise UserError(
                    f"people rate task {task.name!r} from its stratified draw (assign --allocate), which is no uniform "
                    "pilot: the draw already allocated the ratings, and the report weights them by stratum"
                )
            if bias_corrected.inclusion(data, attribute) is not None:
                raise UserError(
                    "the people rated items drawn by active sampling (--order uncertain): a plan from this pilot "
                    "would treat them as a uniform sample, which they are not"
                )
            found = estimates(data, attribute, judge, f, human)
            rows.extend(_planned(attribute.name, judge, int((~np.isnan(f)).sum()), found, options))
    if options.new_items is not None:
        room = {row.items - row.rated for row in rows if row.method.startswith("stratified")}
        if room and options.new_items > max(room):
            raise UserError(
                f"--new-items {options.new_items}: there are only {max(room)} items the judge rated and people "
                "have not rated yet"
            )
    return rows


def _planned(
    attribute: str, judge: str, items: int, found: list[tuple[str, Estimate]], options: SampleSizeOptions
) -> list[Planned]:
    rows = []
    baseline: ppi_plan.Need | None = None
    for name, estimate in found:
        needed = ppi_plan.need(estimate, options.half_width, options.confidence, items)
        if estimate.interval.n >= items:
            whole = "people rated every item the judge rated: this is the study, not a pilot"
            needed = replace(needed, note="; ".join(x for x in (needed.note, whole) if x))
        if name == "classical":
            baseline = needed
        allocation = _allocation(estimate, needed, options) if estimate.strata else None
        rows.append(
            Planned(
                attribute,
                judge,
                SHOWN.get(name, name),
                estimate.interval.n,
                items,
                needed,
                _difference(baseline.n, needed.n) if baseline else None,
                _difference(baseline.high, needed.high) if baseline else None,
                allocation,
            )
        )
    return rows


def _allocation(estimate: Estimate, needed: ppi_plan.Need, options: SampleSizeOptions) -> Allocation | None:
    """Where ``options.new_items`` (or the number the method needs, less the pilot) new ratings should go."""
    rated = sum(s.rated for s in estimate.strata)
    room = sum(s.items - s.rated for s in estimate.strata)
    new = options.new_items
    note = "--new-items"
    if new is None:
        if needed.n is None:
            return None
        new, note = needed.n - rated, "the items this method needs, less the pilot"
        if new <= 0:  # the pilot is already enough: nothing to allocate
            return None
    if new > room:
        return None
    strata = neyman.neyman(estimate.strata, new)
    fixed = max(estimate.fixed or 0.0, 0.0)
    z = float(sp.norm.ppf(0.5 + options.confidence / 2))

    def half(totals: list[float]) -> float | None:
        people = neyman.human_variance(estimate.strata, totals)
        return None if not math.isfinite(people) else z * math.sqrt(fixed + people)

    return Allocation(
        new,
        strata,
        half([float(s.total) for s in strata]),
        half(neyman.proportional(estimate.strata, new)),
        estimate.lam if estimate.lam is not None else 1.0,
        note,
    )

"""The study's ratings as the sequences ``stats/sequential.py`` watches: per question, judge and system, the
judge's values and the humans' in the order the human ratings were completed (``converging.rating_order``),
for the live pane's and the convergence curves' anytime-valid figures (docs/VERDICT.md §7)."""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tui_rater.domain.tasks import Attribute
from tui_rater.stats import sequential as sq
from tui_rater.stats.records import HUMANS
from tui_rater.stats.sections import alt_data
from tui_rater.stats.sections.bias_corrected import inclusion
from tui_rater.stats.sections.data import ReportData
from tui_rater.stats.sections.settings import FDR
from tui_rater.stats.sections.verdict import rated


@dataclass(frozen=True)
class Watched:
    """One judge and system: the prediction-powered and the human-only confidence sequences, look by look (the
    n-th entry after n human-rated items), or why there are none."""

    sequence: sq.PpiSequence | None
    note: str = ""

    @property
    def rated(self) -> int:
        return 0 if self.sequence is None else int(self.sequence.humans.low.size)


def rated_in_order(
    data: ReportData, attribute: Attribute, judge: str, system: str, order: Sequence[Hashable]
) -> npt.NDArray[np.intp]:
    """The positions in ``data.keys(system)`` of the items of ``order`` that the humans and the judge both rated
    (PPI leaves the others out), in the order of ``order`` (the items in the order their ratings were completed)."""
    keys = data.keys(system)
    wanted = np.asarray(order, dtype=np.int64)  # the report's item keys
    at = np.minimum(np.searchsorted(keys, wanted), max(len(keys) - 1, 0))
    at = at[keys[at] == wanted] if len(keys) else at[:0]
    f = data.item_values(judge, attribute, system)
    y = data.item_values(HUMANS, attribute, system) if data.humans else np.full(f.shape, np.nan)
    found: npt.NDArray[np.intp] = at[~np.isnan(y[at]) & ~np.isnan(f[at])]
    return found


def mean_sequence(data: ReportData, attribute: Attribute, judge: str, system: str, order: Sequence[int]) -> Watched:
    """``order``: the question's human-rated item keys in the order their ratings were completed."""
    if inclusion(data, attribute) is not None:
        return Watched(None, "not computed for weighted (active) samples")
    f = data.item_values(judge, attribute, system)
    if np.all(np.isnan(f)):
        return Watched(None, "the judge rated none of these items")
    y = data.item_values(HUMANS, attribute, system) if data.humans else np.full(f.shape, np.nan)
    # as the fixed-n PPI: the items both rated, the judge's items for its own mean
    mine = rated_in_order(data, attribute, judge, system, order)
    if not mine.size:
        return Watched(None, "no human ratings of these items yet")
    scale = data.protocol(attribute).value_scale(attribute)
    judged = f[~np.isnan(f)]
    humans, rated = y[mine], f[mine]
    values = np.concatenate([judged, humans])
    if values.min() < scale.low or values.max() > scale.high:
        return Watched(None, f"values off the scale {scale.low:g}–{scale.high:g}: no bounded-mean sequence")
    return Watched(sq.ppi_cs(judged, rated, humans, scale.low, scale.high))


def verdict_curve(
    data: ReportData, attribute: Attribute, judge: str, order: Sequence[Hashable], sizes: Sequence[int] | None = None
) -> list[tuple[int, sq.AnytimeVerdict]]:
    """The anytime-valid alt-test after the first n items of ``order`` for each n of ``sizes`` (default: all of
    them at once), at the report's ε; empty when the question has fewer than 3 humans or the judge no values."""
    _, _, reason = alt_data.people(data, attribute)
    if reason or not rated(data, judge, attribute):
        return []
    length, rank = alt_data.judged_order(data, attribute, judge, order)
    return verdict_curve_of(data, attribute, judge, rank, length, [length] if sizes is None else sizes)


def verdict_curve_of(
    data: ReportData, attribute: Attribute, judge: str, rank: sq.Floats, length: int, sizes: Sequence[int]
) -> list[tuple[int, sq.AnytimeVerdict]]:
    """``verdict_curve`` from the judge's indicators as the verdict scored them (``alt_data.scored``) and each
    test item's place in the order (``alt_data.judged_order``); call where the question has an alt-test."""
    return sq.anytime_curve_of(
        alt_data.scored(data, attribute, judge), rank, length, sizes, epsilon=data.settings.verdict.eps, alpha=FDR
    )

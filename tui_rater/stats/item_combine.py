"""Each item's value from an evaluator's annotators x items matrix: the protocol's aggregate of each presentation's
annotators, then the presentations combined (numpy only).

Moved from ``sections/data.py`` (which re-exports these, for ``ReportData.item_values`` and the jury): the app's
running sums (``live_sums.py``) build their values with the report's own code, and importing it from there imported
polars and the report's sections into the app before its first numbers (issue 35 item 1).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from tui_rater.domain.protocols import EvaluationProtocol


def _is_mean(protocol: EvaluationProtocol) -> bool:
    # the base protocol's aggregate is the mean: computed vectorised (the same numbers, tested)
    return type(protocol).aggregate is EvaluationProtocol.aggregate


def _aggregate_columns(protocol: EvaluationProtocol, m: np.ndarray) -> np.ndarray:
    """Each item's (column's) annotators combined by the protocol; NaN where none rated it."""
    if m.shape[0] == 0:
        return np.full(m.shape[1], np.nan)
    if _is_mean(protocol):
        with np.errstate(all="ignore"):
            counts = np.sum(~np.isnan(m), axis=0)
            return np.where(counts > 0, np.nansum(m, axis=0) / np.maximum(counts, 1), np.nan)
    out = np.full(m.shape[1], np.nan)
    for j in range(m.shape[1]):
        column = m[:, j]
        present = column[~np.isnan(column)]
        if present.size:
            value = protocol.aggregate(present.tolist())
            out[j] = np.nan if value is None else value
    return out


def combined_values(protocol: EvaluationProtocol, m: np.ndarray, shown: np.ndarray) -> np.ndarray:
    """Each item's score from an evaluator's annotators x items matrix (NaN where unrated) and each annotator's
    presentation: the annotators of each presentation combined by the protocol, then the presentations
    (``ReportData.item_values``; the live pane's sums build theirs from columns with it)."""
    per_presentation = [_aggregate_columns(protocol, m[shown == p]) for p in sorted(set(shown.tolist()))]
    return _across_presentations(protocol, per_presentation, m.shape[1])


def _across_presentations(protocol: EvaluationProtocol, values: Sequence[np.ndarray], width: int) -> np.ndarray:
    """One answer per item from its presentations (a pair shown in both orders).

    Every presentation is needed. Answers that agree are the item's answer; a nominal answer that
    changes with the order is no preference: a tie, as MT-Bench (Zheng et al. 2023) counts an
    inconsistent pair (the protocol's ``combine_presentations`` says).
    """
    if not values:
        return np.full(width, np.nan)
    if len(values) == 1:
        return values[0]
    stack = np.vstack(values)
    complete = ~np.any(np.isnan(stack), axis=0)
    same = complete & np.all(stack == stack[0], axis=0)
    out = np.where(same, stack[0], np.nan)
    for j in np.nonzero(complete & ~same)[0]:
        value = protocol.combine_presentations(stack[:, j].tolist())
        out[j] = np.nan if value is None else value
    return out

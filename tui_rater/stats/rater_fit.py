"""One question's raters in the reliability model (``rater_model.py``): from each rater's value of each item to
the model, and back to each item's consensus value.

The same fit serves the report's reliability table (people and judges together, on one scale), the report's
``--reference model`` (people only: the judges are what is compared with it) and ``progress`` (which marks a
person the model finds careless).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from tui_rater.domain.protocols import Level
from tui_rater.domain.questions import Scale
from tui_rater.stats import rater_model as rm

MODEL_REFERENCE = "model"  # ``report --reference model``: the consensus the model of the people implies
MIN_RATERS = 3  # with two raters the true answer and who is wrong cannot be told apart
MIN_ITEMS = 5  # items rated by at least two raters


@dataclass(frozen=True)
class QuestionModel:
    """The model of one question: ``names[r]`` is rater r; ``items`` the positions (in the columns given) of the
    items the model saw; ``values[c]`` the value of category c on the question's scale."""

    names: list[str]
    items: npt.NDArray[np.int64]
    values: npt.NDArray[np.float64]
    model: rm.RaterModel

    @property
    def kind(self) -> str:
        return self.model.fit.kind

    def consensus(self, width: int) -> npt.NDArray[np.float64]:
        """Each item's consensus value (NaN where the model saw no rating): the most likely answer (nominal),
        the posterior mean of the scale's values (ordered)."""
        out = np.full(width, np.nan)
        posterior = self.model.fit.posterior
        if self.kind == rm.NOMINAL:
            out[self.items] = self.values[np.argmax(posterior, axis=1)]
        else:
            out[self.items] = posterior @ self.values
        return out


def fit_question(
    names: Sequence[str],
    columns: npt.NDArray[np.float64],
    level: Level,
    scale: Scale,
    resamples: int = rm.RESAMPLES,
) -> QuestionModel | str:
    """The model of raters ``names`` from ``columns`` (raters x items, NaN where unrated), or why there is none."""
    rated = ~np.isnan(columns)
    keep: npt.NDArray[np.bool_] = np.asarray(rated.any(axis=1), dtype=bool)
    names = [name for name, kept in zip(names, [bool(k) for k in keep], strict=True) if kept]
    columns, rated = columns[keep], rated[keep]
    if len(names) < MIN_RATERS:
        return f"fewer than {MIN_RATERS} raters"
    shared = rated.sum(axis=0) >= 2
    if int(shared.sum()) < MIN_ITEMS:
        return f"fewer than {MIN_ITEMS} items rated by two raters or more"
    items = np.nonzero(rated.any(axis=0))[0].astype(np.int64)
    rater, position = np.nonzero(rated[:, items])
    raw = columns[:, items][rater, position]
    if level is Level.NOMINAL:
        values, label = np.unique(raw, return_inverse=True)  # the answers given (crowd-kit's label set)
        kind = rm.NOMINAL
    else:
        label, values = rm.to_ordered(raw, scale.low, scale.high, scale.points)
        kind = rm.ORDINAL
    labels = rm.Labels(
        position.astype(np.int64), rater.astype(np.int64), label.astype(np.int64), len(items), len(names), len(values)
    )
    if len(values) < 2:
        return "every rater gave the same answer"
    return QuestionModel(list(names), items, np.asarray(values, dtype=float), rm.fit_model(labels, kind, resamples))


def consensus_of_people(
    names: Sequence[str], columns: npt.NDArray[np.float64], level: Level, scale: Scale, keys: Sequence[int]
) -> dict[int, float]:
    """Item key -> the consensus value the model of the people alone implies (``report --reference model``); empty
    where there is no model (fewer than 3 people): their ratings combined stay the reference there. The judges are
    left out: they are what is compared with the reference, and would otherwise pull it towards themselves."""
    fitted = fit_question(names, columns, level, scale, resamples=0)
    if isinstance(fitted, str):
        return {}
    values = fitted.consensus(len(keys))
    return {int(key): float(value) for key, value in zip(keys, values.tolist(), strict=True) if np.isfinite(value)}

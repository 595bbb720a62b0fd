"""``progress`` marks a careless person from the reliability model (``stats/rater_model.py``), not only from
heuristics: per question, the model places every person and judge on one scale (κ against the true answers it
infers, with an item-bootstrap SE), and a person whose κ is far below the others' is marked with the figure.

Far below: the upper end of their 95 % interval (κ + 1.96 SE) under half the median κ of the question's other
raters, over at least ``MIN_ITEMS`` items, where that median is at least ``OTHERS_MIN``: a rater who answers at
random has κ near 0 whatever the others do, but where the others' κ is near 0 too (everyone answering at random,
or no truth the raters share) the model's truth is no yardstick, and nobody is marked by it. Gold items are left
out: they score the annotators already.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from tui_rater.domain import protocols
from tui_rater.domain.tasks import Task
from tui_rater.stats.rater_fit import fit_question

MIN_ITEMS = 5
SHARE_OF_OTHERS = 0.5
OTHERS_MIN = 0.2  # the others' median κ: below it the raters agree too little for the model's truth to mark anyone
Z95 = 1.959963984540054


def model_marks(
    task: Task,
    people: Mapping[tuple[int, str], Mapping[str, list[float]]],
    judges: Mapping[tuple[int, str, str], float],
    gold: set[int],
) -> dict[str, list[str]]:
    """Person -> the marks the model gives them (one per question it finds them careless on)."""
    marks: dict[str, list[str]] = {}
    for attribute in task.attributes:
        name = attribute.name
        rated = {(key, rater): vs[-1] for (key, a), by in people.items() if a == name for rater, vs in by.items() if vs}
        rated.update({(key, judge): v for (key, a, judge), v in judges.items() if a == name})
        rated = {(key, rater): v for (key, rater), v in rated.items() if key not in gold}
        persons = sorted({rater for (key, a), by in people.items() if a == name for rater in by})
        raters = persons + sorted({judge for (_k, a, judge) in judges if a == name} - set(persons))
        keys = sorted({key for key, _rater in rated})
        if not keys or len(raters) < 3:
            continue
        column = {key: j for j, key in enumerate(keys)}
        row = {rater: i for i, rater in enumerate(raters)}
        values = np.full((len(raters), len(keys)), np.nan)
        for (key, rater), value in rated.items():
            values[row[rater], column[key]] = value
        fitted = fit_question(raters, values, protocols.of(attribute).level, attribute.scale)
        if isinstance(fitted, str):
            continue
        kappa, se, n = fitted.model.reliability, fitted.model.std_error, fitted.model.items_rated
        for r, rater in enumerate(fitted.names):
            others = np.delete(kappa, r)
            others = others[np.isfinite(others)]
            if rater not in persons or n[r] < MIN_ITEMS or not others.size or not math.isfinite(se[r]):
                continue
            typical = float(np.median(others))
            if typical >= OTHERS_MIN and kappa[r] + Z95 * se[r] < SHARE_OF_OTHERS * typical:
                marks.setdefault(rater, []).append(
                    f"model: κ {kappa[r]:.2f} ± {se[r]:.2f} on {name} against the answers the raters imply, "
                    f"the others {typical:.2f} ({n[r]} items)"
                )
    return marks

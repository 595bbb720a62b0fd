"""``Stat``, the figure every statistic returns, and ``to_labels``, the rounding to a scale's points: numpy only.

Here rather than in ``agreement.py`` (which re-exports both) so that the app's running sums (``live_sums.py``) and
the pane's display types (``pane_types.py``) need no scipy: its import was most of the 2 s before the pane's first
numbers (issue 35 item 1: first numbers <= 2 s at 100k items).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


@dataclass(frozen=True)
class Stat:
    value: float | None
    n: int
    note: str = ""
    p: float | None = None
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.value is not None


def to_labels(values: npt.ArrayLike, labels: list[float]) -> FloatArray:
    """Round (averaged) ratings to the nearest scale point (ties go up: 3.5 -> 4, 2.5 -> 3).

    The tolerance keeps a half computed in floating point (a mean of 3.4999999999999996) a half.
    """
    labels_arr = np.asarray(sorted(labels), dtype=float)
    array = np.asarray(values, dtype=float)
    distance = np.abs(array[:, None] - labels_arr[None, :])
    nearest = distance <= distance.min(axis=1, keepdims=True) + 1e-9
    # of the nearest points (two at a tie), the highest
    index: npt.NDArray[np.intp] = len(labels_arr) - 1 - np.argmax(nearest[:, ::-1], axis=1)
    return labels_arr[index]

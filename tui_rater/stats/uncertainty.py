"""How unsure the judge is about each item, to show a person the items where their rating changes
the answer most (``annotate --order uncertain``).

- With the judge's distribution over the answers (its next-token probabilities): the Shannon
  entropy, divided by log K for K possible answers, so 0 = all mass on one answer, 1 = uniform.
- Otherwise, from its samples (Chiang & Lee sample the judge several times per question): on a
  nominal scale the entropy of the sampled answers (same normalisation); on ordered scales their
  standard deviation over the largest possible one, half the scale's range -- samples 1 and 5 on
  a 1-5 scale disagree more than 2 and 4, which entropy would not see.

Items with neither get ``score=None`` and go last. Both scores lie in [0, 1] but are different
quantities; within one attribute the judge is normally run the same way for every item.

Beware: items chosen by uncertainty are not a random subset, so prediction-powered estimates
(``ppi.py``) computed from them are biased; see docs/VERDICT.md.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class ItemUncertainty:
    score: float | None  # 0 = sure, 1 = as unsure as possible
    source: str = ""  # "entropy" or "samples"
    note: str = ""


def _normalised_entropy(probabilities: np.ndarray, answers: int) -> float:
    p = probabilities[probabilities > 0]
    return float(-(p * np.log(p)).sum() / math.log(answers))


def distribution_uncertainty(distribution: Mapping[float, float], answers: int | None = None) -> ItemUncertainty:
    """Normalised entropy of the judge's probabilities over its answers. ``answers``: K, the size
    of the answer space (the scale's points); default: the answers present in ``distribution``.
    Probabilities that do not sum to 1 (only the top tokens were returned) are renormalised."""
    values = np.array([p for p in distribution.values() if p is not None and math.isfinite(p)], dtype=float)
    k = answers if answers is not None else len(values)
    if k < 2:
        return ItemUncertainty(None, "entropy", "needs at least two possible answers")
    if values.size == 0 or np.any(values < 0) or values.sum() <= 0:
        return ItemUncertainty(None, "entropy", "no probability mass on the answers")
    mass = float(values.sum())
    note = f"renormalised from {mass:.3f} of the probability mass" if abs(mass - 1) > 1e-6 else ""
    return ItemUncertainty(_normalised_entropy(values / mass, k), "entropy", note)


def sample_uncertainty(
    samples: Sequence[float],
    *,
    level: str,
    points: Sequence[float] | None = None,
    low: float | None = None,
    high: float | None = None,
) -> ItemUncertainty:
    """Disagreement between the judge's samples of one item, in [0, 1] (see the module docstring).
    ``points``: the scale's answers (K for nominal, the range for ordered scales); ``low``/``high``
    give the range of a continuous scale."""
    x = np.array([s for s in samples if s is not None and math.isfinite(s)], dtype=float)
    if x.size < 2:
        return ItemUncertainty(None, "samples", "needs at least two samples")
    if level == "nominal":
        k = len(points) if points else len(np.unique(x))
        if k < 2:
            return ItemUncertainty(0.0, "samples")
        _, counts = np.unique(x, return_counts=True)
        return ItemUncertainty(_normalised_entropy(counts / x.size, k), "samples")
    low = min(points) if low is None and points else low
    high = max(points) if high is None and points else high
    if low is None or high is None or high <= low:
        return ItemUncertainty(None, "samples", "needs the scale's range")
    # the largest possible standard deviation on [low, high] is (high - low) / 2 (half at each end)
    return ItemUncertainty(float(np.std(x) / ((high - low) / 2)), "samples")


def item_uncertainty(
    *,
    level: str,
    distribution: Mapping[float, float] | None = None,
    samples: Sequence[float] = (),
    points: Sequence[float] | None = None,
    low: float | None = None,
    high: float | None = None,
) -> ItemUncertainty:
    """The entropy of the distribution when there is one, else the disagreement of the samples."""
    if distribution:
        result = distribution_uncertainty(distribution, len(points) if points else None)
        if result.score is not None:
            return result
    if len(samples) >= 2:
        return sample_uncertainty(samples, level=level, points=points, low=low, high=high)
    return ItemUncertainty(None, "", "no distribution and fewer than two samples from the judge")


def order_by_uncertainty(scores: Mapping[Hashable, ItemUncertainty]) -> list[Hashable]:
    """Items, the most uncertain first; ties keep the given order; items without a score last."""
    known = [item for item, u in scores.items() if u.score is not None]
    unknown = [item for item, u in scores.items() if u.score is None]
    known.sort(key=lambda item: -(scores[item].score or 0.0))  # stable: ties keep their order
    return known + unknown

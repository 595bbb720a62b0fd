"""Scores from a judge's next-token distribution, and grammars that force a valid score.

`distribution` mode (one forward pass to the answer position) reads the probabilities of
the scale's tokens, keeps the whole distribution and its expected score, and draws the N
samples the paper gets from N generations -- with the same temperature and nucleus top-p.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from tui_rater.domain.tasks import Scale


def option_labels(scale: Scale) -> list[str]:
    """The strings a judge writes for each point: "1".."5", or "A", "B", "C"."""
    if scale.kind == "choice":
        return [c.key for c in scale.choices]
    if scale.kind == "likert":
        return [str(int(v)) for v in scale.points]
    raise ValueError("only discrete scales have a next-token distribution")


def gbnf_for(scale: Scale) -> str:
    """A GBNF grammar whose only sentences are the scale's valid answers."""
    if scale.kind in ("choice", "likert"):
        return "root ::= " + " | ".join(f'"{label}"' for label in option_labels(scale))
    low, high = int(scale.low), int(scale.high)
    if (low, high) == (0, 100):
        return 'root ::= "100" | [1-9] [0-9] | [0-9]'
    return "root ::= " + " | ".join(f'"{v}"' for v in range(low, high + 1))


def json_schema_for(scale: Scale) -> dict:
    if scale.kind == "choice":
        answer = {"type": "string", "enum": option_labels(scale)}
    elif scale.kind == "likert":
        answer = {"type": "integer", "enum": [int(v) for v in scale.points]}
    else:
        answer = {"type": "integer", "minimum": int(scale.low), "maximum": int(scale.high)}
    return {"type": "object", "properties": {"score": answer}, "required": ["score"], "additionalProperties": False}


@dataclass(frozen=True)
class DistributionScore:
    probabilities: dict[str, float]  # over the scale's options, renormalised
    mass: float  # how much of the next-token probability fell on the options at all
    expected: float
    samples: list[float]


def score_distribution(
    raw: dict[str, float], scale: Scale, *, n_samples: int, temperature: float, top_p: float, seed: int
) -> DistributionScore:
    labels = option_labels(scale)
    values = np.array(scale.points, dtype=float)
    p = np.array([max(raw.get(label, 0.0), 0.0) for label in labels], dtype=float)
    mass = float(p.sum())
    if mass <= 0 or not math.isfinite(mass):
        raise ValueError("no probability on any of the scale's tokens")
    p = p / mass
    expected = float((p * values).sum())
    rng = np.random.default_rng(seed)
    q = _tempered(p, temperature, top_p)
    samples = [float(values[i]) for i in rng.choice(len(values), size=n_samples, p=q)]
    return DistributionScore(dict(zip(labels, map(float, p))), mass, expected, samples)


def _tempered(p: np.ndarray, temperature: float, top_p: float) -> np.ndarray:
    if temperature <= 0:  # greedy, as llama.cpp and the API treat T = 0
        q = np.zeros_like(p)
        q[int(np.argmax(p))] = 1.0
        return q
    with np.errstate(divide="ignore"):
        logits = np.where(p > 0, np.log(p), -np.inf) / temperature
    q = np.exp(logits - logits[np.isfinite(logits)].max())
    q /= q.sum()
    if top_p < 1.0:
        order = np.argsort(-q, kind="stable")
        keep = np.zeros_like(q, dtype=bool)
        cumulative = 0.0
        for i in order:  # smallest set whose mass reaches top_p (nucleus sampling)
            keep[i] = True
            cumulative += q[i]
            if cumulative >= top_p:
                break
        q = np.where(keep, q, 0.0)
        q /= q.sum()
    return q

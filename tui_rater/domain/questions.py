"""Questions and scales: the data every protocol asks about (no behaviour of the papers here).

A task is what one person sees: instructions, the item fields it shows, and the questions
(attributes) asked about each item, each on a scale and read by an evaluation protocol
(``domain/protocols``). The built-in tasks of the papers are in ``tasks.py``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from tui_rater.domain.errors import UserError

SCALE_KINDS = ("likert", "continuous", "probability", "choice")


@dataclass(frozen=True)
class Choice:
    key: str  # what the rater types, e.g. "A"
    label: str  # what the option says


@dataclass(frozen=True)
class Scale:
    """A rating scale. Choices are stored as their 0-based index (A=0, B=1, tie=2)."""

    kind: str = "likert"
    low: float = 1
    high: float = 5
    labels: dict[int, str] = field(default_factory=dict)  # end (or every) point labels
    choices: tuple[Choice, ...] = ()
    # Likert steps: the paper keeps x.5 replies from LLMs (App. D.2.1), so half points are
    # valid values; humans type whole numbers.
    step: float = 1.0

    @property
    def points(self) -> list[float]:
        """Every whole value of a discrete scale (Likert or choice); empty for 0-100 scales."""
        if self.kind == "choice":
            return [float(i) for i in range(len(self.choices))]
        if self.kind == "likert":
            return [float(v) for v in range(int(self.low), int(self.high) + 1)]
        return []

    def contains(self, value: float) -> bool:
        if value is None or isinstance(value, bool) or not math.isfinite(value):
            return False
        if self.kind == "choice":
            return float(value).is_integer() and 0 <= value < len(self.choices)
        return self.low <= value <= self.high

    def describe(self) -> str:
        if self.kind == "choice":
            return " / ".join(c.key for c in self.choices)
        low, high = _fmt(self.low), _fmt(self.high)
        ends = ""
        if self.labels:
            lo = self.labels.get(int(self.low))
            hi = self.labels.get(int(self.high))
            if lo and hi:
                ends = f" ({low} = {lo}, {high} = {hi})"
        return f"{self.kind} {low}-{high}{ends}"


def _fmt(v: float) -> str:
    return str(int(v)) if float(v).is_integer() else str(v)


@dataclass(frozen=True)
class Attribute:
    name: str
    question: str  # shown to the human, verbatim from the paper
    scale: Scale
    # item fields shown to the human only while this question is focused, e.g. the
    # PROMPT for relevance ("Now read the PROMPT ..." in Chiang & Lee App. D.2.2)
    shows: tuple[str, ...] = ()
    # the LLM prompt; None -> built generically from instructions + fields + question
    template: str | None = None
    # the evaluation protocol that asks and reads this question (domain/protocols); "" = the
    # default for the scale's kind
    protocol: str = ""
    # the protocol's parameters, e.g. the two fields a pairwise comparison swaps, or SPA's writers
    params: dict[str, str] = field(default_factory=dict)
    # a sentence shown to the human before the fields in ``shows`` (the paper's form)
    intro: str = ""


@dataclass(frozen=True)
class Task:
    name: str
    title: str
    instructions: str
    fields: tuple[str, ...]  # item columns the task needs
    display_fields: tuple[str, ...]  # shown for every question
    attributes: tuple[Attribute, ...]
    source: str = ""
    builtin: bool = True
    # how each field is labelled for the human ("Story fragment:"); default: the field's name
    field_labels: dict[str, str] = field(default_factory=dict)
    # (original, changed): show the changed field with the words it changed in bold (Figure 5)
    changed_words: tuple[str, str] | None = None
    # the TOML table a custom task came from, stored in the study file so it travels with it
    definition: dict[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)

    def attribute(self, name: str) -> Attribute:
        for attribute in self.attributes:
            if attribute.name == name:
                return attribute
        known = ", ".join(a.name for a in self.attributes)
        raise UserError(f"task {self.name!r} has no attribute {name!r} (it has: {known})")

    @property
    def attribute_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.attributes)

"""What the user chooses for a report, as one typed value given once (``ReportSettings``): SPA's annotator
filter (``SpaSettings``), the verdict sections' ε and sampling (``VerdictSettings``), and what the humans'
score of an item is (``reference``).

What the user chooses for the verdict sections (``verdict``, ``ppi``, ``convergence``): the alt-test's ε,
and how the human-rated items were drawn.

ε is the alternative annotator test's cost-benefit margin (Calderon, Reichart & Dror 2025, §3 and the
authors' FAQ): the cheaper judge may be up to ε worse than a human and still replace one. The paper's rule
of thumb depends on who the humans are: 0.2 for experts, 0.15 for skilled raters, 0.1 for crowd workers.
A study does not record who its raters are, so the user says it (``report --raters``) or gives ε itself
(``report --epsilon``); every verdict record names the ε it used and where it came from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

from tui_rater.stats.alternative_annotator import EPSILON_CROWD, EPSILON_EXPERT, EPSILON_SKILLED
from tui_rater.stats.neyman import StratifiedDesign
from tui_rater.stats.rater_fit import MODEL_REFERENCE
from tui_rater.stats.records import HUMANS
from tui_rater.store.adjudication import ADJUDICATED

EPSILON_FOR_RATERS = {"expert": EPSILON_EXPERT, "skilled": EPSILON_SKILLED, "crowd": EPSILON_CROWD}
DEFAULT_RATERS = "expert"
FDR = 0.05  # Benjamini-Yekutieli's false discovery rate q (the paper's α)


@dataclass(frozen=True)
class VerdictSettings:
    """``epsilon``: ε given by the user (None: the paper's value for ``raters``).

    ``inclusion``: attribute -> item key -> the probability π with which the item was drawn for human
    rating (active sampling, Zrnic & Candès 2024; ``stats/active.py``). Given, system scores weight each
    human rating by 1/π; absent, the human-rated items are assumed to be a uniform random subset, and the
    records say so. Whoever draws the items (``annotate --order uncertain``) fills it.

    ``design``: the stored stratified draw (``assign --allocate``); given, each question's π comes from it (n_h / N_h
    in the item's stratum, ``neyman.StratifiedDesign``) and the mean over all items is the stratified estimate.
    """

    epsilon: float | None = None
    raters: str = DEFAULT_RATERS
    inclusion: Mapping[str, Mapping[int, float]] | None = None
    design: StratifiedDesign | None = None

    def __post_init__(self) -> None:
        if self.raters not in EPSILON_FOR_RATERS:
            raise ValueError(f"unknown kind of raters {self.raters!r}")
        if self.epsilon is not None and not (math.isfinite(self.epsilon) and 0 <= self.epsilon < 1):
            raise ValueError(f"ε must be in [0, 1), not {self.epsilon!r}")

    @property
    def eps(self) -> float:
        return EPSILON_FOR_RATERS[self.raters] if self.epsilon is None else self.epsilon

    @property
    def epsilon_source(self) -> str:
        """Which ε, and why: said beside every verdict."""
        if self.epsilon is not None:
            return f"ε = {self.epsilon:g} (--epsilon)"
        return f"ε = {self.eps:g} (the paper's value for {self.raters} raters; --raters or --epsilon to change)"


@dataclass(frozen=True)
class SpaSettings:
    """SPA's filter (Ethayarajh & Jurafsky 2022, §5.2 step 3): an annotator whose P[X>Y] + P[Y>X] exceeds
    ``tau`` on a comparison is left out (the paper's τ = 1.1); None keeps every annotator."""

    tau: float | None = 1.1

    def __post_init__(self) -> None:
        if self.tau is not None and not (math.isfinite(self.tau) and self.tau >= 0):
            raise ValueError(f"SPA's τ must be a number of at least 0, not {self.tau!r}")


# what the humans' per-item score is (``report --reference``): their ratings combined, the adjudicated value, or the
# consensus the reliability model of the people implies (``stats/rater_fit.py``)
REFERENCES = (HUMANS, ADJUDICATED, MODEL_REFERENCE)


@dataclass(frozen=True)
class ReportSettings:
    """Everything a user sets for a report, given to it once: each section reads its own part."""

    spa: SpaSettings = field(default_factory=SpaSettings)
    verdict: VerdictSettings = field(default_factory=VerdictSettings)
    reference: str = HUMANS
    # annotators the lead leaves out (``report --exclude-annotator``, e.g. one `progress` marked careless): none of
    # their ratings is read, so no table, verdict or system score has them; the report files say so
    excluded_annotators: tuple[str, ...] = ()
    # judge -> the systems made by its own model family (``report --family JUDGE=SYS,SYS``): the bias card's
    # self-preference compares the judge's leniency on them with that on the others (``stats/bias.py``)
    families: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def family(self, judge: str) -> tuple[str, ...]:
        """The systems the user says share the judge's model family (none declared: empty)."""
        return next((systems for name, systems in self.families if name == judge), ())

    def __post_init__(self) -> None:
        if self.reference not in REFERENCES:
            raise ValueError(f"unknown reference {self.reference!r}")

"""What the app's agreement pane shows (data, no text): the figures of each question and judge, computed by
``live.py`` (the full computation, in the pane's worker process) and by the running sums (``live_sums.py``, in the
app), merged by ``live_sums.merge`` and drawn by ``ui/agreement.py``.

Here, apart from the computations, with numpy only at run time: the app's running sums make and the screen reads these,
and importing ``live.py`` for them imported scipy, polars and the report's sections into the app before its first
numbers (issue 35 item 1). The readings and the anytime verdict are named for the type checker only.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from tui_rater.domain.protocols import Level
from tui_rater.stats.stat import Stat

if TYPE_CHECKING:  # (their modules import polars and scipy: never at run time in the app)
    from tui_rater.stats.sections.readings import JudgeReadings
    from tui_rater.stats.sequential import AnytimeVerdict

NONE = Stat(None, 0, "no ratings of the same items")


@dataclass(frozen=True)
class ShownReadings:
    """What the pane shows of a judge's readings (``JudgeReadings``): the full computation's answer carries this
    copy to the app, whose unpickling of ``JudgeReadings`` imported its module, the report's sections and polars."""

    mass_mean: float | None
    ready: bool
    reason: str


@dataclass(frozen=True)
class ShownAnytime:
    """What the pane shows of the anytime alt-test (``AnytimeVerdict``, whose module imports scipy)."""

    winning_rate: float | None
    passed: bool | None


def shown(data: PaneData) -> PaneData:
    """``data`` with each judge's readings and anytime verdict as the copies above, the rest as it is: the same
    text drawn (the pane reads these fields only), and nothing in it whose class imports the statistics stack."""
    for pane in data.attributes:
        for row in pane.rows:
            readings = row.readings
            if readings is not None:
                row.readings = ShownReadings(readings.mass_mean, readings.ready, readings.reason)
            anytime = row.verdict.anytime if row.verdict is not None else None
            if row.verdict is not None and anytime is not None:
                row.verdict.anytime = ShownAnytime(anytime.winning_rate, anytime.passed)
    return data


@dataclass
class Verdict:
    """The alt-test of one judge on one question: ω, ρ and the verdict, or why there is none."""

    epsilon: float
    winning_rate: float | None = None
    advantage_probability: float | None = None
    passed: bool | None = None
    humans: int = 0  # humans tested
    note: str = ""
    anytime: AnytimeVerdict | ShownAnytime | None = None  # the verdict valid at every look (the one the pane words)


@dataclass
class WatchedMean:
    """One judge and system's mean human rating, valid at every look: (low, high) of the 95 % confidence
    sequences after ``rated`` human-rated items, or why there are none."""

    judge: str
    system: str
    rated: int = 0
    ppi: tuple[float, float] | None = None
    humans: tuple[float, float] | None = None
    note: str = ""


@dataclass
class JudgeRow:
    judge: str
    alpha: Stat  # interval for scores, nominal for nominal answers
    tau: Stat | None  # scores only
    exact: Stat
    bias: Stat | None  # scores only
    kappa: Stat | None = None  # nominal only: Cohen's unweighted κ
    shares: dict[str, float] = field(default_factory=dict)  # nominal only: the judge's verdict shares
    readings: JudgeReadings | ShownReadings | None = None  # None: the judge has no stored readings of this question
    verdict: Verdict | None = None  # None: the judge has no value of this question to test

    @property
    def n(self) -> int:
        return self.exact.n

    @property
    def ready(self) -> bool:
        return self.readings is None or self.readings.ready


@dataclass
class Gap:
    item_key: int
    item_id: str
    human: float
    llm: float
    human_label: str = ""  # how the protocol shows the value (a choice's key)
    llm_label: str = ""

    @property
    def size(self) -> float:
        if self.human_label or self.llm_label:  # nominal: a disagreement, not a distance
            return float(self.human_label != self.llm_label)
        return abs(self.llm - self.human)


@dataclass
class AttributePane:
    attribute: str
    labels: list[float]
    level: str = Level.INTERVAL.value
    label_names: list[str] = field(default_factory=list)  # how each label is shown (a choice's key)
    rows: list[JudgeRow] = field(default_factory=list)
    confusion: np.ndarray | None = None  # humans (rows) x first judge (columns)
    confusion_judge: str | None = None
    distributions: dict[str, list[int]] = field(default_factory=dict)  # evaluator -> count per label
    gaps: list[Gap] = field(default_factory=list)
    humans: bool = True  # are there human ratings to compare with?
    watched: list[WatchedMean] = field(default_factory=list)  # scored questions: the anytime system means

    @property
    def nominal(self) -> bool:
        return self.level == Level.NOMINAL.value


@dataclass
class PaneData:
    task: str
    n_ratings: int
    attributes: list[AttributePane]
    queue: dict[str, int]
    failures: list[dict[str, Any]]
    stale: bool = False  # the figures that are not sums are an earlier look's (``live_sums.merge``), being recomputed

"""When a judge is **agreement-ready** on a question: the one rule, stated here.

A judge's numbers describe answers to a question only when

- at most ``READY_MAX_FAILURE_SHARE`` (10 %) of its readings are typed failures, and at least one is read (the
  values left are otherwise a selection, not a sample);
- at most ``READY_MAX_LOW_MASS_SHARE`` (10 %) of its passes put less than ``READY_MIN_MASS`` (half) of the
  next-token probability on the answers it was asked for: the scale's options (distribution mode; constrained
  mode *before* its grammar forced a valid reply) or "yes" / "no" (Chen et al.'s implicit score) -- whatever
  ``--min-mass`` the run had. A model without a fitting chat template put 0.0002-0.04 % there and every pass was
  stored as ``ok``; a grammar makes any reply valid, so a constrained reply alone says nothing.

Everything that says whether a judge is ready applies this rule and words it with ``Readiness.said``:
``judge --check`` (domain/preflight.py) to the questions it checks -- a reply mode's failures as they would be
after ``--max-retries`` regenerations --, a finished run's summary and advice (service/judging.py) to what the
judge stored, and the report (stats/sections/readings.py) to the readings in force, which marks every number and
verdict of a judge that is not ready.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

READY_MAX_FAILURE_SHARE = 0.10
READY_MIN_MASS = 0.5
READY_MAX_LOW_MASS_SHARE = 0.10
AGREEMENT_READY = "agreement-ready"
NOT_READY = "not agreement-ready"
ON_SCALE = "on the scale"  # where a distribution or constrained pass's probability is read
ON_YES_NO = "on yes / no"  # where the implicit score's is (a lower bound: only the top tokens are known)
BEFORE_CONSTRAINT = "on the allowed answers before the constraint"  # a constrained reply's, before its grammar
# where a stored reading's probability is, by the store's name for it (store/readings.py)
WHERE = {"scale": ON_SCALE, "constrained": BEFORE_CONSTRAINT, "yes_no": ON_YES_NO}


@dataclass(frozen=True)
class Evidence:
    """What a judge gave on a question, or what the check read of a few of its questions.

    ``readings``: how many readings (the check: checked questions or replies); ``failures``: typed failure ->
    count among them; ``retries``: the check of a reply mode, where a reply that does not read is regenerated up
    to this many times, so (failed share) ** (retries + 1) of the readings would stay failures; ``passes`` and
    ``low_mass``: passes with a known probability on the answers, and those below READY_MIN_MASS of it."""

    readings: int
    failures: Mapping[str, int] = field(default_factory=dict)
    passes: int = 0
    low_mass: int = 0
    mass_mean: float | None = None
    where: str = ON_SCALE
    unit: str = "readings"  # what ``readings`` counts, as said: "readings", "checked replies"
    pass_unit: str = "passes"  # what ``passes`` counts, as said: "passes", "checked questions"
    retries: int | None = None

    @property
    def failed(self) -> int:
        return sum(self.failures.values())

    @property
    def failure_share(self) -> float:
        """The share of readings that are (or, after the regenerations, would stay) typed failures."""
        if not self.readings:
            return 0.0
        share = self.failed / self.readings
        return share ** (self.retries + 1) if self.retries is not None else share


@dataclass(frozen=True)
class Readiness:
    ready: bool
    reason: str  # why not ('' when ready): one clause per broken condition, joined by "; "
    low_mass: bool = False  # the probability on the answers is what fails (another mode reading it fails too)
    failures: bool = False  # the typed failures are what fails

    @property
    def said(self) -> str:
        """How every place says it: ``agreement-ready`` or ``not agreement-ready: <why>``."""
        return AGREEMENT_READY if self.ready else f"{NOT_READY}: {self.reason}"


def readiness(evidence: Evidence) -> Readiness:
    """The rule (the module's docstring), and why not in words shared by the check, the run and the report."""
    e = evidence
    reasons = []
    failing = e.readings > 0 and (e.failed >= e.readings or e.failure_share > READY_MAX_FAILURE_SHARE)
    if e.readings == 0:
        reasons.append(f"there are no {e.unit}")
    elif e.failed >= e.readings:
        reasons.append(f"none of its {e.readings} {e.unit} could be read" + _kinds(e.failures))
    elif failing:
        said = f"{e.failed} of {e.readings} {e.unit} are typed failures" + _kinds(e.failures)
        if e.retries is not None:
            said += f": with --max-retries {e.retries}, about {e.failure_share:.0%} of readings would be"
        reasons.append(f"{said} (at most {READY_MAX_FAILURE_SHARE:.0%} may be)")
    low = e.passes > 0 and e.low_mass > READY_MAX_LOW_MASS_SHARE * e.passes
    if low:
        mean = f" (mean {e.mass_mean:.2g})" if e.mass_mean is not None else ""
        reasons.append(
            f"{e.low_mass} of {e.passes} {e.pass_unit} put less than {READY_MIN_MASS:g} of the next-token probability "
            f"{e.where}{mean}"
        )
    return Readiness(not reasons, "; ".join(reasons), low_mass=low, failures=failing or e.readings == 0)


def _kinds(failures: Mapping[str, int]) -> str:
    kinds = ", ".join(f"{kind} {n}" for kind, n in sorted(failures.items(), key=lambda kv: (-kv[1], kv[0])) if n)
    return f" ({kinds})" if kinds else ""

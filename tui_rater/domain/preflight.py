"""What ``judge --check`` reads for a mode and how it words that mode's verdict.

Each mode (domain/modes.py) carries a ``ModePreflight``: the probes the pre-flight runs for it on a local model and on
a server, and its verdict over the checked questions. ``service/preflight.py`` runs the probes over a backend (the
domain imports no model) and asks the mode for its verdict, so a new mode brings its own check in its own module.

Every verdict is the one agreement-ready rule (domain/readiness.py) applied to what the check read of the
first items' questions: the report and a finished run apply it to what the judge stored, in the same words.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from statistics import fmean, median

from tui_rater.domain.readiness import (
    ON_SCALE,
    ON_YES_NO,
    READY_MIN_MASS,
    Evidence,
    readiness,
)
from tui_rater.domain.readiness import (
    READY_MAX_FAILURE_SHARE as READY_MAX_FAILURE_SHARE,  # the threshold, for modes of other modules
)


class Probe(Enum):
    """One thing the pre-flight can read of a model for one question."""

    # the options' token paths and the probability that the reply begins on the scale: what distribution mode stores
    SCALE = "scale"
    # the top tokens after the mode's own yes / no question (Chen et al.'s implicit score)
    YES_NO = "yes_no"
    # one reply with the run's decoding and length limit, read by the protocol as the run reads it
    REPLY = "reply"
    # one reply of one token with the run's constraint: the server is there, has the model and takes the constraint
    ANSWERED = "answered"


@dataclass(frozen=True)
class PromptCheck:
    """One question of one item, as the judge would ask it."""

    task: str
    item: str
    attribute: str
    presentation: str
    prompt: str  # what the model reads: the template applied (local), else the message text (API)
    tokens: int | None  # None: counted by the server, not here
    bos: int | None  # BOS tokens at the start of the prompt (None: an API model)
    option_tokens: dict[str, list[str]] = field(default_factory=dict)  # scale label -> the token paths that spell it
    missing_options: tuple[str, ...] = ()  # labels the model has no token path for
    mass: float | None = None  # probability that the reply begins with one of the scale's labels
    mass_is_lower_bound: bool = False  # an API that listed only its top tokens: the mass is at least this
    top: list[tuple[str, float]] = field(default_factory=list)  # the most probable next tokens
    error: str | None = None  # the backend could not answer this check (one sentence)
    reply: str | None = None  # text mode: the reply the run would get, as the run asks (a local model)
    reply_status: str | None = None  # ... and how the protocol reads it ("ok" or a typed failure)
    finish_reason: str | None = None  # ... and why it stopped ("stop", "length")
    implicit_mass: float | None = None  # implicit mode: p(yes) + p(no) among the top tokens of its own question


@dataclass(frozen=True)
class ModeCheck:
    """Whether one mode would give readings, and why (one sentence)."""

    mode: str
    ready: bool
    reason: str
    mass: float | None = None  # the median checked question's scale mass
    read_share: float | None = None  # text: the share of checked replies that read


@dataclass(frozen=True)
class Limits:
    """The run's settings a verdict weighs (from the judge's spec)."""

    min_mass: float
    max_retries: int
    server: bool  # an API model: only the mode asked is checked, with its one server probe


def mass_verdict(
    mode: str,
    masses: list[float],
    what: str,
    lower_bound: bool,
    limits: Limits,
    failures: dict[str, int] | None = None,
) -> ModeCheck:
    """The agreement-ready rule over the checked questions' probability ``what`` (e.g. "on the scale"): at most
    10 % of the questions may have less than half of the probability there, as in the report. ``failures``: the
    typed failures the run would store for these questions (default: a distribution pass below --min-mass)."""
    typical = median(masses)
    where = what + (" (a lower bound: only the top tokens are known)" if lower_bound else "")
    if failures is None:
        failures = {"low_mass": sum(m < limits.min_mass for m in masses)}
    evidence = Evidence(
        len(masses),
        {kind: n for kind, n in failures.items() if n},
        passes=len(masses),
        low_mass=sum(m < READY_MIN_MASS for m in masses),
        mass_mean=fmean(masses),
        where=where,
        unit="checked questions",
        pass_unit="checked questions",
    )
    found = readiness(evidence)
    if not found.ready:
        return ModeCheck(mode, False, found.reason, typical)
    return ModeCheck(mode, True, f"{typical:.2%} of the next-token probability (median) is {where}", typical)


class ModePreflight:
    """What the pre-flight reads for one mode, and its verdict (the questions were checked and nothing blocked)."""

    local: frozenset[Probe]  # read on a local model (every applicable mode is checked there)
    server: Probe  # read on a server (only the mode asked)
    # where the probability that decides this mode's readiness is (ON_SCALE, ON_YES_NO; None: its replies decide):
    # modes reading the same probability are ready or not together, so a run's advice never names the other
    reads_mass: str | None = None
    # a run's readings that do not read are regenerated (--max-retries helps)
    regenerates: bool = False

    def verdict(self, mode: str, checks: Sequence[PromptCheck], limits: Limits) -> ModeCheck:
        raise NotImplementedError

    def server_verdict(self, mode: str, checks: Sequence[PromptCheck], limits: Limits, what: str) -> ModeCheck:
        """A server: the mass when its probe read one, else that it answered the judge's questions."""
        masses = [c.mass for c in checks if c.mass is not None]
        if masses:
            return mass_verdict(mode, masses, what, any(c.mass_is_lower_bound for c in checks), limits)
        return ModeCheck(mode, True, "the server answers the judge's questions")


class RepliesRead(ModePreflight):
    """A reply mode (Chiang & Lee): the rule's typed failures as they would be after the run's regenerations (a
    reply that does not read is asked again up to --max-retries times): (1 - read share) ** (retries + 1)."""

    # the scale's numbers are shown with the reply (what a distribution run would read of the same prompt)
    local = frozenset({Probe.SCALE, Probe.REPLY})
    server = Probe.REPLY
    regenerates = True

    def verdict(self, mode: str, checks: Sequence[PromptCheck], limits: Limits) -> ModeCheck:
        statuses = [c.reply_status for c in checks if c.reply_status is not None]
        read = sum(s == "ok" for s in statuses) / len(statuses)
        failures = Counter(s for s in statuses if s != "ok")
        found = readiness(Evidence(len(statuses), dict(failures), unit="checked replies", retries=limits.max_retries))
        said = f"{read:.0%} of {len(statuses)} checked replies read"
        return ModeCheck(mode, found.ready, said if found.ready else found.reason, read_share=read)


@dataclass(frozen=True)
class ScaleMass(ModePreflight):
    """A mode read from (or held to) the scale's options: every option needs a token path, and the rule's
    probability is the scale's at the answer position. ``what`` words where the mass is; ``below_min_fails``: a
    pass below --min-mass is a typed failure (distribution; a constrained reply is held to the scale whatever)."""

    what: str = ON_SCALE
    server: Probe = Probe.SCALE
    local: frozenset[Probe] = frozenset({Probe.SCALE})
    reads_mass: str | None = ON_SCALE
    below_min_fails: bool = True

    def verdict(self, mode: str, checks: Sequence[PromptCheck], limits: Limits) -> ModeCheck:
        if limits.server:
            # a server's mass is "on the scale" whatever the mode makes of it (a constrained mode reads none there)
            return self.server_verdict(mode, checks, limits, ON_SCALE)
        missing = sorted({label for c in checks for label in c.missing_options})
        if missing:
            return ModeCheck(mode, False, f"the model has no token path for {', '.join(map(repr, missing))}")
        masses = [c.mass for c in checks if c.mass is not None]
        if not masses:
            return ModeCheck(mode, False, "the scale mass could not be read")
        return mass_verdict(mode, masses, self.what, False, limits, None if self.below_min_fails else {})


class YesNoMass(ModePreflight):
    """Chen et al.'s implicit score: the rule's probability is "yes" / "no" among the top tokens of its own
    question (a lower bound: only the top tokens are known); neither among them is a typed failure."""

    local = frozenset({Probe.YES_NO})
    server = Probe.YES_NO
    reads_mass = ON_YES_NO

    def verdict(self, mode: str, checks: Sequence[PromptCheck], limits: Limits) -> ModeCheck:
        if limits.server:
            return self.server_verdict(mode, checks, limits, ON_YES_NO)
        masses = [c.implicit_mass for c in checks if c.implicit_mass is not None]
        # neither token among the top ones: the run stores no_answer_token
        return mass_verdict(mode, masses, ON_YES_NO, True, limits, {"no_answer_token": sum(m == 0 for m in masses)})

"""What ``judge --check`` reads for a mode and how it words that mode's verdict.

Each mode (domain/modes.py) carries a ``ModePreflight``: the probes the pre-flight runs for it on a local model and on
a server, and its verdict over the checked questions. ``service/preflight.py`` runs the probes over a backend (the
domain imports no model) and asks the mode for its verdict, so a new mode brings its own check in its own module.

The verdicts apply the thresholds the report's "agreement-ready" flag applies to a finished run
(stats/sections/readings.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from enum import Enum
from statistics import median

# the report's agreement-ready rule (stats/sections/readings.py): at most this share of typed failures
READY_MAX_FAILURE_SHARE = 0.10
TOO_LITTLE_MASS = "the model puts too little probability on the scale's options"


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


def mass_verdict(mode: str, masses: list[float], what: str, lower_bound: bool, limits: Limits) -> ModeCheck:
    """Ready when the median checked question has at least --min-mass ``what`` (e.g. "on the scale")."""
    typical = median(masses)
    low = sum(m < limits.min_mass for m in masses)
    bound = " (a lower bound: only the top tokens are known)" if lower_bound else ""
    share = f"{typical:.2%} of the next-token probability (median) is {what}{bound}"
    if typical < limits.min_mass:
        return ModeCheck(mode, False, f"only {share} (below --min-mass {limits.min_mass:g})", typical)
    some = f"; {low} of {len(masses)} questions below --min-mass {limits.min_mass:g}" if low else ""
    return ModeCheck(mode, True, share + some, typical)


class ModePreflight:
    """What the pre-flight reads for one mode, and its verdict (the questions were checked and nothing blocked)."""

    local: frozenset[Probe]  # read on a local model (every applicable mode is checked there)
    server: Probe  # read on a server (only the mode asked)
    # why a finished run's readings were unusable, in this mode's terms (None: the setup failed, not the reading)
    unusable: str | None

    def verdict(self, mode: str, checks: Sequence[PromptCheck], limits: Limits) -> ModeCheck:
        raise NotImplementedError

    def server_verdict(self, mode: str, checks: Sequence[PromptCheck], limits: Limits, what: str) -> ModeCheck:
        """A server: the mass when its probe read one, else that it answered the judge's questions."""
        masses = [c.mass for c in checks if c.mass is not None]
        if masses:
            return mass_verdict(mode, masses, what, any(c.mass_is_lower_bound for c in checks), limits)
        return ModeCheck(mode, True, "the server answers the judge's questions")


class RepliesRead(ModePreflight):
    """A reply mode (Chiang & Lee): ready when the replies that fail to read, regenerated up to --max-retries
    times, would leave at most READY_MAX_FAILURE_SHARE typed failures: (1 - read share) ** (retries + 1)."""

    # the scale's numbers are shown with the reply (what a distribution run would read of the same prompt)
    local = frozenset({Probe.SCALE, Probe.REPLY})
    server = Probe.REPLY
    unusable = "the replies do not read as an answer on the scale"

    def verdict(self, mode: str, checks: Sequence[PromptCheck], limits: Limits) -> ModeCheck:
        statuses = [c.reply_status for c in checks if c.reply_status is not None]
        read = sum(s == "ok" for s in statuses) / len(statuses)
        left = (1 - read) ** (limits.max_retries + 1)
        failures = sorted({s for s in statuses if s != "ok"})
        said = f"{read:.0%} of {len(statuses)} checked replies read" + (
            f" (failures: {', '.join(failures)})" if failures else ""
        )
        if left > READY_MAX_FAILURE_SHARE:
            return ModeCheck(
                mode,
                False,
                f"only {said}: with --max-retries {limits.max_retries}, about {left:.0%} of readings would be typed "
                f"failures (more than {READY_MAX_FAILURE_SHARE:.0%})",
                read_share=read,
            )
        return ModeCheck(mode, True, said, read_share=read)


@dataclass(frozen=True)
class ScaleMass(ModePreflight):
    """A mode read from (or held to) the scale's options: ready when every option has a token path and the median
    question has at least --min-mass on them. ``what`` words where the mass is."""

    what: str = "on the scale"
    server: Probe = Probe.SCALE
    local: frozenset[Probe] = frozenset({Probe.SCALE})
    unusable: str | None = TOO_LITTLE_MASS

    def verdict(self, mode: str, checks: Sequence[PromptCheck], limits: Limits) -> ModeCheck:
        if limits.server:
            # a server's mass is "on the scale" whatever the mode makes of it (a constrained mode reads none there)
            return self.server_verdict(mode, checks, limits, "on the scale")
        missing = sorted({label for c in checks for label in c.missing_options})
        if missing:
            return ModeCheck(mode, False, f"the model has no token path for {', '.join(map(repr, missing))}")
        masses = [c.mass for c in checks if c.mass is not None]
        if not masses:
            return ModeCheck(mode, False, "the scale mass could not be read")
        return mass_verdict(mode, masses, self.what, False, limits)


class YesNoMass(ModePreflight):
    """Chen et al.'s implicit score: ready when "yes" / "no" are among the top tokens of its own question and the
    median question has at least --min-mass on them (a lower bound: only the top tokens are known)."""

    local = frozenset({Probe.YES_NO})
    server = Probe.YES_NO
    unusable = TOO_LITTLE_MASS

    def verdict(self, mode: str, checks: Sequence[PromptCheck], limits: Limits) -> ModeCheck:
        if limits.server:
            return self.server_verdict(mode, checks, limits, "on yes / no")
        masses = [c.implicit_mass for c in checks if c.implicit_mass is not None]
        return mass_verdict(mode, masses, "on yes / no", True, limits)

"""A judge's mode: what a model is asked for (a reply, a constrained reply, the options' next-token probabilities,
the top tokens after a yes/no question) and how what it gave reads as ratings.

Each mode is one object. The judge worker and ``reparse`` read an answer through the same method (``read``), so a
stored reply reads again exactly as it read when it came; the worker, planning and pre-flight ask the mode what it
is (one forward pass per question? a chat of questions? read at the answer's position?) instead of comparing its
name; what ``judge --check`` reads for a mode and how it words its verdict are the mode's too (``preflight``,
domain/preflight.py). ``Details`` names the keys of a rating's stored ``details`` that more than one module reads.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Protocol

from tui_rater.domain.decoding import Decoding
from tui_rater.domain.details import Details as Details  # the stored keys, re-exported: modes write them
from tui_rater.domain.errors import UserError
from tui_rater.domain.mode_names import MODE_NAMES
from tui_rater.domain.preflight import ModePreflight, Probe, RepliesRead, ScaleMass, YesNoMass
from tui_rater.domain.protocols.base import DistributionReading, EvaluationProtocol, Reading
from tui_rater.domain.protocols.guard import checked, checked_distribution, within_deadline
from tui_rater.domain.questions import Attribute
from tui_rater.domain.readiness import BEFORE_CONSTRAINT


@dataclass(frozen=True)
class ReplyFacts:
    """What a text reply's reading depends on besides its words: stored with it, read again by reparse."""

    finish_reason: str = "stop"
    structured: bool = False

    @classmethod
    def of_details(cls, details: Mapping[str, Any], text: str, constrained: bool) -> ReplyFacts:
        # 0.1 did not store "structured": a constrained reply that is JSON was one
        structured = details.get(Details.STRUCTURED, constrained and text.lstrip().startswith("{"))
        return cls(str(details.get(Details.FINISH_REASON, "stop")), bool(structured))


# a stored judge rating as ``Study.judgements`` reads it (raw, details as JSON text, presentation, sample, item_key)
Row = dict[str, Any]
# (the rating, what it reads as now, its details to store)
Reread = tuple[Row, Reading, dict[str, Any]]

# A greedy judge (T = 0) would regenerate the same reply: its regenerations sample (Chiang & Lee regenerated until
# a rating came)
RETRY_TEMPERATURE = 1.0


class Unsupported(Exception):
    """A question this mode cannot ask (the job fails with kind "unsupported")."""


class Asker(Protocol):
    """What a mode asks of a model (the judge worker: a backend, each answer cached in the study file)."""

    def reply(
        self, messages: list[dict[str, str]], decoding: Decoding, grammar: str | None, schema: dict[str, Any] | None
    ) -> dict[str, Any]:
        """{"text", "structured", "finish_reason"}."""
        ...

    def option_probabilities(self, messages: list[dict[str, str]], labels: list[str]) -> dict[str, Any]:
        """{"probabilities", and "unscored", "unscored_mass_at_most" when the server did not score them all}."""
        ...

    def top_tokens(self, messages: list[dict[str, str]], k: int) -> dict[str, Any]:
        """{"top": [(token, probability), ...]}."""
        ...

    def scale_mass(
        self, protocol: EvaluationProtocol, attribute: Attribute, messages: list[dict[str, str]]
    ) -> float | None:
        """The probability that an unconstrained reply begins on the scale (None: it cannot be read)."""
        ...


@dataclass(frozen=True)
class Question:
    """One question of one job, as a mode asks it."""

    protocol: EvaluationProtocol
    attribute: Attribute
    variant: str
    presentation: str
    sample: int
    messages: list[dict[str, str]]
    facts: dict[str, Any]  # the prompt's template id and hash, stored with each rating
    seed: Callable[..., int]  # the job's seed for (sample, attempt) or a name: derive_seed over the job's identity
    decoding: Decoding
    max_retries: int
    min_mass: float
    local: bool  # a local model (llama.cpp): its scale mass can be read before a grammar


@dataclass(frozen=True)
class Rated:
    """One rating as a mode read it: what the worker stores."""

    attribute: str
    sample: int
    value: float | None
    raw: str | None
    status: str
    details: dict[str, Any]


class Mode:
    name: ClassVar[str]
    per_pass: ClassVar[bool] = False  # one forward pass per question yields every sample
    in_conversation: ClassVar[bool] = True  # may be asked as a chat of the item's questions (--conversation)
    at_answer_position: ClassVar[bool] = False  # read from the next token's probabilities, not from a reply
    constrained: ClassVar[bool] = False  # the reply is held to the protocol's answers (grammar / JSON schema)
    own_protocol: ClassVar[str | None] = None  # the protocol that asks every question (its own), else the question's
    preflight: ClassVar[ModePreflight]  # what `judge --check` reads for this mode and its verdict (domain/preflight.py)

    @property
    def asked_as(self) -> str:
        """The built-in mode whose questions this one asks: a protocol that takes that mode takes this one."""
        return self.name

    def ask(self, asker: Asker, question: Question) -> tuple[list[Rated], str]:
        """Ask the model and read its answer: (the ratings, the reply text a conversation goes on with)."""
        raise NotImplementedError

    def reread(
        self,
        protocol: EvaluationProtocol,
        attribute: Attribute,
        variant: str,
        config: Mapping[str, Any],
        rows: list[Row],
    ) -> list[Reread]:
        """A question's stored ratings (one job) read again with ``read``, from what ``ask`` stored (reparse)."""
        raise NotImplementedError


class TextMode(Mode):
    """A free reply read by the protocol's parser (Chiang & Lee)."""

    name = "text"
    preflight: ClassVar[ModePreflight] = RepliesRead()

    def read(
        self,
        protocol: EvaluationProtocol,
        attribute: Attribute,
        variant: str,
        presentation: str,
        text: str,
        facts: ReplyFacts,
    ) -> Reading:
        reading = within_deadline(
            protocol,
            "reading a reply",
            lambda: protocol.read_reply(
                text,
                attribute,
                variant,
                presentation,
                structured=facts.structured,
                truncated=facts.finish_reason == "length",
                constrained=self.constrained,
            ),
        )
        return checked(protocol, attribute, reading)

    def ask(self, asker: Asker, question: Question) -> tuple[list[Rated], str]:
        """A free (or constrained) reply, read by the protocol; regenerated while it does not read.

        Chiang & Lee regenerated until a rating came. A regeneration must change something: each
        attempt has its own seed, and a greedy judge (T = 0) regenerates by sampling (T = 1, top-p).
        """
        q = question
        grammar = q.protocol.grammar(q.attribute, q.variant) if self.constrained else None
        schema = q.protocol.json_schema(q.attribute, q.variant) if self.constrained else None
        earlier: list[str] = []
        reading = Reading(None, "no_number")
        reply: dict[str, Any] = {"text": ""}
        details: dict[str, Any] = {}
        asked = q.decoding.temperature
        for attempt in range(q.max_retries + 1):
            temperature = asked if attempt == 0 or asked > 0 else RETRY_TEMPERATURE
            attempt_seed = q.seed(q.sample, attempt)
            reply = asker.reply(
                q.messages, replace(q.decoding, temperature=temperature, seed=attempt_seed), grammar, schema
            )
            facts = ReplyFacts(reply.get("finish_reason", "stop"), reply.get("structured", False))
            reading = self.read(q.protocol, q.attribute, q.variant, q.presentation, reply["text"], facts)
            details = {**q.facts, Details.SEED: attempt_seed, "attempts": attempt + 1}
            # what reparse needs to read the reply the same way again
            details[Details.FINISH_REASON] = facts.finish_reason
            if facts.structured:
                details[Details.STRUCTURED] = True
            if temperature != asked:
                details["temperature"] = temperature
            if reply.get("sampling_sent"):  # the server refused the paper's top_k / min_p: its own applied
                details["sampling_sent"] = reply["sampling_sent"]
            if reading.ok:
                break
            earlier.append(reply["text"])
        if self.constrained and q.local and (mass := asker.scale_mass(q.protocol, q.attribute, q.messages)) is not None:
            # what the model meant to answer before the grammar forced it
            details[Details.MASS] = mass
        if earlier and not reading.ok:
            details["earlier_replies"] = earlier[:-1]
        elif earlier:
            details["earlier_replies"] = earlier
        text = reply["text"]
        return [
            Rated(q.attribute.name, q.sample, reading.value, text, reading.status, {**details, **reading.details})
        ], text

    def reread(
        self,
        protocol: EvaluationProtocol,
        attribute: Attribute,
        variant: str,
        config: Mapping[str, Any],
        rows: list[Row],
    ) -> list[Reread]:
        out: list[Reread] = []
        for row in rows:
            if row["raw"] is None:
                continue
            details = json.loads(row["details"] or "{}")
            facts = ReplyFacts.of_details(details, row["raw"], self.constrained)
            reading = self.read(protocol, attribute, variant, row["presentation"], row["raw"], facts)
            out.append((row, reading, {**details, **reading.details}))
        return out


class ConstrainedMode(TextMode):
    """A reply forced to a valid answer (a GBNF grammar locally, a JSON schema or grammar on a server)."""

    name = "constrained"
    constrained = True
    # the grammar makes every reply valid: what says whether the model answers is its mass before the constraint,
    # the probability a distribution pass reads (the two modes are agreement-ready or not together)
    preflight: ClassVar[ModePreflight] = ScaleMass(BEFORE_CONSTRAINT, server=Probe.ANSWERED, below_min_fails=False)


class DistributionMode(Mode):
    """The options' next-token probabilities; the N samples are drawn from them (one pass per question)."""

    name = "distribution"
    per_pass = True
    in_conversation = False
    at_answer_position = True
    preflight: ClassVar[ModePreflight] = ScaleMass()

    def read(
        self,
        protocol: EvaluationProtocol,
        attribute: Attribute,
        variant: str,
        presentation: str,
        probabilities: Mapping[str, float],
        decoding: Decoding,
        min_mass: float,
        unscored: Sequence[str] = (),
        unscored_mass_at_most: float = 0.0,
    ) -> DistributionReading:
        reading = within_deadline(
            protocol,
            "reading a distribution",
            lambda: protocol.read_distribution(
                probabilities,
                attribute,
                variant,
                presentation,
                decoding=decoding,
                min_mass=min_mass,
                unscored=unscored,
                unscored_mass_at_most=unscored_mass_at_most,
            ),
        )
        return checked_distribution(protocol, attribute, reading)

    def ask(self, asker: Asker, question: Question) -> tuple[list[Rated], str]:
        """One forward pass; the protocol draws the N samples (samples 0..N-1) from the options' probabilities."""
        q = question
        options = q.protocol.options(q.attribute, q.variant)
        if options is None:
            raise UserError(
                f"--mode distribution needs discrete options; {q.attribute.name} has none (use --mode text)"
            )
        reply = asker.option_probabilities(q.messages, list(options.labels))
        reading = self.read(
            q.protocol,
            q.attribute,
            q.variant,
            q.presentation,
            reply["probabilities"],
            replace(q.decoding, seed=q.seed("distribution")),
            q.min_mass,
            reply.get("unscored", ()),
            reply.get("unscored_mass_at_most", 0.0),
        )
        # the pass's facts are kept once, with sample 0; reparse reads them from there
        return [
            Rated(
                q.attribute.name,
                s,
                sample.value,
                None,
                sample.status,
                {**q.facts, **reading.details, **sample.details} if s == 0 else dict(sample.details),
            )
            for s, sample in enumerate(reading.samples)
        ], ""

    def reread(
        self,
        protocol: EvaluationProtocol,
        attribute: Attribute,
        variant: str,
        config: Mapping[str, Any],
        rows: list[Row],
    ) -> list[Reread]:
        """Re-draw a pass's samples from the probabilities and seed stored with its sample 0."""
        first = next((row for row in rows if row["sample"] == 0), None)
        if first is None:
            return []
        stored = json.loads(first["details"] or "{}")
        raw = stored.get(Details.RAW)
        if raw is None and Details.DISTRIBUTION in stored and Details.MASS in stored:
            # 0.1 kept the renormalised distribution and its mass: the raw probabilities are their product
            raw = {label: p * stored[Details.MASS] for label, p in stored[Details.DISTRIBUTION].items()}
        seed = stored.get(Details.SEED)
        if seed is None and Details.DISTRIBUTION in stored:
            seed = config.get("seed", 0) + first["item_key"]  # 0.1 seeded a pass with --seed + the item's key
        if raw is None or seed is None:
            return []  # nothing stored to recompute from (never re-read an empty reply)
        reading = self.read(
            protocol,
            attribute,
            variant,
            first["presentation"],
            raw,
            replace(Decoding.of_record(config), samples=len(rows), seed=seed),
            config.get("min_mass", 0.5),
            stored.get(Details.UNSCORED, ()),
            stored.get(Details.UNSCORED_MASS_AT_MOST, 0.0),
        )
        out: list[Reread] = []
        for row in sorted(rows, key=lambda r: r["sample"]):
            sample = reading.samples[row["sample"]] if row["sample"] < len(reading.samples) else None
            if sample is None:
                continue
            details = json.loads(row["details"] or "{}")
            if row["sample"] == 0:
                details.update(reading.details)
            out.append((row, sample, {**details, **sample.details}))
        return out


class ImplicitMode(Mode):
    """Chen et al.'s Implicit Score: yes / no among the top tokens after its own question (one pass)."""

    name = "implicit"
    per_pass = True
    in_conversation = False
    at_answer_position = True
    own_protocol = "implicit"  # Chen et al. §2.1: the implicit score asks its own yes/no question
    preflight: ClassVar[ModePreflight] = YesNoMass()

    def top_k(self, protocol: EvaluationProtocol) -> int:
        """How many top tokens to ask for (Chen et al. read five)."""
        return int(getattr(protocol, "TOP_K", 5))

    def answer_mass(self, protocol: EvaluationProtocol, top: Sequence[tuple[str, float]]) -> float:
        """The top tokens' probability on yes / no, in any of the spellings Eq. 1 sums (a lower bound)."""
        answers = getattr(protocol, "YES", frozenset()) | getattr(protocol, "NO", frozenset())
        return sum(p for text, p in top if text.strip() in answers)

    def read(self, protocol: EvaluationProtocol, attribute: Attribute, top: Sequence[Sequence[Any]]) -> Reading:
        pairs = [(str(token), float(p)) for token, p in top]
        reading = within_deadline(protocol, "reading top tokens", lambda: protocol.read_top_tokens(pairs, attribute))
        return checked(protocol, attribute, reading)

    def ask(self, asker: Asker, question: Question) -> tuple[list[Rated], str]:
        """Chen et al. §2.1: the yes/no question's top tokens, read by the implicit protocol."""
        q = question
        reply = asker.top_tokens(q.messages, self.top_k(q.protocol))
        reading = self.read(q.protocol, q.attribute, reply["top"])
        return [
            Rated(q.attribute.name, q.sample, reading.value, None, reading.status, {**q.facts, **reading.details})
        ], ""

    def reread(
        self,
        protocol: EvaluationProtocol,
        attribute: Attribute,
        variant: str,
        config: Mapping[str, Any],
        rows: list[Row],
    ) -> list[Reread]:
        out: list[Reread] = []
        for row in rows:
            details = json.loads(row["details"] or "{}")
            if Details.TOP in details:
                reading = self.read(protocol, attribute, details[Details.TOP])
                out.append((row, reading, {**details, **reading.details}))
        return out


TEXT, CONSTRAINED, DISTRIBUTION, IMPLICIT = TextMode(), ConstrainedMode(), DistributionMode(), ImplicitMode()
MODES: dict[str, Mode] = {mode.name: mode for mode in (TEXT, CONSTRAINED, DISTRIBUTION, IMPLICIT)}
# --mode's choices (cli) come from the constants, so that `--help` need not import this module
if tuple(MODES) != MODE_NAMES:
    raise RuntimeError(f"domain/mode_names.py lists {MODE_NAMES}, the built-in modes are {tuple(MODES)}")


def register(mode: Mode) -> Mode:
    """A new way of reading a model (G-Eval's probability-weighted score, a verbalised confidence) is one module
    that defines its Mode and registers it: --mode, the worker, reparse and planning take it from here."""
    if mode.name in MODES:
        raise ValueError(f"mode {mode.name!r} exists")
    MODES[mode.name] = mode
    return mode


def mode_of(name: str) -> Mode:
    try:
        return MODES[name]
    except KeyError:
        raise UserError(f"--mode must be one of {', '.join(MODES)}, not {name!r}") from None

"""What every evaluation protocol owns, in one place.

A protocol is the papers' way of asking a question and reading the answer: Chiang & Lee's
Likert rating, Chen et al.'s explicit 0-100 score, their implicit yes/no score and their pairwise
A / B / tie comparison, SPA's probability that one writer is better than another. Each one
answers, for a judge and for a person:

- what is asked: the prompt (``template`` / ``render``), in which presentations (a pair in both
  orders), with which decoding by default (``decoding``);
- what may be answered: the reply's scale, its discrete options, a GBNF grammar and a JSON schema;
- how an answer becomes a stored value: reply text -> value (``read_reply``), next-token
  distribution -> values (``read_distribution``), top tokens -> value (``read_top_tokens``),
  always through ``canonical`` (order swap, V3 inversion, stars -> 0-100);
- what the value is: its level of measurement, how an item's annotators are aggregated
  (a mean, or a vote), and which report sections apply;
- how a person enters it in the app (keys) and how it is shown.

The judge worker, ``reparse``, the report, the live pane, imports and the app all ask the
protocol; none of them re-derives any of this.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import TYPE_CHECKING, Any, ClassVar

from tui_rater.domain.decoding import Decoding as Decoding  # re-exported: protocols take it from here
from tui_rater.domain.details import Details
from tui_rater.domain.errors import UserError
from tui_rater.domain.parsing import ParseResult, parse_score
from tui_rater.domain.prompts import PERSONA, RenderedPrompt, fill, generic_template
from tui_rater.domain.questions import Attribute, Scale, Task

if TYPE_CHECKING:  # numpy is imported where a distribution is read: an annotation session never needs it
    import numpy as np

# A reply that completed, but whose value could not be read, is stored with one of these.
FAILURES = (
    "refusal",  # "I am an AI and cannot rate ..."
    "no_number",  # nothing that reads as an answer
    "out_of_range",  # an answer off the scale
    "ambiguous",  # several answers, or none singled out
    "truncated",  # the reply hit max_tokens before its (reason-first) answer
    "low_mass",  # too little next-token probability on the scale's options to call it an answer
    "incomplete",  # the server gave too few options' probabilities to know the distribution
    "not_probabilities",  # the options' "probabilities" add up to more than 1: not a distribution at all
    "no_answer_token",  # neither option of a yes/no question among the top tokens (implicit score)
    "invalid_value",  # the protocol read a value off the question's scale or not a finite number (guard.py)
)
TEXT_MODES = ("text", "constrained")
# Next-token probabilities of distinct tokens add up to at most 1; float rounding of a softmax stays far below this
# slack, a server that sends logits, counts a token twice or sends garbage does not (1.8 was accepted, renormalised)
MAX_MASS = 1.001
# An option the server gave no probability for may hold at most this share of the scored options'
# mass, else the distribution is not known well enough to draw from (servers list only the top 20).
MAX_UNSCORED_SHARE = 0.01


class Level(StrEnum):
    """Level of measurement (Stevens): which statistics mean something."""

    NOMINAL = "nominal"  # categories: shares, kappa, alpha nominal, votes -- never means
    ORDINAL = "ordinal"  # ordered points: ranks, alpha ordinal; the papers also report means
    INTERVAL = "interval"  # numbers: means, alpha interval, Pearson


# A reply cut by the length limit is read only where one more token of these could not change its reading.
CONTINUATIONS = ("0", ".5", "/10", " or 5", " B")
# A reason-first reply (explain, Chen et al.'s V5 and pairwise V4) needs room for its reasons.
REASON_FIRST_MAX_TOKENS = 512


_SEQUENTIAL = 8  # numpy sums fewer than 8 float64 values one by one from 0.0 (its pairwise sum's base case)


def _sequential_mean(values: Sequence[float]) -> float:
    """``float(np.mean(values))`` to the last bit for fewer than ``_SEQUENTIAL`` Python numbers, without numpy's
    5 µs a call: the report aggregates every judge's samples of every item (100k items x questions x judges).
    numpy adds them in order starting from 0.0 (so -0.0 alone gives 0.0) and divides by the count."""
    total = 0.0
    for v in values:
        total += v
    return total / len(values)


@dataclass(frozen=True)
class Reading:
    """A judge's answer in the item's terms: a value, or a typed failure (``status``)."""

    value: float | None
    status: str = "ok"
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"


@dataclass(frozen=True)
class DistributionReading:
    """One forward pass: the options' probabilities and the N samples drawn from them."""

    samples: list[Reading]
    details: dict[str, Any]  # distribution (renormalised), raw, mass, expected, seed; unscored options


@dataclass(frozen=True)
class Options:
    """A discrete answer space: what a judge writes for each option, and its value in reply terms."""

    labels: tuple[str, ...]
    values: tuple[float, ...]


@dataclass(frozen=True)
class HumanInput:
    """How a person answers in the app: one key per point, digits + Enter, or choice keys."""

    kind: str  # "key" (one key per point) | "number" (digits, then Enter)
    keys: tuple[str, ...] = ()  # for "key": the key of each point, in the scale's order
    values: tuple[float, ...] = ()  # for "key": the value each key stores
    hint: str = ""
    # for choices: each key's label, whole (the app cuts them to the line's width, marked "…")
    labels: tuple[str, ...] = ()


def derive_seed(*parts: object) -> int:
    """A reproducible 31-bit seed from a job's identity (judge configuration, item, question, sample).

    Independent jobs get independent random streams: deriving every job's seed from ``--seed``
    plus the item alone gave every attribute and every judge the same draws.
    """
    digest = hashlib.sha256("\x1f".join(map(str, parts)).encode("utf-8")).digest()
    return int.from_bytes(digest[:4], "big") & 0x7FFFFFFF


def vote(values: Sequence[float]) -> float | None:
    """The most frequent answer; None when two answers tie for the most votes."""
    counts = Counter(values).most_common()
    if not counts:
        return None
    if len(counts) > 1 and counts[0][1] == counts[1][1]:
        return None
    return float(counts[0][0])


class EvaluationProtocol:
    """The base protocol: a numeric answer on the attribute's own scale, read by ``parse_score``.

    Subclasses override what differs; the defaults fit a Likert or 0-100 question asked once.
    """

    name: ClassVar[str] = ""
    title: ClassVar[str] = ""
    level: ClassVar[Level] = Level.INTERVAL
    modes: ClassVar[tuple[str, ...]] = TEXT_MODES
    # report sections (see stats): which of the papers' tables apply to this protocol's values. The
    # verdict sections (docs/VERDICT.md): "verdict" (the alternative annotator test, any level), "ppi"
    # (bias-corrected system means: ordinal and interval levels only) and "convergence" (both as ratings arrive)
    report_sections: ClassVar[tuple[str, ...]] = (
        "table1",
        "table2",
        "pairs",
        "table3",
        "extremes",
        "verdict",
        "ppi",
        "convergence",
        "retest",  # a person against themselves (annotate --retest)
        "bias",  # the bias card: leniency, length, self-preference (stats/bias.py)
    )
    # SPA gives each annotator one packet (one item) rather than every item
    one_item_per_annotator: ClassVar[bool] = False
    # the scale kinds this protocol can ask on
    scale_kinds: ClassVar[tuple[str, ...]] = ("continuous", "probability")

    def check_attribute(self, attribute: Attribute, fields: tuple[str, ...]) -> None:
        """Refuse a question this protocol cannot ask (a custom task file is checked when it is read)."""
        if attribute.scale.kind not in self.scale_kinds:
            raise UserError(
                f"protocol {self.name!r} does not ask on a {attribute.scale.kind} scale "
                f"(it needs: {', '.join(self.scale_kinds)})"
            )

    # --- what is asked -------------------------------------------------------------------

    def variants(self, task: Task, attribute: Attribute) -> tuple[str, ...]:
        return ("plain",)

    def default_variant(self, task: Task, attribute: Attribute) -> str:
        return self.variants(task, attribute)[0]

    def check_variant(self, task: Task, attribute: Attribute, variant: str) -> None:
        known = self.variants(task, attribute)
        if variant not in known:
            raise UserError(
                f"variant {variant!r} does not apply to task {task.name!r} (choose one of: {', '.join(known)})"
            )

    def check_mode(self, task: Task, attribute: Attribute, mode: str) -> None:
        if mode not in self.modes:
            raise UserError(
                f"--mode {mode} does not apply to {task.name}/{attribute.name} ({self.title}); "
                f"use one of: {', '.join(self.modes)}"
            )

    def presentations(self, attribute: Attribute) -> tuple[str, ...]:
        """How many ways an item is shown to a judge ('' = as it is)."""
        return ("",)

    def reason_first(self, variant: str) -> bool:
        """Does the prompt ask for reasons before the answer? Then a cut reply has no answer."""
        return False

    def decoding(self, variant: str, base: Decoding) -> Decoding:
        """The paper's decoding for this protocol and variant (the user's flags override it)."""
        if self.reason_first(variant):
            return replace(base, max_tokens=max(base.max_tokens, REASON_FIRST_MAX_TOKENS))
        return base

    def template(self, task: Task, attribute: Attribute, variant: str) -> tuple[str, str]:
        """(template id, template text) for one question."""
        base = attribute.template or generic_template(task, attribute)
        return f"{self.name}/{task.name}/{attribute.name}/{variant}", base

    def presented_fields(self, attribute: Attribute, fields: Mapping[str, str], presentation: str) -> dict[str, str]:
        return dict(fields)

    def render(
        self, task: Task, attribute: Attribute, fields: Mapping[str, str], variant: str, presentation: str = ""
    ) -> RenderedPrompt:
        self.check_variant(task, attribute, variant)
        template_id, template = self.template(task, attribute, variant)
        return RenderedPrompt(
            text=fill(template, self.presented_fields(attribute, fields, presentation)),
            template_id=template_id,
            template_hash=hashlib.sha256(template.encode("utf-8")).hexdigest(),
        )

    # --- what may be answered --------------------------------------------------------------

    def value_scale(self, attribute: Attribute) -> Scale:
        """The scale every stored value of this protocol lies on, in the item's terms (``guard.py`` checks each)."""
        return attribute.scale

    def reply_scale(self, attribute: Attribute, variant: str) -> Scale:
        """The scale the judge's reply is written on (it may differ from the stored one)."""
        return attribute.scale

    def options(self, attribute: Attribute, variant: str) -> Options | None:
        """The discrete options of a reply, or None for a continuous answer."""
        scale = self.reply_scale(attribute, variant)
        if scale.kind == "likert":
            return Options(tuple(str(int(v)) for v in scale.points), tuple(scale.points))
        return None

    def answer_starts(self, attribute: Attribute, variant: str) -> tuple[str, ...]:
        """What a valid reply begins with: the options' labels, else the first digits of the scale's whole numbers
        ("0".."9" on 0-100). Their probability at the answer position is the scale mass: what distribution mode
        reads, and what a constrained judge meant to answer before its grammar forced an answer."""
        options = self.options(attribute, variant)
        if options is not None:
            return options.labels
        scale = self.reply_scale(attribute, variant)
        return tuple(dict.fromkeys(str(v)[0] for v in range(int(scale.low), int(scale.high) + 1)))

    def grammar(self, attribute: Attribute, variant: str) -> str:
        """A GBNF grammar whose only sentences are valid answers."""
        options = self.options(attribute, variant)
        if options is not None:
            return "root ::= " + " | ".join(f'"{label}"' for label in options.labels)
        scale = self.reply_scale(attribute, variant)
        low, high = int(scale.low), int(scale.high)
        if (low, high) == (0, 100):
            return 'root ::= "100" | [1-9] [0-9] | [0-9]'
        return "root ::= " + " | ".join(f'"{v}"' for v in range(low, high + 1))

    def json_schema(self, attribute: Attribute, variant: str) -> dict[str, Any]:
        options = self.options(attribute, variant)
        scale = self.reply_scale(attribute, variant)
        answer: dict[str, Any]
        if options is not None and all(float(v).is_integer() for v in options.values) and scale.kind == "likert":
            answer = {"type": "integer", "enum": [int(v) for v in options.values]}
        elif options is not None:
            answer = {"type": "string", "enum": list(options.labels)}
        else:
            answer = {"type": "integer", "minimum": int(scale.low), "maximum": int(scale.high)}
        return {
            "type": "object",
            "properties": {"score": answer},
            "required": ["score"],
            "additionalProperties": False,
        }

    # --- reading a judge -----------------------------------------------------------------------

    def parse(self, text: str, attribute: Attribute, variant: str) -> ParseResult:
        """Reply text -> a value in the reply's terms (or a typed failure)."""
        scale = self.reply_scale(attribute, variant)
        # the question's name: a judge that scores other questions beside it is read on the one asked
        return parse_score(text, (scale.low, scale.high), asked=attribute.name)

    def canonical(
        self, value: float, attribute: Attribute, variant: str, presentation: str
    ) -> tuple[float, dict[str, Any]]:
        """A value in the reply's terms -> the stored value in the item's terms (+ facts to keep)."""
        return value, {}

    def read_reply(
        self,
        text: str,
        attribute: Attribute,
        variant: str,
        presentation: str = "",
        *,
        structured: bool = False,
        truncated: bool = False,
        constrained: bool = False,
    ) -> Reading:
        """The one path from a reply's text to a stored value, for the judge and for ``reparse``.

        ``truncated``: the reply stopped on the length limit. Its answer is read only where the reply went on
        past it: a cut "1" may have been "10", "1.5" or "1-5 scale ..."; a ``constrained``
        reply is complete when its grammar allows nothing longer ("3" on 1-5, but not "1" on 0-100)."""
        if truncated and self.reason_first(variant):
            # the answer comes after the reasons: a cut reply's numbers come from the reasons
            return Reading(None, "truncated")
        answer = _structured_answer(text) if structured else text
        result = self.parse(answer, attribute, variant)
        if truncated:  # a JSON reply cut before its end does not parse
            cut = answer is text if structured else self.cut_short(text, result, attribute, variant, constrained)
            if cut:
                return Reading(None, "truncated")
        if not result.ok or result.value is None:
            return Reading(None, result.failure or "no_number")
        value, details = self.canonical(result.value, attribute, variant, presentation)
        if truncated:
            details["truncated"] = True
        return Reading(value, "ok", details)

    def cut_short(
        self, text: str, result: ParseResult, attribute: Attribute, variant: str, constrained: bool = False
    ) -> bool:
        """Could the reply, cut by the length limit, have gone on to another answer? A grammar's reply: when the
        grammar allows a longer answer that starts with it. A free reply: when one more token ("0", ".5",
        "/10", " or") changes what it reads as."""
        if constrained:
            answer = text.strip()
            options = self.options(attribute, variant)
            if options is not None:
                allowed = list(options.labels)
            else:
                scale = self.reply_scale(attribute, variant)
                allowed = [str(v) for v in range(int(scale.low), int(scale.high) + 1)]
            return answer not in allowed or any(a != answer and a.startswith(answer) for a in allowed)
        return any(self.parse(text + more, attribute, variant) != result for more in CONTINUATIONS)

    def read_distribution(
        self,
        raw: Mapping[str, float],
        attribute: Attribute,
        variant: str,
        presentation: str = "",
        *,
        decoding: Decoding,
        min_mass: float,
        unscored: Sequence[str] = (),
        unscored_mass_at_most: float = 0.0,
    ) -> DistributionReading:
        """The options' next-token probabilities -> N samples drawn with the judge's T and top-p, from ``decoding``'s
        seed (the pass's, not the judge's).

        ``raw`` holds each option's probability as the model gave it (not renormalised). When
        less than ``min_mass`` of the next-token probability falls on the options, the model
        was not answering the question: every sample is stored as ``low_mass``; more than ``MAX_MASS`` is no
        distribution at all (``not_probabilities``). Options in
        ``unscored`` have a spelling the server gave no probability for, together at most
        ``unscored_mass_at_most``: when that could move the distribution by more than
        ``MAX_UNSCORED_SHARE``, every sample is ``incomplete`` -- never a renormalised guess.
        """
        options = self.options(attribute, variant)
        if options is None:
            raise UserError(f"{attribute.name} has no discrete options to read a distribution over")
        import numpy as np

        samples, seed = decoding.samples, decoding.seed
        p = np.array([max(float(raw.get(label, 0.0)), 0.0) for label in options.labels], dtype=float)
        mass = float(p.sum())
        details: dict[str, Any] = {
            Details.RAW: {k: float(v) for k, v in raw.items()},
            Details.MASS: mass,
            Details.SEED: seed,
        }
        unknown = float(unscored_mass_at_most) if unscored else 0.0
        if unscored:
            details[Details.UNSCORED] = list(unscored)
            details[Details.UNSCORED_MASS_AT_MOST] = unknown
        if mass > MAX_MASS:
            details["max_mass"] = MAX_MASS
            return DistributionReading([Reading(None, "not_probabilities") for _ in range(samples)], details)
        if not math.isfinite(mass) or mass <= 0 or mass + unknown < min_mass:
            details["min_mass"] = min_mass
            return DistributionReading([Reading(None, "low_mass") for _ in range(samples)], details)
        if mass < min_mass or not unknown <= MAX_UNSCORED_SHARE * mass:
            details["min_mass"] = min_mass
            return DistributionReading([Reading(None, "incomplete") for _ in range(samples)], details)
        p = p / mass
        values = np.array(options.values, dtype=float)
        canonical_values = [self.canonical(float(v), attribute, variant, presentation) for v in values]
        details[Details.DISTRIBUTION] = dict(zip(options.labels, map(float, p)))
        if self.level is not Level.NOMINAL:
            details[Details.EXPECTED] = float(sum(pi * cv for pi, (cv, _) in zip(p, canonical_values)))
        rng = np.random.default_rng(seed)
        q = tempered(p, decoding.temperature, decoding.top_p)
        drawn = rng.choice(len(values), size=samples, p=q)
        readings = []
        for index in drawn:
            value, facts = canonical_values[int(index)]
            readings.append(Reading(value, "ok", dict(facts)))
        return DistributionReading(readings, details)

    def read_top_tokens(self, top: Sequence[tuple[str, float]], attribute: Attribute) -> Reading:
        raise UserError(f"{self.title} is not read from top tokens")

    # --- values --------------------------------------------------------------------------------

    def aggregate(self, values: Sequence[float]) -> float | None:
        """One annotator group's score of an item: the mean (Chiang & Lee average the 3 samples)."""
        import numpy as np

        finite = [v for v in values if v is not None and math.isfinite(v)]
        if not finite:
            return None
        if len(finite) < _SEQUENTIAL and all(type(v) in (float, int) for v in finite):
            return _sequential_mean(finite)
        return float(np.mean(finite))

    def spread(self, attribute: Attribute, values: Sequence[float]) -> float:
        """How far apart an item's raters are, in the scale's units: the range of their values (``adjudicate``)."""
        finite = [v for v in values if v is not None and math.isfinite(v)]
        return float(max(finite) - min(finite)) if finite else 0.0

    def disagrees(self, attribute: Attribute, values: Sequence[float], margin: float) -> bool:
        """Do an item's raters disagree beyond ``margin`` (``adjudicate --margin``)? Numbers: their range exceeds it."""
        return self.spread(attribute, values) > margin

    def spread_share(self, attribute: Attribute, values: Sequence[float]) -> float:
        """The spread as a share of the largest possible one (0 all agree .. 1): orders the adjudication queue
        across questions of different scales, most disagreeing first."""
        width = attribute.scale.high - attribute.scale.low
        return min(1.0, self.spread(attribute, values) / width) if width > 0 else 0.0

    def compared_fields(self, attribute: Attribute) -> tuple[str, ...]:
        """The fields a comparison shows side by side (and swaps between presentations); none here."""
        return ()

    def layout(self, attribute: Attribute) -> str:
        """How the app lays an item out for a person: 'stacked' fields, a 'pair' side by side, 'writers' columns."""
        return "stacked"

    def combine_presentations(self, values: Sequence[float]) -> float | None:
        """An item's answer from its answers in each presentation (all present): here their aggregate."""
        return self.aggregate(values)

    def format_value(self, attribute: Attribute, value: float | None) -> str:
        return "·" if value is None else f"{value:g}"

    def human_input(self, attribute: Attribute) -> HumanInput:
        scale = attribute.scale
        if scale.kind == "likert" and scale.low >= 0 and scale.high <= 9:
            points = tuple(scale.points)
            low, high = int(scale.low), int(scale.high)
            ends = ""
            if scale.labels:
                ends = f"  ({low} {scale.labels.get(low, '')} … {high} {scale.labels.get(high, '')})"
            return HumanInput("key", tuple(str(int(v)) for v in points), points, f"keys {low}-{high}{ends}")
        return HumanInput("number", hint=f"type {scale.low:g}-{scale.high:g}, then Enter")

    def is_person_answer(self, attribute: Attribute, value: float) -> bool:
        """Whether a person can give this value (in the app, so in an import and as a gold item's known answer):
        a point of a discrete scale, anything within a continuous one. A judge's x.5 between two points
        (Chiang & Lee App. D.2.1) is no person's answer."""
        scale = attribute.scale
        return scale.contains(value) and (not scale.points or value in scale.points)

    def value_from_text(self, attribute: Attribute, text: str) -> float | None:
        """A value typed or imported as text ("4", "75"); None when it is not one."""
        try:
            value = float(text)
        except (TypeError, ValueError):
            return None
        return value if attribute.scale.contains(value) else None


def _structured_answer(text: str) -> str:
    """The answer of a JSON-schema reply ({"score": ...}); the text itself when it is not one."""
    import json

    try:
        answer = json.loads(text)["score"]
    except (ValueError, KeyError, TypeError):
        return text
    return str(answer)


def tempered(p: np.ndarray, temperature: float, top_p: float) -> np.ndarray:
    """The sampling distribution of llama.cpp / the API at temperature T with nucleus top-p."""
    import numpy as np

    if temperature <= 0:  # greedy
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
        for i in order:  # the smallest set whose mass reaches top_p (nucleus sampling)
            keep[i] = True
            cumulative += q[i]
            if cumulative >= top_p:
                break
        q = np.where(keep, q, 0.0)
        q /= q.sum()
    return q


def persona_variant(template: str, variant: str) -> str:
    """Chiang & Lee §3.3.2: persona prepended before the instructions; explain appended after the question."""
    from tui_rater.domain.prompts import EXPLAIN

    if variant == "persona":
        return PERSONA + "\n" + template
    if variant == "explain":
        return template + " " + EXPLAIN
    return template

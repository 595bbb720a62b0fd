"""Categorical answers: a custom choice question, and Chen et al.'s pairwise comparison.

Choices are stored as their 0-based index in the item's terms. They are nominal: a tie is not
"more than B", so no mean, standard deviation or ordinal statistic is ever computed over the
codes; an item's annotators are combined by a vote.

Pairwise comparison (Chen et al. §2.2, App. B): options (A) the first text, (B) the second, (C)
equally good; every pair is judged in both orders (``original`` and ``swapped``) so position bias
can be measured; V3 asks which storyline is *worse* (read back as the better one); V4 gives its
reasons first and is sampled five times with top-p, the samples voted. Greedy decoding for V1-V3.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar

from tui_rater.domain.errors import UserError
from tui_rater.domain.parsing import ParseResult, parse_choice
from tui_rater.domain.prompts import CHEN_PAIRWISE
from tui_rater.domain.protocols.base import Decoding, EvaluationProtocol, HumanInput, Level, Options, vote
from tui_rater.domain.questions import Attribute, Choice, Task

ORIGINAL, SWAPPED = "original", "swapped"
# a pair's answer in the item's terms: the first compared field better, the second, or a tie
FIRST, SECOND, TIE = 0.0, 1.0, 2.0
CHEN_PAIRWISE_VARIANTS = tuple(CHEN_PAIRWISE)  # v1 .. v4


def choice_input(keys: tuple[str, ...], choices: Sequence[Choice]) -> HumanInput:
    labels = tuple(choice.label for choice in choices)
    hint = "  ".join(f"{key} = {label}" for key, label in zip(keys, labels))
    return HumanInput("key", keys, tuple(float(i) for i in range(len(choices))), hint, labels)


class ChoiceAnswer(EvaluationProtocol):
    name: ClassVar[str] = "choice"
    title: ClassVar[str] = "a choice between options"
    level: ClassVar[Level] = Level.NOMINAL
    modes: ClassVar[tuple[str, ...]] = ("text", "constrained", "distribution")
    # the alt-test scores a nominal answer by accuracy; no system means ("ppi") of category codes
    report_sections: ClassVar[tuple[str, ...]] = ("nominal", "verdict", "convergence", "retest", "reliability")
    scale_kinds: ClassVar[tuple[str, ...]] = ("choice",)

    def keys(self, attribute: Attribute) -> tuple[str, ...]:
        return tuple(choice.key for choice in attribute.scale.choices)

    def options(self, attribute: Attribute, variant: str) -> Options | None:
        keys = self.keys(attribute)
        return Options(keys, tuple(float(i) for i in range(len(keys))))

    def parse(self, text: str, attribute: Attribute, variant: str) -> ParseResult:
        # the options' names too: a reply that is only "Storyline-2" answers B
        return parse_choice(text, self.keys(attribute), names=tuple(c.label for c in attribute.scale.choices))

    def aggregate(self, values: Sequence[float]) -> float | None:
        return vote([v for v in values if v is not None])

    def combine_presentations(self, values: Sequence[float]) -> float | None:
        """The same answer in every presentation, else none (a category has no middle)."""
        return float(values[0]) if values and all(v == values[0] for v in values) else None

    def spread(self, attribute: Attribute, values: Sequence[float]) -> float:
        """Categories have no distance: how many answers besides one were given (0: all agree)."""
        return float(max(0, len({v for v in values if v is not None}) - 1))

    def disagrees(self, attribute: Attribute, values: Sequence[float], margin: float) -> bool:
        """Any two different answers: a margin is a distance, and a category has none."""
        return self.spread(attribute, values) > 0

    def spread_share(self, attribute: Attribute, values: Sequence[float]) -> float:
        """The share of the raters outside the most given answer (0: all agree)."""
        answers = [v for v in values if v is not None]
        return 1.0 - Counter(answers).most_common(1)[0][1] / len(answers) if answers else 0.0

    def format_value(self, attribute: Attribute, value: float | None) -> str:
        if value is None:
            return "·"
        choices = attribute.scale.choices
        index = int(value)
        return choices[index].key if 0 <= index < len(choices) and value == index else f"{value:g}"

    def human_input(self, attribute: Attribute) -> HumanInput:
        # digits 1..k: letters would collide with the app's own keys (s skip, f flag, c comment ...)
        choices = attribute.scale.choices
        keys = tuple(str(i + 1) for i in range(len(choices)))
        return choice_input(keys, choices)

    def value_from_text(self, attribute: Attribute, text: str) -> float | None:
        keys = [key.upper() for key in self.keys(attribute)]
        answer = str(text).strip().upper()
        if answer in keys:
            return float(keys.index(answer))
        return super().value_from_text(attribute, text)


class PairwiseComparison(ChoiceAnswer):
    name: ClassVar[str] = "pairwise"
    title: ClassVar[str] = "pairwise comparison A / B / tie (Chen et al. 2023)"
    report_sections: ClassVar[tuple[str, ...]] = (
        "nominal",
        "position",
        "bt",
        "pair_meta",
        "verdict",
        "convergence",
        "retest",
        "bias",  # the bias card: position, order consistency, length, self-preference (stats/bias.py)
        "reliability",
    )

    def variants(self, task: Task, attribute: Attribute) -> tuple[str, ...]:
        return ("plain",) if attribute.template else CHEN_PAIRWISE_VARIANTS

    def presentations(self, attribute: Attribute) -> tuple[str, ...]:
        return (ORIGINAL, SWAPPED)

    def reason_first(self, variant: str) -> bool:
        return variant == "v4"

    def decoding(self, variant: str, base: Decoding) -> Decoding:
        if variant == "v4":  # five reasoned samples with top-p, voted (Figure 1's note)
            return replace(super().decoding(variant, base), samples=5, temperature=1.0)
        return replace(base, samples=1, temperature=0.0)

    def template(self, task: Task, attribute: Attribute, variant: str) -> tuple[str, str]:
        if attribute.template:
            return super().template(task, attribute, variant)
        return f"chen/pairwise/{variant}", CHEN_PAIRWISE[variant]

    def check_attribute(self, attribute: Attribute, fields: tuple[str, ...]) -> None:
        super().check_attribute(attribute, fields)
        first, second = attribute.params.get("first"), attribute.params.get("second")
        if first not in fields or second not in fields or first == second:
            raise UserError("a pairwise question needs params first and second: two of the task's fields")
        if len(attribute.scale.choices) != 3:
            raise UserError("a pairwise question has three choices: the first, the second, a tie")

    def compared_fields(self, attribute: Attribute) -> tuple[str, str]:
        try:
            return attribute.params["first"], attribute.params["second"]
        except KeyError:
            raise UserError(
                f"the pairwise question {attribute.name!r} needs params first and second (the two compared fields)"
            ) from None

    def presented_fields(self, attribute: Attribute, fields: Mapping[str, str], presentation: str) -> dict[str, str]:
        shown = dict(fields)
        if presentation == SWAPPED:
            first, second = self.compared_fields(attribute)
            shown[first], shown[second] = fields[second], fields[first]
        return shown

    def layout(self, attribute: Attribute) -> str:
        return "pair"  # the two texts side by side when the terminal is wide enough

    def combine_presentations(self, values: Sequence[float]) -> float | None:
        """Both orders' verdicts: the same one, else a tie -- an order-dependent preference is none
        (MT-Bench's rule, Zheng et al. 2023; Chen et al. judge every pair in both orders)."""
        if not values:
            return None
        return float(values[0]) if all(v == values[0] for v in values) else TIE

    def human_input(self, attribute: Attribute) -> HumanInput:
        choices = attribute.scale.choices
        keys = ("a", "b", "t")[: len(choices)]  # A / B / tie
        return choice_input(keys, choices)

    def canonical(
        self, value: float, attribute: Attribute, variant: str, presentation: str
    ) -> tuple[float, dict[str, Any]]:
        """The answered letter -> the item's terms (0 = the first field better, 1 = the second, 2 = tie)."""
        position = int(value)
        details: dict[str, Any] = {"answered": self.keys(attribute)[position]}
        if value == TIE:
            return TIE, details
        # V3 asks which storyline is *worse*: the other one is the better
        better_shown = 1 - position if variant == "v3" else position
        return float(1 - better_shown if presentation == SWAPPED else better_shown), details

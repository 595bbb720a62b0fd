"""Numeric scores: a custom 0-100 question, and Chen et al.'s Explicit and Implicit Scores.

- ``continuous``: a number on the attribute's scale, written in the reply (custom tasks).
- ``explicit`` (Chen et al. §2.1, App. A): prompts V1-V5; V4 answers in 1-5 stars, normalised into
  [0, 100] as in their Figure 4; V5 gives its reasons first. Greedy decoding is their default
  (V5: five samples with top-p, averaged).
- ``implicit`` (§2.1, Eq. 1): the yes/no question; Implicit = max(p(yes), 1 - p(no)) summed over the
  yes / no token variants among the top-5 next tokens, stored x 100.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar

from tui_rater.domain.details import Details
from tui_rater.domain.prompts import CHEN_EXPLICIT, CHEN_IMPLICIT
from tui_rater.domain.protocols.base import MAX_MASS, Decoding, EvaluationProtocol, Level, Reading
from tui_rater.domain.questions import Attribute, Scale, Task

CHEN_EXPLICIT_VARIANTS = tuple(CHEN_EXPLICIT)  # v1 .. v5
# Figure 4 normalises V4's stars into [0, 100]: 1 star = 0, 5 stars = 100.
_STARS = Scale("likert", 1, 5)
_IMPLICIT = Scale("continuous", 0, 100)


class ContinuousScore(EvaluationProtocol):
    name: ClassVar[str] = "continuous"
    title: ClassVar[str] = "a score on a continuous scale"
    level: ClassVar[Level] = Level.INTERVAL
    modes: ClassVar[tuple[str, ...]] = ("text", "constrained")
    report_sections: ClassVar[tuple[str, ...]] = (
        "table1",
        "table2",
        "pairs",
        "table3",
        "raters",
        "extremes",
        "meta",
        "verdict",
        "ppi",
        "convergence",
        "retest",  # a person against themselves (annotate --retest)
        "bias",  # the bias card: leniency, length, self-preference (stats/bias.py)
        "reliability",  # every person and judge on one scale (stats/rater_model.py)
    )


class ExplicitScore(ContinuousScore):
    name: ClassVar[str] = "explicit"
    title: ClassVar[str] = "Explicit Score 0-100 (Chen et al. 2023)"
    modes: ClassVar[tuple[str, ...]] = ("text", "constrained", "implicit")

    def variants(self, task: Task, attribute: Attribute) -> tuple[str, ...]:
        # the papers' prompts are for the storyline task; a custom template is asked as it is
        return ("plain",) if attribute.template else CHEN_EXPLICIT_VARIANTS

    def reason_first(self, variant: str) -> bool:
        return variant == "v5"  # "Please first give your reason carefully ..."

    def decoding(self, variant: str, base: Decoding) -> Decoding:
        if variant == "v5":  # reasons sampled five times with top-p, scores averaged
            return replace(super().decoding(variant, base), samples=5, temperature=1.0)
        return replace(base, samples=1, temperature=0.0)  # greedy, their recommendation for explicit scores

    def template(self, task: Task, attribute: Attribute, variant: str) -> tuple[str, str]:
        if attribute.template:
            return super().template(task, attribute, variant)
        return f"chen/explicit/{variant}", CHEN_EXPLICIT[variant]

    def reply_scale(self, attribute: Attribute, variant: str) -> Scale:
        return _STARS if variant == "v4" else attribute.scale

    def canonical(
        self, value: float, attribute: Attribute, variant: str, presentation: str
    ) -> tuple[float, dict[str, Any]]:
        if variant == "v4":
            return (value - 1) * 25.0, {"stars": value}
        return value, {}


class ImplicitScore(ContinuousScore):
    name: ClassVar[str] = "implicit"
    title: ClassVar[str] = "Implicit Score (Chen et al. 2023, Eq. 1)"
    modes: ClassVar[tuple[str, ...]] = ("implicit",)
    # Eq. 1 sums the variants of each answer's token
    YES: ClassVar[frozenset[str]] = frozenset({"Yes", "YES", "yes"})
    NO: ClassVar[frozenset[str]] = frozenset({"No", "NO", "no"})
    TOP_K: ClassVar[int] = 5

    def variants(self, task: Task, attribute: Attribute) -> tuple[str, ...]:
        return ("plain",)

    def decoding(self, variant: str, base: Decoding) -> Decoding:
        return replace(base, samples=1)  # one forward pass: the score is a probability, not a sample

    def value_scale(self, attribute: Attribute) -> Scale:
        return _IMPLICIT  # Eq. 1 x 100, whatever the question's own scale

    def template(self, task: Task, attribute: Attribute, variant: str) -> tuple[str, str]:
        return "chen/implicit", CHEN_IMPLICIT

    def read_top_tokens(self, top: Sequence[tuple[str, float]], attribute: Attribute) -> Reading:
        """Implicit = max(p(yes), 1 - p(no)) over the top-k tokens; neither among them is a typed failure.

        With neither token in the top k, 1 - p(no) would read as 100: the model was not answering.
        """
        pairs = [(str(token), float(p)) for token, p in top[: self.TOP_K]]
        p_yes = sum(p for token, p in pairs if token.strip() in self.YES)
        p_no = sum(p for token, p in pairs if token.strip() in self.NO)
        details: dict[str, Any] = {
            Details.P_YES: p_yes,
            Details.P_NO: p_no,
            Details.TOP: [list(pair) for pair in pairs],
        }
        if sum(p for _token, p in pairs) > MAX_MASS:  # five tokens' probabilities add up to at most 1
            return Reading(None, "not_probabilities", details)
        if not any(token.strip() in self.YES | self.NO for token, _ in pairs):
            return Reading(None, "no_answer_token", details)
        # a softmax's rounding (within MAX_MASS) must not put the score above the scale's 100
        return Reading(100.0 * min(1.0, max(p_yes, 1.0 - p_no)), "ok", details)

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
        raise ValueError("the Implicit Score is read from token probabilities, not from a reply")

    def read_distribution(self, raw: Mapping[str, float], *args: Any, **kwargs: Any) -> Any:
        raise ValueError("the Implicit Score is read with read_top_tokens")

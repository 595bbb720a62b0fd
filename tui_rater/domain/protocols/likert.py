"""Likert rating (Chiang & Lee 2023): a question answered on whole points, e.g. 1-5.

Each attribute is asked separately, 3 samples per question (nucleus p = 0.9, T = 1.0) treated
as 3 annotators (§3.2); the replies are read by App. D.2.1's rule (``parse_score``). Variants
(§3.3.2): persona prepended before the instructions, explain appended after the question.
"""

from __future__ import annotations

from typing import ClassVar

from tui_rater.domain.parsing import ParseResult
from tui_rater.domain.protocols.base import EvaluationProtocol, Level, persona_variant
from tui_rater.domain.questions import Attribute, Task

CHIANG_LEE_VARIANTS = ("plain", "persona", "explain")


class LikertRating(EvaluationProtocol):
    name: ClassVar[str] = "likert"
    title: ClassVar[str] = "Likert rating (Chiang & Lee 2023)"
    level: ClassVar[Level] = Level.ORDINAL
    modes: ClassVar[tuple[str, ...]] = ("text", "constrained", "distribution")
    report_sections: ClassVar[tuple[str, ...]] = (
        "table1",
        "table2",
        "pairs",
        "table3",
        "raters",
        "extremes",
        "verdict",  # the alternative annotator test, scored by -RMSE (the paper's choice for Likert data)
        "ppi",
        "convergence",
        "retest",  # a person against themselves (annotate --retest)
        "bias",  # the bias card: leniency, length, self-preference (stats/bias.py)
        "reliability",  # every person and judge on one scale (stats/rater_model.py)
    )
    scale_kinds: ClassVar[tuple[str, ...]] = ("likert",)

    def variants(self, task: Task, attribute: Attribute) -> tuple[str, ...]:
        return CHIANG_LEE_VARIANTS

    def reason_first(self, variant: str) -> bool:
        return variant == "explain"  # "Please also explain your decision."

    def template(self, task: Task, attribute: Attribute, variant: str) -> tuple[str, str]:
        template_id, base = super().template(task, attribute, variant)
        return template_id, persona_variant(base, variant)

    def parse(self, text: str, attribute: Attribute, variant: str) -> ParseResult:
        """Whole points, and the half points the paper kept (App. D.2.1); "3.1" or "3.10" is on no such scale."""
        result = super().parse(text, attribute, variant)
        if result.value is not None and not float(result.value * 2).is_integer():
            return ParseResult(None, "out_of_range")
        return result

"""What shaped a task's report besides its ratings: the humans' reference, the ratings left out, the settings.

A report file must say it itself (it once went to stderr only, and a file passed on lost it): JSON carries it as
the top-level ``metadata`` object, CSV as rows of table ``metadata``, Markdown, HTML and text as a short paragraph
under the task's heading. ``service/reports.py`` gathers it; the CLI's notes on stderr are the same sentences.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from tui_rater.stats.rater_fit import MODEL_REFERENCE
from tui_rater.stats.records import HUMANS


@dataclass(frozen=True)
class Shaped:
    """One task's report: the reference its humans' score is, and what was left out of its statistics."""

    task: str
    reference: str = HUMANS  # ``report --reference``: "humans", "adjudicated" or "model"
    adjudicated: int | None = None  # item questions with a decided value (``--reference adjudicated`` only)
    gold_items: int = 0  # gold items with ratings: left out of agreement and verdicts
    gold_ratings: int = 0
    stray: Mapping[str, int] = field(default_factory=dict)  # annotator -> ratings under a sample other than 0
    epsilon: str = ""  # the alt-test's ε and where it came from
    spa_tau: float | None = None  # SPA's annotator filter (None: every annotator kept)

    def reference_sentence(self) -> str:
        if self.reference == HUMANS:
            return "The humans' score of an item is their ratings combined (--reference humans)."
        if self.reference == MODEL_REFERENCE:
            return (
                "The humans' score of an item is the consensus the reliability model of the people implies "
                "(--reference model: Dawid-Skene's most likely answer, or the ordinal model's posterior mean; the "
                "judges left out of it), on each question with 3 people or more; their ratings combined elsewhere."
            )
        count = self.adjudicated or 0
        return (
            "The humans' score of an item is the adjudicated value where there is one (--reference adjudicated): "
            + (f"{count} item question(s) adjudicated." if count else "none adjudicated yet (`tui-rater adjudicate`).")
        )

    def gold_sentence(self) -> str:
        if not self.gold_ratings:
            return "No gold ratings were left out."
        return (
            f"{self.gold_ratings} rating(s) of {self.gold_items} gold item(s) are left out of agreement and verdicts "
            "(they score the annotators: `tui-rater progress`)."
        )

    def sentences(self) -> list[str]:
        said = [self.reference_sentence(), self.gold_sentence()]
        said += [
            f"{count} rating(s) by {annotator} under a sample other than 0 are left out of every table (a person "
            "rates an item once)."
            for annotator, count in self.stray.items()
        ]
        if self.epsilon:
            said.append(f"Alternative annotator test: {self.epsilon}.")
        said.append(
            "SPA keeps every annotator (--no-spa-filter)."
            if self.spa_tau is None
            else f"SPA leaves out annotators with P[X>Y] + P[Y>X] above τ = {self.spa_tau:g} (--spa-tau)."
        )
        return said

    def as_dict(self) -> dict[str, Any]:
        return {
            "reference": self.reference,
            "adjudicated_item_questions": self.adjudicated,
            "gold_left_out": {"items": self.gold_items, "ratings": self.gold_ratings},
            "other_samples_left_out": dict(self.stray),
            "epsilon": self.epsilon,
            "spa_tau": self.spa_tau,
            "said": self.sentences(),
        }

    def rows(self) -> list[dict[str, Any]]:
        """CSV rows (table ``metadata``): one per fact, its count as the value and its sentence as the note."""
        facts: list[tuple[str, float | None, str]] = [
            (
                "reference",
                None if self.reference != "adjudicated" else float(self.adjudicated or 0),
                self.reference_sentence(),
            ),
            ("gold_ratings_left_out", float(self.gold_ratings), self.gold_sentence()),
        ]
        sentences = self.sentences()
        facts += [(f"other_samples_left_out {a}", float(n), s) for (a, n), s in zip(self.stray.items(), sentences[2:])]
        if self.epsilon:
            facts.append(("epsilon", None, self.epsilon))
        facts.append(("spa_tau", self.spa_tau, sentences[-1]))
        return [
            {"table": "metadata", "task": self.task, "statistic": statistic, "value": value, "note": note}
            for statistic, value, note in facts
        ]

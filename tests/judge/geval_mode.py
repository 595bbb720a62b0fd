"""A new way of reading a model, as one module: G-Eval's probability-weighted score (Liu et al. 2023, §2.3): the
options' values weighted by their next-token probabilities, one reading per question. Nothing else in tui-rater
names it: --mode, the worker, planning, reparse and `judge --check` find it in the registry, the check through its
own ``preflight`` (tests/judge/test_modes.py)."""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from tui_rater.domain.modes import Asker, Details, DistributionMode, Question, Rated, Reread, Row, register
from tui_rater.domain.preflight import READY_MAX_FAILURE_SHARE, Limits, ModeCheck, PromptCheck, ScaleMass
from tui_rater.domain.protocols import EvaluationProtocol, Reading
from tui_rater.domain.questions import Attribute


@dataclass(frozen=True)
class WeightedCheck(ScaleMass):
    """What `judge --check` says of G-Eval: each question gives one weighted score, and one with less than --min-mass
    on the options gives none (no other sample stands in), so the questions below it are counted, not the median."""

    what: str = "on the options G-Eval weights"

    def verdict(self, mode: str, checks: Sequence[PromptCheck], limits: Limits) -> ModeCheck:
        found = super().verdict(mode, checks, limits)  # no token path, no mass read: not ready, as distribution
        masses = [c.mass for c in checks if c.mass is not None]
        if not masses:
            return found
        low = sum(m < limits.min_mass for m in masses)
        reason = (
            f"{len(masses) - low} of {len(masses)} checked questions have at least --min-mass {limits.min_mass:g} "
            f"{self.what}"
        )
        return ModeCheck(mode, low <= READY_MAX_FAILURE_SHARE * len(masses), reason, found.mass)


class ProbabilityWeighted(DistributionMode):
    name = "geval"
    asked_as = "distribution"  # the same question and options as a distribution pass
    preflight = WeightedCheck()  # the same probes as distribution, G-Eval's own verdict

    def weighted(
        self,
        protocol: EvaluationProtocol,
        attribute: Attribute,
        variant: str,
        presentation: str,
        probabilities: Mapping[str, float],
        decoding: Any,
        min_mass: float,
    ) -> Reading:
        pass_ = self.read(protocol, attribute, variant, presentation, probabilities, decoding, min_mass)
        expected = pass_.details.get("expected")
        if expected is None:  # too little mass on the options: the pass's typed failure
            return Reading(None, pass_.samples[0].status, pass_.details)
        return Reading(float(expected), "ok", pass_.details)

    def ask(self, asker: Asker, question: Question) -> tuple[list[Rated], str]:
        q = question
        options = q.protocol.options(q.attribute, q.variant)
        assert options is not None
        reply = asker.option_probabilities(q.messages, list(options.labels))
        decoding = replace(q.decoding, samples=1, seed=q.seed("geval"))
        reading = self.weighted(
            q.protocol, q.attribute, q.variant, q.presentation, reply["probabilities"], decoding, q.min_mass
        )
        return [Rated(q.attribute.name, 0, reading.value, None, reading.status, {**q.facts, **reading.details})], ""

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
            stored = json.loads(row["details"] or "{}")
            decoding = replace(self.decoding_of(config), samples=1, seed=stored[Details.SEED])
            reading = self.weighted(
                protocol,
                attribute,
                variant,
                row["presentation"],
                stored[Details.RAW],
                decoding,
                config.get("min_mass", 0.5),
            )
            out.append((row, reading, {**stored, **reading.details}))
        return out

    @staticmethod
    def decoding_of(config: Mapping[str, Any]) -> Any:
        from tui_rater.domain.decoding import Decoding

        return Decoding.of_record(config)


GEVAL = ProbabilityWeighted()


def install() -> None:
    register(GEVAL)

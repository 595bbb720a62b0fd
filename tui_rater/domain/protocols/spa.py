"""System-level probabilistic assessment (Ethayarajh & Jurafsky 2022, §5.2).

Each annotator reads one packet (m prompts, one continuation per anonymised writer) and answers,
for each pair of writers and in both orders, "from 0 to 100, what is the % chance that writer X
is a better writer than writer Y?" (``spa-probability``, params ``x`` and ``y``: the writers'
letters), optionally with a Likert rating of each writer's first continuation (``spa-likert``,
param ``writer``) -- the standard protocol, for comparison. The report section ``spa`` covers both.
"""

from __future__ import annotations

from typing import ClassVar

from tui_rater.domain.protocols.likert import LikertRating
from tui_rater.domain.protocols.scores import ContinuousScore
from tui_rater.domain.questions import Attribute


class SpaProbability(ContinuousScore):
    name: ClassVar[str] = "spa-probability"
    title: ClassVar[str] = "SPA: P[writer X better than writer Y] (Ethayarajh & Jurafsky 2022)"
    # no "verdict" / "ppi": each annotator reads their own packet, so no item has the several raters the
    # alt-test leaves out in turn, and SPA is itself the system-level estimate
    report_sections: ClassVar[tuple[str, ...]] = ("spa",)
    # one packet per annotator (§5.2 step 1)
    one_item_per_annotator: ClassVar[bool] = True

    def layout(self, attribute: Attribute) -> str:
        return "writers"  # each writer's continuations in a column of its own, when they fit


class SpaLikert(LikertRating):
    name: ClassVar[str] = "spa-likert"
    title: ClassVar[str] = "SPA: Likert rating of a writer's first continuation (the standard protocol)"
    report_sections: ClassVar[tuple[str, ...]] = ("spa",)
    one_item_per_annotator: ClassVar[bool] = True

    def layout(self, attribute: Attribute) -> str:
        return "writers"

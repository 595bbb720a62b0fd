"""`tui-rater judges`: the study's judges with their provenance, and forgetting one (with the juries made from it).

``Judge`` is re-exported as the type the CLI lists (it reads its fields; it never imports ``store``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from tui_rater.store.judges import Judge, list_judges

if TYPE_CHECKING:
    from tui_rater.store.judges import Footprint
    from tui_rater.store.juries import Jury
    from tui_rater.store.study import Study

__all__ = ["Forgetting", "Judge", "forget", "list_judges", "prepare_forget", "server_warnings"]


def server_warnings(facts: dict[str, Any], api_model: str) -> list[str]:
    """What a server said about the model behind its alias that a reader should doubt (``api_server.warnings``)."""
    from tui_rater.judge.backends.api_server import warnings

    return list(warnings(facts, api_model))


@dataclass(frozen=True)
class Forgetting:
    """A judge about to be forgotten: what goes with it (its ratings, jobs, …) and the juries made from it."""

    judge: Judge
    juries: list[Jury]
    goes: Footprint


def prepare_forget(study: Study, wanted: str, force: bool) -> Forgetting:
    """The judge named ``wanted`` (its label, number or name) and what forgetting it removes; a jury made from it
    is refused in one sentence unless ``force``. Jobs a killed run left leased are reclaimed first (they are not a
    run in progress)."""
    from tui_rater.service.judging import reclaim_dead
    from tui_rater.service.juries import check_forget_member
    from tui_rater.store.judges import find_judge, footprint

    judge = find_judge(study, wanted)
    reclaim_dead(study)
    juries = check_forget_member(study, judge, force)
    return Forgetting(judge, juries, footprint(study, judge))


def forget(study: Study, forgetting: Forgetting) -> Footprint:
    """Forget the judge and its juries, in one transaction: what was removed."""
    from tui_rater.service.juries import forget_member

    return forget_member(study, forgetting.judge, forgetting.juries)

"""`tui-rater spa setup`: SPA's packets of prompts and questions (Ethayarajh & Jurafsky 2022), as a new task."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tui_rater.store.study import Study


@dataclass(frozen=True)
class SpaSetup:
    """The `spa setup` flags as one value."""

    systems: tuple[str, ...]
    m: int = 5  # prompts per packet
    packets: int = 1
    seed: int = 0
    source_task: str = "story"
    name: str = "spa"
    pairs: str = "all"  # every pair of systems, or each with the next ("adjacent")
    likert: bool = True  # also the standard protocol's Likert ratings


def set_up_spa(study: Study, request: SpaSetup) -> dict[str, Any]:
    """Make the SPA task and its packets: what was made (task, packets, questions, writers, eligible prompts)."""
    from tui_rater.store import spa

    return spa.setup(
        study,
        list(request.systems),
        m=request.m,
        packets=request.packets,
        seed=request.seed,
        source_task=request.source_task,
        name=request.name,
        pairs=request.pairs,
        likert=request.likert,
    )

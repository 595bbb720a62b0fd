"""The evaluation protocols of the papers, one object each, and the registry that finds them.

``of(attribute)`` is the protocol that asks and reads a question; ``for_mode(task, attribute,
mode)`` the one a judge uses in a scoring mode (Chen et al.'s implicit mode asks its own yes/no
question). A protocol from a fourth paper is one module, in this package (registered here) or in the
user's own package, found through the ``tui_rater.protocols`` entry-point group (``discovery``), plus its
tests (see CONTRIBUTING.md).
"""

from __future__ import annotations

from tui_rater.domain.errors import UserError
from tui_rater.domain.protocols import discovery
from tui_rater.domain.protocols.base import (
    FAILURES,
    Decoding,
    DistributionReading,
    EvaluationProtocol,
    HumanInput,
    Level,
    Options,
    Reading,
    derive_seed,
    vote,
)
from tui_rater.domain.protocols.choice import FIRST, ORIGINAL, SECOND, SWAPPED, TIE, ChoiceAnswer, PairwiseComparison
from tui_rater.domain.protocols.likert import LikertRating
from tui_rater.domain.protocols.scores import ContinuousScore, ExplicitScore, ImplicitScore
from tui_rater.domain.protocols.spa import SpaLikert, SpaProbability
from tui_rater.domain.questions import Attribute, Task

__all__ = [
    "FAILURES",
    "FIRST",
    "ORIGINAL",
    "SECOND",
    "SWAPPED",
    "TIE",
    "Decoding",
    "DistributionReading",
    "EvaluationProtocol",
    "HumanInput",
    "Level",
    "Options",
    "Reading",
    "derive_seed",
    "for_mode",
    "get",
    "names",
    "of",
    "register",
    "vote",
]

REGISTRY: dict[str, EvaluationProtocol] = {
    protocol.name: protocol
    for protocol in (
        LikertRating(),
        ContinuousScore(),
        ExplicitScore(),
        ImplicitScore(),
        ChoiceAnswer(),
        PairwiseComparison(),
        SpaProbability(),
        SpaLikert(),
    )
}
# the papers' protocols: an installed package may add others (discovery), never replace these
BUILT_IN = frozenset(REGISTRY)
# a custom task's question without a protocol gets the plain one of its scale
DEFAULT_FOR_SCALE = {"likert": "likert", "continuous": "continuous", "probability": "continuous", "choice": "choice"}


def register(protocol: EvaluationProtocol) -> EvaluationProtocol:
    """Add a protocol (a fourth paper's); its name must be new."""
    if not protocol.name or protocol.name in REGISTRY:
        raise ValueError(f"a protocol needs a new name, not {protocol.name!r}")
    REGISTRY[protocol.name] = protocol
    return protocol


def names() -> tuple[str, ...]:
    """Every protocol's name: registered here, then those installed packages register (not loaded yet)."""
    return tuple(dict.fromkeys([*REGISTRY, *discovery.entry_points(BUILT_IN)]))


def get(name: str) -> EvaluationProtocol:
    protocol = REGISTRY.get(name)
    if protocol is None:  # not a built-in one: an installed package's, loaded the first time it is asked for
        found = discovery.load(name, BUILT_IN)
        if found is None:
            raise UserError(
                f"unknown protocol {name!r} (known: {', '.join(names())}; another package's protocol is found once "
                "that package is installed)"
            )
        protocol = REGISTRY.setdefault(name, found)  # two threads asking at once keep the first one
    return protocol


def of(attribute: Attribute) -> EvaluationProtocol:
    """The protocol that asks and reads this question."""
    return get(attribute.protocol or DEFAULT_FOR_SCALE[attribute.scale.kind])


def for_mode(task: Task, attribute: Attribute, mode: str) -> EvaluationProtocol:
    """The protocol a judge uses for this question in ``mode`` (checked: one sentence if it does not apply)."""
    from tui_rater.domain.modes import mode_of  # the modes read protocols: imported when asked

    protocol = of(attribute)
    asked = mode_of(mode)
    protocol.check_mode(task, attribute, asked.asked_as)
    if asked.own_protocol is not None:  # Chen et al. §2.1: the implicit score asks its own yes/no question
        return REGISTRY[asked.own_protocol]
    return protocol


def one_item_per_annotator(task: Task) -> bool:
    return any(of(attribute).one_item_per_annotator for attribute in task.attributes)

"""The annotation app's model: one annotator's session (their showings, undo, saves) and the adjudicator's.

Re-exported here, as ``service.study`` re-exports ``Study``: the service opens them (``service.annotate``,
``service.adjudication``) and the app holds them, so ``ui`` reaches the study through this door only (the contract
``ui-through-service`` in pyproject.toml lists no exception). A second store would hand out its own session here."""

from __future__ import annotations

from tui_rater.store.adjudication import Adjudication
from tui_rater.store.session import AnnotationSession

__all__ = ["Adjudication", "AnnotationSession"]

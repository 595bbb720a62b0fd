"""What the apps read on their worker threads beside the model they hold (the annotation app's
``AnnotationSession``, the adjudication app's ``Adjudication``), each on a connection of the worker's own: whether
anyone has committed since it last looked, the team's share done, whether its person may act for the whole study,
and what the adjudicator sees beside an item."""

from __future__ import annotations

from tui_rater.domain.values import ItemNote, Voice
from tui_rater.store.adjudication import item_notes, item_voices
from tui_rater.store.progress_reads import data_version
from tui_rater.store.roles import require_lead
from tui_rater.store.study import Study
from tui_rater.store.team import TeamPlan, team_share


def study_version(study: Study) -> int:
    """Changes when any connection (another process's too) has committed since: the app reads the team's share
    again only then (an idle session costs a read of the journal's header)."""
    return data_version(study)


def team_progress(study: Study, plan: TeamPlan) -> float:
    """The team's share of the plan done, its gold items counted like any other (the app's status line)."""
    return team_share(study, plan, count_gold=True)


def check_lead(study: Study, annotator: str | None, action: str) -> None:
    """One sentence (``UserError``) when the study names its leads and the app's annotator is not one of them."""
    require_lead(study, annotator, action, "--annotator")


def item_detail(study: Study, item_key: int) -> tuple[list[Voice], list[ItemNote]]:
    """An item's ratings in force and the notes people left on it (the adjudication app's detail pane)."""
    return item_voices(study, item_key), item_notes(study, item_key)

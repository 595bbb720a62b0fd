"""`tui-rater serve`: the annotators' personal links (made, or read back) and the book the web server reads them
from when each is used. ``Link`` is re-exported as the type the CLI announces."""

from __future__ import annotations

from typing import TYPE_CHECKING

from tui_rater.store.links import Link, LinkBook

if TYPE_CHECKING:
    from tui_rater.store.study import Study

__all__ = ["Link", "LinkBook", "annotator_links", "link_book"]


def annotator_links(study: Study, annotators: list[str], renew: bool) -> tuple[dict[str, Link], dict[str, Link]]:
    """(the links stored before, the links made now): a new one for each annotator without one (every one named
    with ``renew``; the old link of that name stops opening)."""
    from tui_rater.store.links import new_link, stored_links

    existing = stored_links(study)
    made = {name: new_link(study, name) for name in annotators if renew or name not in existing}
    return existing, made


def link_book(study: Study, task: str, annotators: list[str]) -> LinkBook:
    """What the server asks when a link is used: whose it is (read from the study each time)."""
    return LinkBook(study, task, annotators)

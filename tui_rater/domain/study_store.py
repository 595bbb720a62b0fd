"""What the layers above the store see of a study: ``StudyStore``, a ``typing.Protocol``.

``store.study.Study`` (one SQLite file) satisfies it, and mypy checks that it does (the end of ``store/study.py``).
It lives in the domain, not in ``store/``, so that the app and the services can name a study without importing the
SQLite store, and so that a second implementation (PostgreSQL, when a team outgrows one host: CONTRIBUTING.md,
"A second store") is written against it without importing SQLite either. It names the methods the layers above
call on a study, no more; the study's own database is private to the store. What the named store
functions of ``store/`` (the queue, team plans, leases, the report's reads) ask of a study beyond this is the rest
of a second store's work.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Protocol

from tui_rater.domain.tasks import Task, TaskRegistry
from tui_rater.domain.values import ChangeMarker, Item, ItemHead, Rater


class StudyStore(Protocol):
    """One study: its tasks, items, raters and ratings. Every method that writes commits before it returns."""

    path: Path  # where the study is (the SQLite file; a second store: what names it)

    def reopen(self) -> StudyStore:
        """A new connection to the same study, for another thread."""
        ...

    def close(self) -> None: ...

    def discard_if_empty(self) -> None:
        """Close, and remove the study when it holds nothing (what a failed first import created)."""
        ...

    # --- tasks
    @property
    def tasks(self) -> TaskRegistry: ...

    def task(self, name: str) -> Task: ...

    # --- items
    def item(self, key: int) -> Item: ...

    def items(self, task: str | None = None) -> list[Item]: ...

    def item_heads(self, task: str) -> list[ItemHead]: ...

    def items_of(self, keys: Sequence[int]) -> dict[int, Item]: ...

    def longest_items(self, task: str, count: int, first: int | None = None) -> list[Item]: ...

    def item_task_names(self) -> list[str]: ...

    def add_items(
        self, task: Task, rows: Iterable[dict[str, Any]], source: str = "", *, new_task: bool = False
    ) -> tuple[int, int]: ...

    # --- raters
    def human(self, name: str) -> Rater: ...

    def judge(self, name: str, config: dict[str, Any]) -> Rater: ...

    def existing_judge(self, name: str, config: dict[str, Any]) -> Rater | None: ...

    def adjudicator(self, name: str) -> Rater: ...

    def raters(self, kind: str | None = None) -> list[Rater]: ...

    # --- ratings
    def retract_rating(self, rating_id: int) -> None: ...

    def stray_human_samples(self, task: str | None = None) -> dict[str, int]: ...

    def judgements(self) -> list[dict[str, Any]]: ...

    def update_judgements(self, changes: list[tuple[int, float | None, str, dict[str, Any]]]) -> None: ...

    def change_marker(self) -> ChangeMarker:
        """Changes when a rating, a judge job or a rater changes; compared with ==, never looked into."""
        ...

    def info(self) -> dict[str, Any]: ...

"""Opening a study for a command: the file, its custom tasks, and the leads' rule checked before any change.

``Study`` is re-exported here as the type the layers above hold (they open it here and pass it back to the
service's use cases; they never import ``store``)."""

from __future__ import annotations

import contextlib
from pathlib import Path

from tui_rater.store.study import Study

__all__ = ["Study", "open_study"]


def open_study(
    path: str | Path,
    *,
    create: bool = True,
    shared: bool = False,
    task_files: list[str] | None = None,
    readonly: bool = False,
    who: str | None = None,
    action: str | None = None,
) -> Study:
    """The study file. ``readonly``: the caller only reads it, so it works on a file or folder the user may not
    write to. ``action``: the study-wide action about to run (a lead's, `tui-rater roles`), refused here for
    ``who`` when the study names leads and ``who`` is not one of them -- before anything is written."""
    study = Study.open(
        path, create=create and not readonly, shared=shared, task_files=task_files or [], readonly=readonly
    )
    if action is not None:
        from tui_rater.store.roles import require_lead

        try:
            require_lead(study, who, action)
        except BaseException:
            with contextlib.suppress(Exception):  # a failed close loses nothing committed; the refusal is the news
                study.close()
            raise
    return study

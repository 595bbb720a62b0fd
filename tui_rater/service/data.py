"""The data commands' use cases: items and ratings in from files, tables out to files (`import`,
`import-ratings`, `export`, `demo`). Each file is checked whole before the study changes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from tui_rater.store.table_files import ImportResult  # the result the CLI reads (a re-export, for typing)

if TYPE_CHECKING:
    from tui_rater.domain.tasks import Task
    from tui_rater.store.item_import import CheckedItems
    from tui_rater.store.study import Study

__all__ = ["ImportResult", "add_items", "check_export_target", "check_ratings_file", "export", "import_items_file"]

EXPORTS = ("items", "ratings", "judgements", "notes", "wide")


def import_items_file(study: Study, path: Path, task_name: str, mapping: list[str], ignore_extra: bool) -> ImportResult:
    """Items of ``task_name`` from a CSV/JSONL/Parquet file, columns renamed by ``mapping`` (``NEW=OLD``)."""
    from tui_rater.store.io import import_items, parse_mapping

    task = study.task(task_name)
    return import_items(study, path, task, parse_mapping(mapping), ignore_extra=ignore_extra)


def read_items(path: Path, task: Task, mapping: list[str], ignore_extra: bool) -> CheckedItems:
    """The file checked whole against ``task`` (one sentence on the first bad row), a batch of rows at a time:
    before a study is opened, so a bad file neither changes nor creates it. Nothing of it is kept but its
    columns: ``add_items`` reads it again as it writes (issue 35 item 3)."""
    from tui_rater.store.io import parse_mapping
    from tui_rater.store.item_import import check_items

    return check_items(path, task, parse_mapping(mapping), ignore_extra)


@dataclass(frozen=True)
class ItemsAdded:
    added: int
    skipped: int  # already present
    note: str | None  # a team plan that does not cover the new items


def add_items(study: Study, task: Task, items: CheckedItems, source: str, *, fresh: bool = False) -> ItemsAdded:
    """Add a checked file's items; ``fresh``: the study was created for them, and a failed import leaves no empty
    study."""
    from tui_rater.store.item_import import add_checked_items

    try:
        added, skipped = add_checked_items(study, items, source)
    except BaseException:
        if fresh:
            study.discard_if_empty()
        raise
    note = None
    if added:
        from tui_rater.store.team import unplanned_note

        note = unplanned_note(study, task.name) or None
    return ItemsAdded(added, skipped, note)


def check_ratings_file(path: Path) -> None:
    """A ratings file's encoding and header, before the study is opened (one sentence)."""
    from tui_rater.store.row_stream import stream_rows

    stream_rows(path)


def import_ratings_file(study: Study, path: Path, kind: str = "human") -> ImportResult:
    """Ratings from a file (people's, or a judge's: ``kind`` where the file has no 'kind' column)."""
    from tui_rater.store.io import import_ratings

    return import_ratings(study, path, default_kind=kind)


@dataclass(frozen=True)
class ExportRequest:
    what: str  # one of EXPORTS
    out: Path
    task: str | None = None
    raw_csv: bool = False


@dataclass(frozen=True)
class Exported:
    rows: int
    neutralised: int  # CSV cells that read as spreadsheet formulas, made inert


def check_export_target(out: Path) -> None:
    """The file's format from its name (one sentence), before the study is opened."""
    from tui_rater.store.table_files import file_format

    file_format(out)


def export(study: Study, request: ExportRequest) -> Exported:
    """Write a table of the study to ``request.out`` (never over a study or any SQLite file)."""
    from tui_rater.store.io import items_frame, ratings_frame, write_frame
    from tui_rater.store.outputs import check_output_target

    out, task, raw = request.out, request.task, request.raw_csv
    check_output_target(out, study.path)  # before the work
    if task:
        study.task(task)
    if request.what == "judgements":
        from tui_rater.store.judgements import write_judgements

        return Exported(*write_judgements(study, out, task, raw=raw))
    if request.what == "notes":
        from tui_rater.store.notes import notes_frame

        frame = notes_frame(study, task)
        return Exported(frame.height, write_frame(frame, out, like=study.path, raw=raw))
    if request.what == "wide":  # written a batch of items at a time (issue 35)
        from tui_rater.store.wide_export import write_wide

        return Exported(*write_wide(study, out, task, raw=raw))
    frame = {"items": items_frame, "ratings": ratings_frame}[request.what](study, task)
    return Exported(frame.height, write_frame(frame, out, like=study.path, raw=raw))

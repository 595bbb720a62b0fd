"""An items file imported in batches, in memory independent of its length (issue 35 item 3).

``io.prepare_items`` holds the whole file (its bytes, its text, a dict per row, an item per row): 678 MB for 200k
stories. Here the file is read three times through ``row_stream`` (a batch of rows at a time), with the sentences
and the order of sentences of the whole-file reader:

1. it is read through: an unreadable line or cell anywhere is told before anything else, as when the file was read
   whole, and a JSON Lines file's columns are every key of every line (``io.read_rows`` takes their union);
2. the header is checked, then every row is validated and its key (id, or text and system) looked up among those of
   the rows before it, kept in a temporary on-disk SQLite table rather than a dict of the whole file's keys;
3. the study is written, a batch at a time, in one transaction (``Study.add_item_batches``): an id already stored
   with another text rolls back every batch before it.

Nothing is written before step 3, so a bad row anywhere leaves the study (or its absence) as it was. Every format
is read a batch at a time: a Parquet file a slice of rows per batch through polars' lazy scan (``row_stream``).
A JSON array is not an accepted format (``table_files.FORMATS``).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tui_rater.domain.tasks import Task
from tui_rater.store.item_rows import ItemColumns
from tui_rater.store.row_stream import BATCH_ROWS, stream_rows
from tui_rater.store.study import Study
from tui_rater.store.table_files import file_format


@dataclass(frozen=True)
class CheckedItems:
    """An items file checked whole against a task (``check_items``); ``add_checked_items`` writes it."""

    path: Path
    task: Task
    columns: list[str]
    mapping: dict[str, str]
    ignore_extra: bool
    batch_rows: int = BATCH_ROWS

    def batches(self) -> Iterator[list[dict[str, Any]]]:
        """The file's rows as items, a batch at a time (each row validated again: the file is read again)."""
        plan = ItemColumns(self.path, self.columns, self.task, self.mapping, self.ignore_extra)
        _columns, batches = stream_rows(self.path, self.batch_rows)
        for rows in batches:
            yield [plan.item(row) for row in rows]


def check_items(
    path: Path, task: Task, mapping: dict[str, str], ignore_extra: bool, batch_rows: int = BATCH_ROWS
) -> CheckedItems:
    """Steps 1 and 2 of the module's doc: one sentence (a ``UserError``) on the file's first problem."""
    columns, batches = stream_rows(path, batch_rows)
    if file_format(path) == "jsonl":
        keys = dict.fromkeys(columns)  # the first batch's keys, read before its rows were numbered
        for rows in batches:
            for row in rows:
                keys.update(dict.fromkeys(row))
        columns = [c for c in keys if c != "_row" or c in columns]
    else:
        for _rows in batches:
            pass
    plan = ItemColumns(path, columns, task, mapping, ignore_extra)
    # The keys seen so far, in a private temporary database on disk (SQLite's "" file name): a dict of them
    # would grow with the file (about 150 bytes a key), the page cache of this one does not.
    with contextlib.closing(sqlite3.connect("")) as seen:
        seen.execute("CREATE TABLE seen (key TEXT PRIMARY KEY, row INTEGER NOT NULL) WITHOUT ROWID")
        _columns, batches = stream_rows(path, batch_rows)
        for rows in batches:
            for row in rows:
                item = plan.item(row)
                key = plan.key(item)
                if seen.execute("INSERT OR IGNORE INTO seen VALUES (?, ?)", (key, row["_row"])).rowcount == 0:
                    (first,) = seen.execute("SELECT row FROM seen WHERE key = ?", (key,)).fetchone()
                    raise plan.duplicate(item, row["_row"], first)
    return CheckedItems(path, task, columns, mapping, ignore_extra, batch_rows)


def add_checked_items(study: Study, checked: CheckedItems, source: str) -> tuple[int, int]:
    """Step 3: (added, already present)."""
    return study.add_item_batches(checked.task, checked.batches(), source=source)

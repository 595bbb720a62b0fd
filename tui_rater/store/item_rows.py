"""An items file's rows read as items: the header checked against the task (``--map``, missing and unknown
columns), each row's cells as text, a gold item's known answers, the key that makes two rows the same item. Shared
by the whole-file reader (``io.prepare_items``) and the streaming import (``item_import``), so both say the same
sentences; a module of its own so that ``item_import`` does not import ``io`` (which hands imports to it)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tui_rater.domain import protocols
from tui_rater.domain.errors import UserError
from tui_rater.domain.tasks import Attribute, Task
from tui_rater.store.study import content_hash
from tui_rater.store.table_files import OPTIONAL_ITEM_COLUMNS, _text, _value


class ItemColumns:
    """Which of a file's columns feed which of the task's names (checked against the header, one sentence on
    the first problem), and a row read through them as an item (``prepare_items`` and the streaming import,
    ``store/item_import.py``, share it so that both say the same sentences)."""

    def __init__(self, path: Path, columns: list[str], task: Task, mapping: dict[str, str], ignore_extra: bool):
        wanted = {name: mapping.get(name, name) for name in (*OPTIONAL_ITEM_COLUMNS, *task.fields)}
        unknown_targets = set(mapping) - set(wanted)
        if unknown_targets:
            raise UserError(
                f"--map names {sorted(unknown_targets)[0]!r}, which is not a column of task {task.name!r} "
                f"(it uses: {', '.join((*OPTIONAL_ITEM_COLUMNS, *task.fields))})"
            )
        missing = [
            f"{column!r}" + (f" (for {name})" if column != name else "")
            for name, column in wanted.items()
            if name in task.fields and column not in columns
        ]
        if missing:
            raise UserError(
                f"{path}: missing column {missing[0]} needed by task {task.name!r} "
                f"(the file has: {', '.join(columns)}; use --map NAME=COLUMN to rename)"
            )
        gold_columns = {f"{GOLD_PREFIX}{a.name}": a for a in task.attributes}
        extra = [c for c in columns if c not in wanted.values() and c not in gold_columns]
        if extra and not ignore_extra:
            raise UserError(
                f"{path}: unknown column {extra[0]!r} for task {task.name!r} "
                f"(expected {', '.join((*OPTIONAL_ITEM_COLUMNS, *task.fields))}; --ignore-extra skips others)"
            )
        self.path, self.task = path, task
        self.read = {name: column for name, column in wanted.items() if column in columns}
        self.gold = {column: attribute for column, attribute in gold_columns.items() if column in columns}

    def item(self, row: dict[str, Any]) -> dict[str, Any]:
        """The row as an item (``id``, ``system``, the task's fields, ``_row``, ``_gold``), or one sentence."""
        path, fields = self.path, self.task.fields
        item: dict[str, Any] = {
            name: _text(path, row, column, required=name in fields) for name, column in self.read.items()
        }
        item["_row"] = row["_row"]
        gold = {
            attribute.name: _gold(path, row, column, attribute)
            for column, attribute in self.gold.items()
            if not _blank(row.get(column))
        }
        if gold:
            item["_gold"] = gold
        if item.get("id") is not None:
            item["id"] = item["id"].strip()
            if not item["id"]:
                item["id"] = None
        if item.get("system") is not None and not item["system"].strip():
            item["system"] = None
        return item

    def key(self, item: dict[str, Any]) -> str:
        """What makes two rows of one file the same item: its id, or its text and system."""
        task = self.task
        return item.get("id") or content_hash(task.name, item.get("system"), {f: item[f] for f in task.fields})

    def duplicate(self, item: dict[str, Any], row: int, first: int) -> UserError:
        what = f"id {item['id']!r}" if item.get("id") else "item (same text and system)"
        return UserError(f"{self.path}, row {row}: duplicate {what}, first seen in row {first}")


GOLD_PREFIX = "gold_"  # a column gold_<question>: the item is a gold item with that known answer


def _blank(raw: object) -> bool:
    return raw is None or (isinstance(raw, str) and not raw.strip())


def _gold(path: Path, row: dict[str, Any], column: str, attribute: Attribute) -> float:
    """A gold item's known answer: an answer a person can give to the question (one sentence naming the cell
    otherwise). 4.5 on a 1-5 scale of whole points is on the scale, but nobody could ever match it."""
    value = _value(path, {"value": row.get(column), "_row": row["_row"]}, attribute, column)
    if not protocols.of(attribute).is_person_answer(attribute, value):
        points = ", ".join(f"{p:g}" for p in attribute.scale.points)
        raise UserError(
            f"{path}, row {row['_row']}, column {column!r}: {row.get(column)} is not an answer a person can give "
            f"to {attribute.name!r} (one of {points}), so no annotator could ever match it; nothing was imported"
        )
    return value

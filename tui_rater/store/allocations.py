"""A task's stratified draw (``assign --allocate``): which items people should rate next, chosen at random within
strata in the numbers of a Neyman allocation, stored with everything the report needs to weight them.

One draw per task. Its frame is every item the judge had rated when it was drawn, each with its stratum (by system,
or by the judge's confidence as it was then: the labels are stored, never recomputed, so a judge that rates more
later moves no item between strata); ``pilot`` marks the items people had rated before the draw; ``position`` the
drawn items' order. The settings repeat each stratum's size and allocation, and ``load_allocation`` checks the rows
against them: a file whose rows were altered is refused in one sentence rather than weighted wrongly.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

from tui_rater.domain.errors import UserError
from tui_rater.store.db import utc_now, write
from tui_rater.store.study import Study


@dataclass(frozen=True)
class StoredAllocation:
    task: str
    settings: dict[str, Any]
    created_at: str
    stratum_of: dict[int, str]  # the frame: item key -> its stratum
    pilot: frozenset[int]  # rated by people before the draw
    drawn: tuple[int, ...]  # the drawn items, in the order people are shown them


def has_allocation_tables(study: Study) -> bool:
    """False for a read-only file of a schema before stratified draws (it is read, never migrated)."""
    row = study._db.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'allocations'").fetchone()
    return row is not None


def load_allocation(study: Study, task: str) -> StoredAllocation | None:
    if not has_allocation_tables(study):
        return None
    conn = study._db.conn
    row = conn.execute("SELECT settings, created_at FROM allocations WHERE task = ?", [task]).fetchone()
    if row is None:
        return None
    settings = json.loads(row[0])
    stratum_of: dict[int, str] = {}
    pilot: set[int] = set()
    placed: list[tuple[int, int]] = []
    for key, stratum, is_pilot, position in conn.execute(
        "SELECT item_key, stratum, pilot, position FROM allocation_items WHERE task = ?", [task]
    ):
        stratum_of[key] = stratum
        if is_pilot:
            pilot.add(key)
        if position is not None:
            placed.append((position, key))
    placed.sort()
    found = StoredAllocation(task, settings, row[1], stratum_of, frozenset(pilot), tuple(k for _, k in placed))
    _check(found, [p for p, _ in placed])
    return found


def _check(found: StoredAllocation, positions: list[int]) -> None:
    """The rows agree with the settings they were stored with: each stratum's size, pilot and draw."""
    sizes = Counter(found.stratum_of.values())
    pilots = Counter(found.stratum_of[k] for k in found.pilot)
    drawn = Counter(found.stratum_of[k] for k in found.drawn)
    stated = {s["name"]: s for s in found.settings.get("strata", [])}
    problems = []
    if set(stated) != set(sizes):
        problems.append("its strata differ from those it was drawn with")
    for name, s in stated.items():
        if (sizes.get(name, 0), pilots.get(name, 0), drawn.get(name, 0)) != (s["items"], s["rated"], s["new"]):
            problems.append(f"stratum {name!r} no longer holds the items, pilot and draw it was made with")
    if positions != list(range(len(positions))):
        problems.append("its order has gaps")
    if problems:
        raise UserError(
            f"the stored stratified draw of task {found.task!r} is inconsistent ({problems[0]}): the file was altered; "
            "no estimate is weighted from it"
        )


def save_allocation(
    study: Study, task: str, settings: dict[str, Any], stratum_of: dict[int, str], pilot: set[int], drawn: list[int]
) -> StoredAllocation:
    """Store the draw in one transaction (a task has at most one)."""
    now = utc_now()
    position = {key: i for i, key in enumerate(drawn)}
    with write(study._db) as conn:
        conn.execute(
            "INSERT INTO allocations (task, settings, created_at) VALUES (?, ?, ?)",
            [task, json.dumps(settings, sort_keys=True), now],
        )
        conn.executemany(
            "INSERT INTO allocation_items (task, item_key, stratum, pilot, position) VALUES (?, ?, ?, ?, ?)",
            [(task, key, stratum, int(key in pilot), position.get(key)) for key, stratum in stratum_of.items()],
        )
    return StoredAllocation(task, settings, now, dict(stratum_of), frozenset(pilot), tuple(drawn))

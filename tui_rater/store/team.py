"""A team study's tables: who rates which items of a task, leases, gold items' known answers.

- ``team_plans``: one plan per task (``tui-rater assign``), ``fixed`` or ``dynamic``, with the settings
  and seed it was drawn with, so a restart continues it and a later ``assign --add`` extends it;
- ``assignments``: a fixed plan's items per annotator, and in both modes each annotator's gold items
  with their place in the stream (``slot``: a share of the way through);
- ``leases``: the dynamic mode's claims: an item is served to whoever comes next until it has K raters
  (ratings, or a lease not yet expired), as Prodigy's ``feed_overlap`` does;
- ``gold``: the known answers of gold (attention) items, imported from ``gold_<question>`` columns.

Gold items are items like any other on screen; they are left out of the agreement statistics and
verdicts (``gold_keys``), and each annotator's accuracy on them is in ``tui-rater progress``.
"""

from __future__ import annotations

import json
import math
import shlex
import time
from dataclasses import dataclass
from typing import Any

from tui_rater.domain.errors import UserError
from tui_rater.store.db import utc_now, write
from tui_rater.store.study import Study

MODES = ("fixed", "dynamic")
LEASE_S = 600.0  # a dynamic lease lasts ten minutes unless the plan says otherwise; each rating renews it
# a lease holds an item away from everyone else while one person rates it: a day is already a long lunch, and a
# longer one (or an infinite one) keeps a dropped annotator's item from the team for good
MAX_LEASE_S = 86400.0


def lease_problem(lease_s: object) -> str | None:
    """Why ``lease_s`` is no usable lease (None when it is): a NaN lease was stored as NULL and refused every
    save after it ("NOT NULL constraint failed: leases.until"); an infinite one held an item forever."""
    if isinstance(lease_s, bool) or not isinstance(lease_s, int | float) or not math.isfinite(lease_s):
        return f"a lease must be a finite number of seconds, not {lease_s!r}"
    if not 0 < lease_s <= MAX_LEASE_S:
        return f"a lease must last more than 0 and at most {MAX_LEASE_S:g} seconds (a day), not {lease_s:g}"
    return None


def check_lease(lease_s: object) -> None:
    """The store refuses an unusable lease whoever asks (a flag, a script, a plan stored before this check)."""
    problem = lease_problem(lease_s)
    if problem is not None:
        raise UserError(f"{problem}; a lead can store a usable one with `tui-rater assign --replace --lease SECONDS`")


@dataclass(frozen=True)
class TeamPlan:
    task: str
    mode: str
    settings: dict[str, Any]
    created_at: str

    @property
    def per_item(self) -> int:
        return int(self.settings.get("per_item", 1))

    @property
    def lease_s(self) -> float:
        return float(self.settings.get("lease_s", LEASE_S))


@dataclass(frozen=True)
class Assignment:
    rater_id: int
    item_key: int
    gold: bool = False
    slot: float = 0.0


def has_team_tables(study: Study) -> bool:
    """False for a read-only file of a schema before team studies (it is read, never migrated)."""
    row = study._db.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'team_plans'").fetchone()
    return row is not None


def load_team_plan(study: Study, task: str) -> TeamPlan | None:
    if not has_team_tables(study):
        return None
    row = study._db.conn.execute("SELECT mode, settings, created_at FROM team_plans WHERE task = ?", [task]).fetchone()
    return None if row is None else TeamPlan(task, row[0], json.loads(row[1]), row[2])


def save_team_plan(
    study: Study, task: str, mode: str, settings: dict[str, Any], assignments: list[Assignment], replace: bool = False
) -> TeamPlan:
    """Store a task's plan and its assignments in one transaction (``replace``: the old plan goes first;
    ratings are never touched)."""
    if mode not in MODES:
        raise ValueError(f"unknown plan mode {mode!r}")
    if "lease_s" in settings:
        check_lease(settings["lease_s"])
    now = utc_now()
    with write(study._db) as conn:
        if replace:
            conn.execute("DELETE FROM assignments WHERE task = ?", [task])
            conn.execute("DELETE FROM team_plans WHERE task = ?", [task])
        conn.execute(
            "INSERT INTO team_plans (task, mode, settings, created_at) VALUES (?, ?, ?, ?)",
            [task, mode, json.dumps(settings, sort_keys=True), now],
        )
        add_assignments(study, task, assignments)
    return TeamPlan(task, mode, settings, now)


def update_settings(study: Study, task: str, settings: dict[str, Any]) -> None:
    if "lease_s" in settings:
        check_lease(settings["lease_s"])
    with write(study._db) as conn:
        conn.execute("UPDATE team_plans SET settings = ? WHERE task = ?", [json.dumps(settings, sort_keys=True), task])


def add_assignments(study: Study, task: str, assignments: list[Assignment]) -> None:
    with write(study._db) as conn:
        conn.executemany(
            "INSERT INTO assignments (task, rater_id, item_key, gold, slot) VALUES (?, ?, ?, ?, ?)",
            [(task, a.rater_id, a.item_key, int(a.gold), a.slot) for a in assignments],
        )


def move_assignment(study: Study, task: str, item_key: int, from_rater: int, to_rater: int) -> None:
    with write(study._db) as conn:
        conn.execute(
            "UPDATE assignments SET rater_id = ? WHERE task = ? AND rater_id = ? AND item_key = ?",
            [to_rater, task, from_rater, item_key],
        )


def hand_over(
    study: Study, task: str, rater_id: int, moves: list[tuple[int, int]], dropped: list[int], settings: dict[str, Any]
) -> None:
    """One transaction: an annotator's items go to others (``moves``: item key, new rater id), their other
    unfinished ones (``dropped``) leave the plan, their leases go, and the plan's settings become ``settings``."""
    with write(study._db) as conn:
        conn.executemany(
            "UPDATE assignments SET rater_id = ? WHERE task = ? AND rater_id = ? AND item_key = ?",
            [(to_rater, task, rater_id, key) for key, to_rater in moves],
        )
        conn.executemany(
            "DELETE FROM assignments WHERE task = ? AND rater_id = ? AND item_key = ?",
            [(task, rater_id, key) for key in dropped],
        )
        conn.execute(
            "DELETE FROM leases WHERE rater_id = ? AND item_key IN (SELECT key FROM items WHERE task = ?)",
            [rater_id, task],
        )
        conn.execute("UPDATE team_plans SET settings = ? WHERE task = ?", [json.dumps(settings, sort_keys=True), task])


def assignments(study: Study, task: str, rater_id: int | None = None) -> list[Assignment]:
    if not has_team_tables(study):
        return []
    where, params = ("AND rater_id = ?", [task, rater_id]) if rater_id is not None else ("", [task])
    rows = study._db.conn.execute(
        f"SELECT rater_id, item_key, gold, slot FROM assignments WHERE task = ? {where} ORDER BY rater_id, item_key",
        params,
    ).fetchall()
    return [Assignment(r, k, bool(g), s) for r, k, g, s in rows]


def unplanned_keys(study: Study, task: str) -> list[int]:
    """A fixed plan's items nobody is assigned (imported after it was drawn), gold items aside, in import order:
    ``annotate`` serves them to nobody. A dynamic plan (or none) leaves no item out."""
    plan = load_team_plan(study, task)
    if plan is None or plan.mode != "fixed":
        return []
    rows = study._db.conn.execute(
        "SELECT key FROM items WHERE task = ? AND key NOT IN (SELECT item_key FROM assignments WHERE task = ?) "
        "AND key NOT IN (SELECT item_key FROM gold) ORDER BY position, key",
        [task, task],
    )
    return [key for (key,) in rows]


def unplanned_note(study: Study, task: str) -> str:
    """'' or one line: a fixed plan's items that nobody is assigned (imported after it was drawn) and what gives
    them to the team."""
    count = len(unplanned_keys(study, task))
    if not count:
        return ""
    return (
        f"{count} item(s) of {task!r} are outside its fixed plan (imported after it was drawn): nobody will be "
        f"served them; give them to the team with `tui-rater assign --task {shlex.quote(task)} --extend`"
    )


def check_member(plan: TeamPlan, annotator: str) -> None:
    team = plan.settings.get("annotators") or []
    if team and annotator not in team:
        raise UserError(
            f"{annotator!r} is not in the plan for {plan.task!r} (its annotators: {', '.join(team)}); a lead can "
            f"add them with `tui-rater assign --task {plan.task} --add {annotator}`"
        )


def team_members(study: Study, task: str) -> list[str]:
    """The plan's annotators, in the order they were named (those added later last)."""
    plan = load_team_plan(study, task)
    return list(plan.settings.get("annotators", [])) if plan is not None else []


# --- gold items ---------------------------------------------------------------------------------


def add_gold(study: Study, answers: dict[int, dict[str, float]]) -> None:
    with write(study._db) as conn:
        conn.executemany(
            "INSERT OR REPLACE INTO gold (item_key, attribute, value) VALUES (?, ?, ?)",
            [(key, attribute, value) for key, found in answers.items() for attribute, value in found.items()],
        )


def gold_answers(study: Study, task: str) -> dict[int, dict[str, float]]:
    """Item key -> question -> the known answer, for the task's gold items."""
    if not has_team_tables(study):
        return {}
    found: dict[int, dict[str, float]] = {}
    for key, attribute, value in study._db.conn.execute(
        "SELECT g.item_key, g.attribute, g.value FROM gold g JOIN items i ON i.key = g.item_key WHERE i.task = ?",
        [task],
    ):
        found.setdefault(key, {})[attribute] = value
    return found


def gold_left_out(study: Study, task: str | None = None) -> dict[str, tuple[int, int]]:
    """Task -> (gold items with ratings, their ratings): what the report leaves out of its statistics."""
    if not has_team_tables(study):
        return {}
    rows = study._db.conn.execute(
        "SELECT i.task, count(DISTINCT r.item_key), count(*) FROM ratings r JOIN items i ON i.key = r.item_key "
        "WHERE r.item_key IN (SELECT item_key FROM gold) AND r.retracted = 0 AND (? IS NULL OR i.task = ?) "
        "GROUP BY i.task ORDER BY i.task",
        [task, task],
    ).fetchall()
    return {name: (items, ratings) for name, items, ratings in rows}


def gold_keys(study: Study, task: str) -> set[int]:
    return set(gold_answers(study, task))


# --- the dynamic mode's leases --------------------------------------------------------------------


def raters_of(study: Study, item_key: int, rater_id: int, now: float) -> int:
    """Other people on an item: those with a rating of it (first ratings, not undone) or a live lease."""
    row = study._db.conn.execute(
        """SELECT count(*) FROM (
               SELECT r.rater_id FROM ratings r JOIN raters ra ON ra.id = r.rater_id
               WHERE r.item_key = ? AND r.rater_id != ? AND ra.kind = 'human' AND r.retracted = 0
                     AND r.retest_of IS NULL
               UNION
               SELECT rater_id FROM leases WHERE item_key = ? AND rater_id != ? AND until > ?)""",
        [item_key, rater_id, item_key, rater_id, now],
    ).fetchone()
    return int(row[0])


def others_per_item(study: Study, task: str, rater_id: int, now: float) -> dict[int, int]:
    """``raters_of`` for every item of a task at once (a session's start in the dynamic mode)."""
    rows = study._db.conn.execute(
        """SELECT item_key, count(DISTINCT rater_id) FROM (
               SELECT r.item_key, r.rater_id FROM ratings r JOIN items i ON i.key = r.item_key
               JOIN raters ra ON ra.id = r.rater_id
               WHERE i.task = ? AND r.rater_id != ? AND ra.kind = 'human' AND r.retracted = 0
                     AND r.retest_of IS NULL
               UNION
               SELECT l.item_key, l.rater_id FROM leases l JOIN items i ON i.key = l.item_key
               WHERE i.task = ? AND l.rater_id != ? AND l.until > ?)
           GROUP BY item_key""",
        [task, rater_id, task, rater_id, now],
    ).fetchall()
    return {key: int(n) for key, n in rows}


def claim(study: Study, item_key: int, rater_id: int, per_item: int, lease_s: float, now: float | None = None) -> bool:
    """Take (or renew) this rater's lease on an item, if fewer than ``per_item`` others are on it.

    Call inside a write transaction (the app's ``session.save`` takes ``BEGIN IMMEDIATE``): two
    annotators' claims are then decided one after the other, so no item gets more than K raters
    while their leases last. An item this rater has already rated stays theirs.
    """
    check_lease(lease_s)  # (a NaN until was stored as NULL: every later save failed on a constraint's words)
    now = time.time() if now is None else now
    mine = study._db.conn.execute(
        "SELECT 1 FROM ratings WHERE item_key = ? AND rater_id = ? AND retracted = 0 LIMIT 1", [item_key, rater_id]
    ).fetchone()
    if mine is None and raters_of(study, item_key, rater_id, now) >= per_item:
        return False
    with write(study._db) as conn:
        conn.execute(
            "INSERT OR REPLACE INTO leases (item_key, rater_id, until) VALUES (?, ?, ?)",
            [item_key, rater_id, now + lease_s],
        )
    return True


def live_leases(study: Study, task: str, now: float | None = None) -> dict[int, list[int]]:
    """Rater id -> the items they hold a lease on now."""
    now = time.time() if now is None else now
    found: dict[int, list[int]] = {}
    for rater_id, key in study._db.conn.execute(
        "SELECT l.rater_id, l.item_key FROM leases l JOIN items i ON i.key = l.item_key "
        "WHERE i.task = ? AND l.until > ?",
        [task, now],
    ):
        found.setdefault(rater_id, []).append(key)
    return found


# --- progress -----------------------------------------------------------------------------------


def complete_pairs(study: Study, task: str) -> set[tuple[int, int]]:
    """(rater id, item key) of every person who has answered every question of an item (first ratings in
    force, not undone)."""
    questions = len(study.task(task).attributes)
    rows = study._db.conn.execute(
        "SELECT r.rater_id, r.item_key FROM ratings r JOIN items i ON i.key = r.item_key "
        "JOIN raters ra ON ra.id = r.rater_id WHERE i.task = ? AND ra.kind = 'human' AND r.retracted = 0 "
        "AND r.retest_of IS NULL AND r.value IS NOT NULL AND r.sample = 0 "
        "GROUP BY r.rater_id, r.item_key HAVING count(DISTINCT r.attribute) >= ?",
        [task, questions],
    ).fetchall()
    return {(rater, key) for rater, key in rows}


def team_share(study: Study, plan: TeamPlan, *, count_gold: bool = False) -> float:
    """The share of the plan's work done: fixed, the assigned (person, item) pairs rated; dynamic, the K
    ratings each item needs (gold items aside: the lead's figure in ``progress``).

    ``count_gold``: each gold item assigned counts as one more (person, item) pair, like any other: the figure
    an annotator sees (the app's header). Without them, the team's share stood still after each gold item and
    rose after every other one, which told an annotator where the checks were (issue 36)."""
    pairs = complete_pairs(study, plan.task)
    gold = gold_keys(study, plan.task)
    planned = assignments(study, plan.task)
    gold_pairs = {(a.rater_id, a.item_key) for a in planned if a.gold} if count_gold else set()
    if plan.mode == "fixed":
        wanted = {(a.rater_id, a.item_key) for a in planned if not a.gold} | gold_pairs
        return len(wanted & pairs) / len(wanted) if wanted else 0.0
    keys = [item.key for item in study.item_heads(plan.task) if item.key not in gold]  # (no texts read)
    per_item: dict[int, int] = {}
    for _rater, key in pairs:
        per_item[key] = per_item.get(key, 0) + 1
    needed = len(keys) * plan.per_item + len(gold_pairs)
    done = sum(min(plan.per_item, per_item.get(k, 0)) for k in keys) + len(gold_pairs & pairs)
    return done / needed if needed else 0.0

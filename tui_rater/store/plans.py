"""An annotator's stored plan: the order of their showings of a task's items, kept so a restart continues it.

Two kinds, at most one of each per (annotator, task):

- ``retest`` (``annotate --retest P``): the session's order with a share P of the items shown a second
  time, blind and spaced (``store/retest.py`` builds it);
- ``uncertain`` (``annotate --order uncertain``): the items in the order of an active-sampling draw
  (Zrnic & Candès 2024), with the judge's uncertainty and the uniform draw of each item, from which
  the inclusion probability of every rated prefix follows (``service/planning.py``).

A plan is made once and read back on every later start with the same settings; the settings it was
made with are stored beside it, so a different request is noticed rather than silently mixed in.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from tui_rater.store.db import inserted_id, utc_now, write
from tui_rater.store.study import RATINGS_IN_FORCE, Study

KINDS = ("retest", "uncertain")


@dataclass(frozen=True)
class Showing:
    item_key: int
    retest: bool = False  # the item's second, blind showing
    uncertainty: float | None = None  # active sampling: the judge's uncertainty when the plan was drawn
    draw: float | None = None  # active sampling: the item's uniform draw U


@dataclass(frozen=True)
class Plan:
    id: int
    kind: str
    settings: dict[str, Any]
    created_at: str
    showings: list[Showing]


def load_plan(study: Study, rater_id: int, task: str, kind: str) -> Plan | None:
    row = study._db.conn.execute(
        "SELECT id, settings, created_at FROM plans WHERE rater_id = ? AND task = ? AND kind = ?",
        [rater_id, task, kind],
    ).fetchone()
    if row is None:
        return None
    showings = [
        Showing(item_key, bool(retest), uncertainty, draw)
        for item_key, retest, uncertainty, draw in study._db.conn.execute(
            "SELECT item_key, retest, uncertainty, draw FROM plan_showings WHERE plan_id = ? ORDER BY position",
            [row[0]],
        )
    ]
    return Plan(row[0], kind, json.loads(row[1]), row[2], showings)


def save_plan(
    study: Study, rater_id: int, task: str, kind: str, settings: dict[str, Any], showings: list[Showing]
) -> Plan:
    """Store a plan, replacing this annotator's plan of the same kind for the task, in one transaction."""
    if kind not in KINDS:
        raise ValueError(f"unknown plan kind {kind!r}")
    now = utc_now()
    with write(study._db) as conn:
        old = conn.execute(
            "SELECT id FROM plans WHERE rater_id = ? AND task = ? AND kind = ?", [rater_id, task, kind]
        ).fetchone()
        if old is not None:
            conn.execute("DELETE FROM plan_showings WHERE plan_id = ?", [old[0]])
            conn.execute("DELETE FROM plans WHERE id = ?", [old[0]])
        plan_id = inserted_id(
            conn.execute(
                "INSERT INTO plans (rater_id, task, kind, settings, created_at) VALUES (?, ?, ?, ?, ?)",
                [rater_id, task, kind, json.dumps(settings, sort_keys=True), now],
            )
        )
        conn.executemany(
            "INSERT INTO plan_showings (plan_id, position, item_key, retest, uncertainty, draw) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [
                (plan_id, position, s.item_key, int(s.retest), s.uncertainty, s.draw)
                for position, s in enumerate(showings)
            ],
        )
    return Plan(plan_id, kind, settings, now, list(showings))


# --- what an uncertain order is drawn from ------------------------------------------------------


def judges_of(study: Study, task: str) -> list[str]:
    """The LLM judges with ratings in force of this task's items, by name."""
    rows = study._db.conn.execute(
        f"SELECT DISTINCT ra.name FROM {RATINGS_IN_FORCE} WHERE i.task = ? AND ra.kind = 'llm' ORDER BY ra.name",
        [task],
    ).fetchall()
    return [name for (name,) in rows]


@dataclass
class JudgeReadings:
    """One judge's answers to one question of one item: its distributions (one per presentation, when
    the backend gave them) and every sampled value."""

    distributions: list[dict[str, float]]
    samples: list[float]


def judge_readings(study: Study, task: str, judge: str) -> dict[tuple[int, str], JudgeReadings]:
    """(item key, attribute) -> the judge's readings, from its ratings in force."""
    found: dict[tuple[int, str], JudgeReadings] = {}
    for item_key, attribute, value, details in study._db.conn.execute(
        f"""SELECT r.item_key, r.attribute, r.value, r.details FROM {RATINGS_IN_FORCE}
            WHERE i.task = ? AND ra.name = ? AND ra.kind = 'llm'
            ORDER BY r.item_key, r.attribute, r.presentation, r.sample""",
        [task, judge],
    ):
        entry = found.setdefault((item_key, attribute), JudgeReadings([], []))
        if value is not None:
            entry.samples.append(float(value))
        distribution = json.loads(details).get("distribution") if details else None
        if isinstance(distribution, dict) and distribution:
            entry.distributions.append({str(k): float(v) for k, v in distribution.items()})
    return found


def rated_items(study: Study, task: str, rater_id: int) -> set[int]:
    """Items of the task this rater has answered every question of (first ratings, not undone)."""
    questions = len(study.task(task).attributes)
    rows = study._db.conn.execute(
        "SELECT r.item_key, count(DISTINCT r.attribute) FROM ratings r JOIN items i ON i.key = r.item_key "
        "WHERE i.task = ? AND r.rater_id = ? AND r.retracted = 0 AND r.retest_of IS NULL AND r.value IS NOT NULL "
        "AND r.sample = 0 "  # a person's rating under another sample is never in force (store/study.py)
        "GROUP BY r.item_key",
        [task, rater_id],
    ).fetchall()
    return {key for key, n in rows if n >= questions}

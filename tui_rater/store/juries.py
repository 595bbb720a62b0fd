"""Juries: derived judges made from other judges' stored ratings (``tui-rater jury``), with no model calls.

A jury is stored as a rater of kind 'llm' whose ``config`` holds ``{"jury": {...}}``: its name, the aggregation
rule, the task it is for (or every task), and its members -- each by rater name, label and identity (the SHA-256
of the member's stored configuration, or of its name for a judge whose ratings were imported). The jury's own
identity (``config_hash``) is the hash of all of that, so a jury of other members or another rule is another
judge. A jury stores no ratings: its values are computed from the members' ratings in force each time a report
or the live pane reads the study (``stats/jury.py``), so it follows new member ratings without being rebuilt.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from tui_rater.domain.details import Details
from tui_rater.domain.errors import UserError
from tui_rater.store.db import inserted_id, utc_now, write
from tui_rater.store.study import RATINGS_IN_FORCE, Study

JURY_KEY = "jury"
AGGREGATES = ("mean", "median", "vote", "distribution")
JURY_PREFIX = "jury:"  # a jury's rater name is jury:NAME; its label (what reports call it) is NAME
MAX_JURY_NAME = 40  # as a --judge-name: a label is read in a table column


@dataclass(frozen=True)
class Member:
    name: str  # the member's rater name
    label: str  # what reports call it
    identity: str  # SHA-256 of its stored configuration (or of its name, for imported ratings)


@dataclass(frozen=True)
class Jury:
    id: int
    label: str
    aggregate: str
    task: str | None  # None: every task its members rated
    members: tuple[Member, ...]
    config_hash: str

    def applies_to(self, task: str) -> bool:
        return self.task is None or self.task == task

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "label": self.label,
            "aggregate": self.aggregate,
            "task": self.task,
            "members": [m.__dict__ for m in self.members],
            "identity": self.config_hash,
        }


def member_identity(name: str, config_hash: str | None) -> str:
    return config_hash or hashlib.sha256(f"imported:{name}".encode()).hexdigest()


def _is_jury(config: Any) -> bool:
    return isinstance(config, dict) and isinstance(config.get(JURY_KEY), dict)


def _load(rid: int, label: str, config_text: str | None, config_hash: str | None) -> Jury | None:
    try:
        config = json.loads(config_text) if config_text else None
    except ValueError:
        return None
    if not isinstance(config, dict) or not _is_jury(config):
        return None
    found = config[JURY_KEY]
    members = tuple(Member(m["name"], m["label"], m["identity"]) for m in found["members"])
    return Jury(rid, label, found["aggregate"], found.get("task"), members, config_hash or "")


def list_juries(study: Study) -> list[Jury]:
    """Every jury of the study, in the order they were made. One cheap statement: the report calls it each time."""
    rows = study._db.conn.execute(
        "SELECT id, coalesce(label, name), config, config_hash FROM raters "
        "WHERE kind = 'llm' AND config LIKE '%\"jury\"%' ORDER BY id"
    ).fetchall()
    return [jury for row in rows if (jury := _load(*row)) is not None]


def jury_ids(study: Study) -> set[int]:
    return {jury.id for jury in list_juries(study)}


def create_jury(study: Study, name: str, members: list[tuple[int, str, str]], aggregate: str, task: str | None) -> Jury:
    """Store a jury of ``members`` ((rater id, rater name, label), in the order given: the order breaks a vote's
    ties). Refused in one sentence when the name or label is taken."""
    conn = study._db.conn
    listed = []
    for rid, member_name, label in members:
        row = conn.execute("SELECT config_hash FROM raters WHERE id = ?", [rid]).fetchone()
        listed.append({"name": member_name, "label": label, "identity": member_identity(member_name, row[0])})
    rule = {"name": name, "aggregate": aggregate, "task": task, "members": listed}
    config_json = json.dumps({JURY_KEY: rule}, sort_keys=True)
    config_hash = hashlib.sha256(config_json.encode()).hexdigest()
    with write(study._db) as conn:
        taken = conn.execute(
            "SELECT 1 FROM raters WHERE name = ? OR label = ? OR name = ?", [JURY_PREFIX + name, name, name]
        ).fetchone()
        if taken:
            raise UserError(f"{name!r} is already the name of a rater or jury in {study.path}; choose another name")
        cur = conn.execute(
            "INSERT INTO raters (name, kind, config, config_hash, created_at, label) VALUES (?, 'llm', ?, ?, ?, ?)",
            [JURY_PREFIX + name, config_json, config_hash, utc_now(), name],
        )
        rid = inserted_id(cur)
    members_t = tuple(Member(m["name"], m["label"], m["identity"]) for m in listed)
    return Jury(rid, name, aggregate, task, members_t, config_hash)


def is_person(study: Study, name: str) -> bool:
    """Is NAME (a name or label) one of the study's people rather than a judge?"""
    row = study._db.conn.execute(
        "SELECT 1 FROM raters WHERE kind != 'llm' AND (name = ? OR label = ?)", [name, name]
    ).fetchone()
    return row is not None


def find_jury(study: Study, wanted: str) -> Jury:
    juries = list_juries(study)
    for jury in juries:
        if wanted in (jury.label, JURY_PREFIX + jury.label):
            return jury
    listed = ", ".join(repr(j.label) for j in juries) or "none"
    raise UserError(f"no jury {wanted!r} in {study.path} (its juries: {listed})")


def forget_jury(study: Study, jury: Jury) -> None:
    """Remove the jury's definition (it owns no ratings or jobs; its values were never stored)."""
    with write(study._db) as conn:
        conn.execute("DELETE FROM raters WHERE id = ?", [jury.id])


def forget_member_and_juries(study: Study, judge: Any, juries: list[Jury]) -> Any:
    """Forget a judge (``store/judges.forget_judge``) and the juries made from it, in one transaction."""
    from tui_rater.store.judges import forget_judge

    with write(study._db) as conn:
        for jury in juries:
            conn.execute("DELETE FROM raters WHERE id = ?", [jury.id])
        return forget_judge(study, judge)


def juries_of_member(study: Study, member_name: str) -> list[Jury]:
    """The juries made (in part) from this rater: forgetting it leaves them without a member."""
    return [jury for jury in list_juries(study) if any(m.name == member_name for m in jury.members)]


def member_distributions(study: Study, task: str, attribute: str, labels: list[str]) -> list[tuple[Any, ...]]:
    """(member label, item key, presentation, the distribution pass's options -> probability as JSON text, the
    member's prompt variant) of each distribution pass in force of one question: the pass's facts are kept with
    sample 0 (``domain/modes.py``), so one row per (item, member, presentation)."""
    if not labels:
        return []
    return study._db.conn.execute(
        f"""SELECT coalesce(ra.label, ra.name), r.item_key, r.presentation,
                   json_extract(r.details, '$.{Details.DISTRIBUTION}'),
                   CASE WHEN json_valid(ra.config) AND json_type(ra.config, '$.variant') = 'text'
                        THEN json_extract(ra.config, '$.variant') ELSE 'plain' END
            FROM {RATINGS_IN_FORCE}
            WHERE i.task = ? AND r.attribute = ? AND r.sample = 0
                  AND coalesce(ra.label, ra.name) IN ({",".join("?" * len(labels))})
                  AND r.details LIKE '%"{Details.DISTRIBUTION}"%' AND json_valid(r.details)
                  AND json_type(r.details, '$.{Details.DISTRIBUTION}') = 'object'""",
        [task, attribute, *labels],
    ).fetchall()


def has_distributions(study: Study, rater_id: int, task: str | None) -> bool:
    """Has this judge any stored distribution pass (of the task, when one is given)?"""
    task_clause = " AND r.item_key IN (SELECT key FROM items WHERE task = ?)" if task else ""
    row = study._db.conn.execute(
        f"SELECT 1 FROM ratings r WHERE r.rater_id = ? AND r.retracted = 0 AND r.sample = 0 "
        f"AND r.details LIKE '%\"{Details.DISTRIBUTION}\"%'{task_clause} LIMIT 1",
        [rater_id, *([task] if task else [])],
    ).fetchone()
    return row is not None

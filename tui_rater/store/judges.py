"""The study's judges with their provenance: configuration, labels, sources, counts (``tui-rater judges``).

Each LLM rater is one judge configuration; its ``config`` is the provenance stored when it was made
(``judge.spec.provenance``: model file and SHA-256 or API model and base URL without credentials,
mode, variant, sampling, seed, library versions; never a key). ``judge_sources`` adds what was
only known while it ran: the model file's path, and the model id and ``system_fingerprint`` the
server reported, one row per distinct source (a change mid-run is a second row).
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import asdict, dataclass, field
from typing import Any

from tui_rater.store.db import utc_now, write
from tui_rater.store.jobs import counts_by_rater
from tui_rater.store.labels import is_configured
from tui_rater.store.study import RATINGS_IN_FORCE, Study


def record_sources(study: Study, rater_id: int, found: list[tuple[str, str, str]]) -> None:
    """Count one job against each (source, served model, fingerprint); a new one gets its own row."""
    now = utc_now()
    with write(study._db) as conn:
        conn.executemany(
            "INSERT INTO judge_sources (rater_id, source, served_model, system_fingerprint, jobs, first_seen, "
            "last_seen) VALUES (?, ?, ?, ?, 1, ?, ?) ON CONFLICT (rater_id, source, served_model, system_fingerprint) "
            "DO UPDATE SET jobs = jobs + 1, last_seen = excluded.last_seen",
            [(rater_id, source, model, fingerprint, now, now) for source, model, fingerprint in found],
        )


def record_server(study: Study, rater_id: int, source: str, facts: dict[str, Any]) -> None:
    """What the server said about the model behind the alias; a change is a new row beside the old one."""
    text = json.dumps(facts, sort_keys=True)
    with write(study._db) as conn:
        conn.execute(
            "INSERT OR IGNORE INTO judge_servers (rater_id, source, facts, first_seen) VALUES (?, ?, ?, ?)",
            (rater_id, source, text, utc_now()),
        )


def servers(study: Study, rater_id: int) -> list[tuple[str, dict[str, Any]]]:
    """(server URL, what it said) for one judge, oldest first."""
    return [
        (source, _config(facts))
        for source, facts in study._db.conn.execute(
            "SELECT source, facts FROM judge_servers WHERE rater_id = ? ORDER BY first_seen, source", (rater_id,)
        )
    ]


@dataclass(frozen=True)
class Source:
    source: str  # the model file's path, or the server's URL without credentials
    served_model: str  # the model id the server reported ('' when it said none)
    system_fingerprint: str  # '' when the server sent none
    jobs: int
    first_seen: str
    last_seen: str


@dataclass(frozen=True)
class Judge:
    id: int
    label: str  # what reports and the live pane call it
    name: str  # the rater's full name (unique; `queue --rater` takes it)
    created_at: str
    configured: bool  # False: imported ratings, or a rater stored by name: no provenance of a run
    config: dict[str, Any]
    sources: list[Source] = field(default_factory=list)
    ratings: int = 0  # ratings in force with a value
    failures: int = 0  # ratings in force stored as a typed failure (no value)
    jobs: dict[str, int] = field(default_factory=dict)  # the judge queue, per status
    # what an API judge's server said about the model behind its alias: (URL, facts), one per change
    servers: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    @property
    def source_changed(self) -> bool:
        """The judge's replies came from more than one model id / fingerprint (or file, or server)."""
        return len(self.sources) > 1

    def as_dict(self) -> dict[str, Any]:
        found = asdict(self)
        found["source_changed"] = self.source_changed
        found["is_jury"] = isinstance(self.config.get("jury"), dict)  # derived from other judges (`tui-rater jury`)
        return found


def _config(text: str | None) -> dict[str, Any]:
    try:
        config = json.loads(text) if text else {}
    except ValueError:
        return {"unreadable": text}
    return config if isinstance(config, dict) else {"unreadable": text}


def legend(study: Study) -> list[tuple[int, str, str, int]]:
    """(id, label, rater name, number of sources) of every judge: what a report's legend needs, cheaply
    (the live pane rebuilds its report on every change)."""
    return [
        (rid, label or name, name, sources)
        for rid, label, name, sources in study._db.conn.execute(
            "SELECT ra.id, ra.label, ra.name, (SELECT count(*) FROM judge_sources s WHERE s.rater_id = ra.id) "
            "FROM raters ra WHERE ra.kind = 'llm' ORDER BY ra.id"
        )
    ]


def list_judges(study: Study) -> list[Judge]:
    """Every LLM judge of the study, in the order they were made, with its sources and counts."""
    conn = study._db.conn
    counts = {
        rid: (ok, failed)
        for rid, ok, failed in conn.execute(
            f"""SELECT r.rater_id, sum(r.value IS NOT NULL), sum(r.value IS NULL)
                FROM {RATINGS_IN_FORCE} WHERE ra.kind = 'llm' GROUP BY r.rater_id"""
        )
    }
    jobs = counts_by_rater(study)
    sources: dict[int, list[Source]] = {}
    for row in conn.execute(
        "SELECT rater_id, source, served_model, system_fingerprint, jobs, first_seen, last_seen FROM judge_sources "
        "ORDER BY rater_id, first_seen, source, served_model, system_fingerprint"
    ):
        sources.setdefault(row[0], []).append(Source(*row[1:]))
    found = []
    for rid, name, label, config_text, created in conn.execute(
        "SELECT id, name, label, config, created_at FROM raters WHERE kind = 'llm' ORDER BY id"
    ):
        config = _config(config_text)
        ok, failed = counts.get(rid, (0, 0))
        statuses = {status: jobs.get(rid, {}).get(status, 0) for status in JOB_STATUSES}
        found.append(
            Judge(
                rid,
                label or name,
                name,
                created,
                is_configured("llm", config),
                config,
                sources.get(rid, []),
                ok or 0,
                failed or 0,
                statuses,
                servers(study, rid),
            )
        )
    return found


JOB_STATUSES = ("queued", "leased", "batched", "done", "failed", "cancelled")


# --- forgetting a judge (`tui-rater judges --forget`) -------------------------------------------------------------

# what a judge owns, in the order it is removed (a note names a rating, a rating its job; the rater row goes last)
_OWNED = ("notes", "ratings", "jobs", "judge_sources", "replies")


@dataclass(frozen=True)
class Footprint:
    """What forgetting a judge removes: rows per table."""

    judge: Judge
    rows: dict[str, int]

    def describe(self) -> str:
        """``120 ratings, 40 jobs, 1 source, 37 cached replies``."""
        names = [("ratings", "rating", "ratings"), ("jobs", "job", "jobs"), ("judge_sources", "source", "sources")]
        names.append(("replies", "cached reply", "cached replies"))
        return ", ".join(
            f"{self.rows.get(table, 0)} {one if self.rows.get(table, 0) == 1 else many}" for table, one, many in names
        )


def find_judge(study: Study, wanted: str) -> Judge:
    """A judge by its label (``J2 qwen text``), its number alone (``J2``) or its full name; one sentence if none."""
    from tui_rater.domain.errors import UserError

    judges = list_judges(study)
    found = [j for j in judges if wanted in (j.label, j.name)] or [
        j for j in judges if j.label.split(" ", 1)[0] == wanted
    ]
    if len(found) != 1:
        person = study._db.conn.execute(
            "SELECT 1 FROM raters WHERE kind != 'llm' AND (name = ? OR label = ?)", [wanted, wanted]
        ).fetchone()
        if person:
            raise UserError(f"{wanted!r} is an annotator, not a judge; only judges can be forgotten")
        listed = ", ".join(repr(j.label) for j in judges) or "none"
        raise UserError(f"no judge {wanted!r} in {study.path} (its judges: {listed})")
    return found[0]


def _owned_tables(conn: sqlite3.Connection) -> list[str]:
    """Tables holding rows of a rater (``rater_id``): the known ones first, then any a later schema adds."""
    tables = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
    with_rater = [t for t in tables if any(c[1] == "rater_id" for c in conn.execute(f"PRAGMA table_info({t})"))]
    return [t for t in _OWNED if t in with_rater] + [t for t in with_rater if t not in _OWNED and t != "raters"]


def footprint(study: Study, judge: Judge) -> Footprint:
    conn = study._db.conn
    return Footprint(
        judge,
        {t: conn.execute(f"SELECT count(*) FROM {t} WHERE rater_id = ?", [judge.id]).fetchone()[0]
         for t in _owned_tables(conn)},
    )  # fmt: skip


def forget_judge(study: Study, judge: Judge) -> Footprint:
    """Remove a judge and everything it owns, in one transaction: reports, the live pane and ``judges`` no longer
    know it. Refused while another process holds its jobs (a run in progress)."""
    from tui_rater.domain.errors import UserError

    with write(study._db) as conn:
        leased = conn.execute(
            "SELECT count(*) FROM jobs WHERE rater_id = ? AND status = 'leased'", [judge.id]
        ).fetchone()[0]
        if leased:
            raise UserError(
                f"judge {judge.label!r} is running ({leased} jobs in progress); stop it first, then forget it"
            )
        removed = {}
        for table in _owned_tables(conn):
            removed[table] = conn.execute(f"DELETE FROM {table} WHERE rater_id = ?", [judge.id]).rowcount
        conn.execute("DELETE FROM raters WHERE id = ? AND kind = 'llm'", [judge.id])
    return Footprint(judge, removed)

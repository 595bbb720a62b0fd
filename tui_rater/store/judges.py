"""The study's judges with their provenance: configuration, labels, sources, counts (``tui-rater judges``).

Each LLM rater is one judge configuration; its ``config`` is the provenance stored when it was made
(``judge.spec.provenance``: model file and SHA-256 or API model and base URL without credentials,
mode, variant, sampling, seed, library versions; never a key). ``judge_sources`` adds what was
only known while it ran: the model file's path, and the model id and ``system_fingerprint`` the
server reported, one row per distinct source (a change mid-run is a second row).
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

from tui_rater.store.db import utc_now, write
from tui_rater.store.labels import is_configured
from tui_rater.store.study import Study


def record_sources(study: Study, rater_id: int, found: list[tuple[str, str, str]]) -> None:
    """Count one job against each (source, served model, fingerprint); a new one gets its own row."""
    now = utc_now()
    with write(study.db) as conn:
        conn.executemany(
            "INSERT INTO judge_sources (rater_id, source, served_model, system_fingerprint, jobs, first_seen, "
            "last_seen) VALUES (?, ?, ?, ?, 1, ?, ?) ON CONFLICT (rater_id, source, served_model, system_fingerprint) "
            "DO UPDATE SET jobs = jobs + 1, last_seen = excluded.last_seen",
            [(rater_id, source, model, fingerprint, now, now) for source, model, fingerprint in found],
        )


def record_server(study: Study, rater_id: int, source: str, facts: dict[str, Any]) -> None:
    """What the server said about the model behind the alias; a change is a new row beside the old one."""
    text = json.dumps(facts, sort_keys=True)
    with write(study.db) as conn:
        conn.execute(
            "INSERT OR IGNORE INTO judge_servers (rater_id, source, facts, first_seen) VALUES (?, ?, ?, ?)",
            (rater_id, source, text, utc_now()),
        )


def servers(study: Study, rater_id: int) -> list[tuple[str, dict[str, Any]]]:
    """(server URL, what it said) for one judge, oldest first."""
    return [
        (source, _config(facts))
        for source, facts in study.db.conn.execute(
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
        for rid, label, name, sources in study.db.conn.execute(
            "SELECT ra.id, ra.label, ra.name, (SELECT count(*) FROM judge_sources s WHERE s.rater_id = ra.id) "
            "FROM raters ra WHERE ra.kind = 'llm' ORDER BY ra.id"
        )
    ]


def list_judges(study: Study) -> list[Judge]:
    """Every LLM judge of the study, in the order they were made, with its sources and counts."""
    conn = study.db.conn
    counts = {
        rid: (ok, failed)
        for rid, ok, failed in conn.execute(
            """SELECT r.rater_id, sum(r.value IS NOT NULL), sum(r.value IS NULL)
               FROM ratings r JOIN (SELECT max(id) AS id FROM ratings WHERE retracted = 0 AND retest_of IS NULL
                                    GROUP BY item_key, attribute, rater_id, presentation, sample) latest
                    ON latest.id = r.id
               GROUP BY r.rater_id"""
        )
    }
    jobs: dict[int, dict[str, int]] = {}
    for rid, status, n in conn.execute("SELECT rater_id, status, count(*) FROM jobs GROUP BY rater_id, status"):
        jobs.setdefault(rid, {})[status] = n
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


JOB_STATUSES = ("queued", "leased", "done", "failed", "cancelled")

"""The rows a certificate hashes (``tui-rater certify``, ``domain/certificate.py``): one task's items, ratings,
the judges' replies, jobs, raters, plans, team plan, assignments and gold, each row as plain values.

Rows name items by their id and raters by their name (what a reader of the study sees), beside the internal keys a
rating and a job are known by. Times a row was written are kept (they are part of the data); times that change
while nothing changes (a lease's expiry, a job's last update) are not.
"""

from __future__ import annotations

import json
from typing import Any

from tui_rater.store.study import Study

Rows = list[tuple[Any, dict[str, Any]]]  # (key, row), one table


def _json(text: str | None) -> Any:
    try:
        return json.loads(text) if text else None
    except ValueError:
        return {"unreadable": text}


def certified_rows(study: Study, task: str) -> dict[str, Rows]:
    """Every row of ``task`` a certificate hashes, per table, with each row's key."""
    conn = study._db.conn
    tables: dict[str, Rows] = {}
    tables["items"] = [
        (item_id, {"id": item_id, "system": system, "fields": _json(fields), "position": position})
        for item_id, system, fields, position in conn.execute(
            "SELECT id, system, fields, position FROM items WHERE task = ?", [task]
        )
    ]
    ratings: Rows = []
    replies: Rows = []
    for row in conn.execute(
        """SELECT r.id, i.id, r.attribute, ra.name, ra.kind, r.sample, r.presentation, r.value, r.parse_status,
                  r.seconds, r.created_at, r.job_id, r.revises, r.retracted, r.retest_of, r.raw, r.details
           FROM ratings r JOIN items i ON i.key = r.item_key JOIN raters ra ON ra.id = r.rater_id
           WHERE i.task = ?""",
        [task],
    ):
        rid, item_id, attribute, rater, kind, sample, presentation, value, status = row[:9]
        seconds, created_at, job_id, revises, retracted, retest_of, raw, details = row[9:]
        ratings.append(
            (
                rid,
                {
                    "id": rid,
                    "item": item_id,
                    "attribute": attribute,
                    "rater": rater,
                    "rater_kind": kind,
                    "sample": sample,
                    "presentation": presentation,
                    "value": value,
                    "parse_status": status,
                    "seconds": seconds,
                    "created_at": created_at,
                    "job": job_id,
                    "revises": revises,
                    "retracted": retracted,
                    "retest_of": retest_of,
                },
            )
        )
        if job_id is not None or raw is not None or details is not None:
            # the judge's reply and what was read from it (the distribution): a table of their own, so that a
            # changed reply is told apart from a changed value
            replies.append(
                (
                    rid,
                    {
                        "rating": rid,
                        "job": job_id,
                        "item": item_id,
                        "attribute": attribute,
                        "raw": raw,
                        "details": _json(details),
                    },
                )
            )
    tables["ratings"] = ratings
    tables["judge_replies"] = replies
    tables["jobs"] = [
        (
            job_id,
            {
                "id": job_id,
                "item": item_id,
                "attribute": attribute,
                "rater": rater,
                "sample": sample,
                "presentation": presentation,
                "status": status,
                "error_kind": error_kind,
            },
        )
        for job_id, item_id, attribute, rater, sample, presentation, status, error_kind in conn.execute(
            """SELECT j.id, i.id, j.attribute, ra.name, j.sample, j.presentation, j.status, j.error_kind
               FROM jobs j JOIN items i ON i.key = j.item_key JOIN raters ra ON ra.id = j.rater_id
               WHERE i.task = ?""",
            [task],
        )
    ]
    tables["raters"] = [
        (name, {"name": name, "kind": kind, "label": label, "config": _json(config), "created_at": created_at})
        for name, kind, label, config, created_at in conn.execute(
            """SELECT name, kind, label, config, created_at FROM raters ra WHERE EXISTS
               (SELECT 1 FROM ratings r JOIN items i ON i.key = r.item_key WHERE r.rater_id = ra.id AND i.task = ?)""",
            [task],
        )
    ]
    tables["plans"] = _plans(study, task)
    tables["team_plan"] = [
        (task, {"mode": mode, "settings": _json(settings), "created_at": created_at})
        for mode, settings, created_at in conn.execute(
            "SELECT mode, settings, created_at FROM team_plans WHERE task = ?", [task]
        )
    ]
    tables["assignments"] = [
        ([rater, item_id], {"rater": rater, "item": item_id, "gold": gold, "slot": slot})
        for rater, item_id, gold, slot in conn.execute(
            """SELECT ra.name, i.id, a.gold, a.slot FROM assignments a JOIN raters ra ON ra.id = a.rater_id
               JOIN items i ON i.key = a.item_key WHERE a.task = ?""",
            [task],
        )
    ]
    tables["gold"] = [
        ([item_id, attribute], {"item": item_id, "attribute": attribute, "value": value})
        for item_id, attribute, value in conn.execute(
            "SELECT i.id, g.attribute, g.value FROM gold g JOIN items i ON i.key = g.item_key WHERE i.task = ?",
            [task],
        )
    ]
    return tables


def _plans(study: Study, task: str) -> Rows:
    """Each annotator's stored plan (retest, uncertain order) with its settings -- its seed -- and its showings."""
    conn = study._db.conn
    plans: Rows = []
    for plan_id, rater, kind, settings, created_at in conn.execute(
        "SELECT p.id, ra.name, p.kind, p.settings, p.created_at FROM plans p JOIN raters ra ON ra.id = p.rater_id "
        "WHERE p.task = ?",
        [task],
    ):
        showings = [
            [item_id, retest, uncertainty, draw]
            for item_id, retest, uncertainty, draw in conn.execute(
                "SELECT i.id, s.retest, s.uncertainty, s.draw FROM plan_showings s JOIN items i ON i.key = s.item_key "
                "WHERE s.plan_id = ? ORDER BY s.position",
                [plan_id],
            )
        ]
        row = {"annotator": rater, "kind": kind, "settings": _json(settings), "created_at": created_at}
        plans.append(([rater, kind], {**row, "showings": showings}))
    return plans


def item_ids(study: Study, task: str) -> dict[int, str]:
    """item key -> the item's id, for one task."""
    return dict(study._db.conn.execute("SELECT key, id FROM items WHERE task = ?", [task]).fetchall())


def model_files(study: Study, rater_name: str) -> list[str]:
    """The model files a local judge's replies came from, as the study recorded them (``judge_sources``)."""
    return [
        source
        for (source,) in study._db.conn.execute(
            "SELECT s.source FROM judge_sources s JOIN raters ra ON ra.id = s.rater_id WHERE ra.name = ? "
            "ORDER BY s.first_seen, s.source",
            [rater_name],
        )
    ]


def judge_sources(study: Study, rater_name: str) -> list[dict[str, Any]]:
    """What a judge's replies came from, without the machine's paths: a model file's name, or the server's URL
    (stored without credentials), with the model it said it served and its fingerprint."""
    return [
        {"source_name": _source_name(source), "served_model": model, "system_fingerprint": fp}
        for source, model, fp in study._db.conn.execute(
            "SELECT s.source, s.served_model, s.system_fingerprint FROM judge_sources s JOIN raters ra "
            "ON ra.id = s.rater_id WHERE ra.name = ? ORDER BY s.source, s.served_model, s.system_fingerprint",
            [rater_name],
        )
    ]


def _source_name(source: str) -> str:
    if source.startswith(("http://", "https://")):
        return source
    return source.replace("\\", "/").rstrip("/").rsplit("/", 1)[-1]


def done_jobs(study: Study, task: str, rater_name: str) -> list[tuple[int, int, str, int, str, int]]:
    """(job id, item key, attribute, sample, presentation, attempts) of a judge's done jobs on ``task``, by id."""
    return [
        tuple(row)
        for row in study._db.conn.execute(
            """SELECT j.id, j.item_key, j.attribute, j.sample, j.presentation, j.attempts FROM jobs j
               JOIN items i ON i.key = j.item_key JOIN raters ra ON ra.id = j.rater_id
               WHERE i.task = ? AND ra.name = ? AND j.status = 'done' ORDER BY j.id""",
            [task, rater_name],
        )
    ]


def job_ratings(study: Study, job_id: int) -> list[tuple[str, int, float | None, str | None, str, Any]]:
    """(attribute, sample, value, raw reply, parse status, details) of the ratings one job stored."""
    return [
        (attribute, sample, value, raw, status, _json(details))
        for attribute, sample, value, raw, status, details in study._db.conn.execute(
            "SELECT attribute, sample, value, raw, parse_status, details FROM ratings WHERE job_id = ? "
            "ORDER BY attribute, sample",
            [job_id],
        )
    ]

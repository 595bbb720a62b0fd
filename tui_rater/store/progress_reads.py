"""The reads behind `progress`, team plans and a few report sections, named (issue 31 item 2: every query
outside ``store/`` becomes a named store function; the layers above see the study through functions, never its
connection). Each is the statement its caller used to run, unchanged."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from tui_rater.store.retest import RETEST_NOTE
from tui_rater.store.study import RATINGS_IN_FORCE, Study
from tui_rater.store.team import assignments


def people_who_rated(study: Study, task: str) -> list[str]:
    """The people (kind human) with a rating on an item of ``task``, by name."""
    rows = study._db.conn.execute(
        "SELECT DISTINCT ra.name FROM ratings r JOIN items i ON i.key = r.item_key JOIN raters ra ON "
        "ra.id = r.rater_id WHERE i.task = ? AND ra.kind = 'human' ORDER BY ra.name",
        [task],
    )
    return [name for (name,) in rows]


def people_values(study: Study, task: str) -> Iterator[tuple[int, str, str, float]]:
    """(item key, question, person's name, value) of every person's rating in force with a value."""
    yield from study._db.conn.execute(
        f"SELECT r.item_key, r.attribute, ra.name, r.value FROM {RATINGS_IN_FORCE} "
        "WHERE i.task = ? AND r.value IS NOT NULL AND ra.kind = 'human'",
        [task],
    )


def skipped_and_flagged(study: Study, task: str, rater_id: int | None) -> tuple[set[int], set[int]]:
    """(items a rater skipped, items they flagged), notes in force. A skip made on an item's retest showing (its
    text is ``RETEST_NOTE``) marks that showing, not the item: it is no skip here."""
    rows = study._db.conn.execute(
        "SELECT n.kind, n.item_key, n.text FROM notes n JOIN items i ON i.key = n.item_key "
        "WHERE i.task = ? AND n.rater_id = ? AND n.kind IN ('skip', 'flag') AND n.retracted_at IS NULL",
        [task, rater_id],
    ).fetchall()
    skipped = {key for kind, key, text in rows if kind == "skip" and text != RETEST_NOTE}
    flagged = {key for kind, key, _text in rows if kind == "flag"}
    return skipped, flagged


def planned_items(study: Study, task: str, rater_id: int | None) -> tuple[set[int], set[int]]:
    """(the items a plan gives a rater, of them the gold ones); none for somebody the study does not know."""
    mine = assignments(study, task, rater_id) if rater_id is not None else []
    return {a.item_key for a in mine}, {a.item_key for a in mine if a.gold}


def seconds_per_item(study: Study, task: str, rater_id: int | None) -> dict[int, float]:
    """Item key -> the seconds a rater spent on it (ratings in force, retests left out)."""
    rows = study._db.conn.execute(
        "SELECT r.item_key, sum(r.seconds) FROM ratings r JOIN items i ON i.key = r.item_key WHERE i.task = ? "
        "AND r.rater_id = ? AND r.retracted = 0 AND r.retest_of IS NULL AND r.seconds IS NOT NULL "
        "GROUP BY r.item_key",
        [task, rater_id],
    )
    return {key: total for key, total in rows}


def last_activity(study: Study, task: str, rater_id: int | None) -> str | None:
    """When a rater last rated or wrote a note on ``task`` (None: never)."""
    last: str | None
    (last,) = study._db.conn.execute(
        "SELECT max(t) FROM (SELECT max(r.created_at) AS t FROM ratings r JOIN items i ON i.key = r.item_key "
        "WHERE i.task = ? AND r.rater_id = ? UNION ALL SELECT max(n.created_at) FROM notes n "
        "JOIN items i ON i.key = n.item_key WHERE i.task = ? AND n.rater_id = ?)",
        [task, rater_id, task, rater_id],
    ).fetchone()
    return last


def retest_differences(study: Study, task: str, rater_id: int | None) -> list[float]:
    """|second − first| of each of a rater's retests in force."""
    rows = study._db.conn.execute(
        "SELECT abs(second.value - first.value) FROM ratings second JOIN ratings first ON first.id = second.retest_of "
        "JOIN items i ON i.key = second.item_key WHERE i.task = ? AND second.value IS NOT NULL "
        "AND first.value IS NOT NULL AND second.id IN (SELECT max(id) FROM ratings WHERE rater_id = ? "
        "AND retest_of IS NOT NULL AND retracted = 0 GROUP BY item_key, attribute)",  # the retest in force
        [task, rater_id],
    )
    return [gap for (gap,) in rows]


def started_pairs(study: Study, task: str) -> set[tuple[int, int]]:
    """(rater id, item key) of every item a rater has started on: a rating in force, or a note (a skip or a flag
    is work done too)."""
    return {
        (rater, key)
        for rater, key in study._db.conn.execute(
            "SELECT DISTINCT r.rater_id, r.item_key FROM ratings r JOIN items i ON i.key = r.item_key "
            "WHERE i.task = ? AND r.retracted = 0 UNION SELECT n.rater_id, n.item_key FROM notes n "
            "JOIN items i ON i.key = n.item_key WHERE i.task = ?",
            [task, task],
        )
    }


def item_prompts(study: Study, task: str) -> dict[int, str]:
    """Item key -> its `prompt` field ("" where it has none)."""
    rows = study._db.conn.execute("SELECT key, json_extract(fields, '$.prompt') FROM items WHERE task = ?", [task])
    return {int(key): prompt if isinstance(prompt, str) else "" for key, prompt in rows}


def field_text_batches(study: Study, task: str, field: str, size: int = 20_000) -> Iterator[list[tuple[int, Any]]]:
    """(item key, the text of one field of the item: None where it has none), the task's items by key, a batch at a
    time: one field read by SQLite's JSON, not every item decoded into an ``Item`` (the report's word counts).
    A field whose name JSON's path cannot quote (a ``"`` or ``\\`` in it) is read from the decoded items."""
    if '"' in field or "\\" in field:
        keys = [key for (key,) in study._db.conn.execute("SELECT key FROM items WHERE task = ? ORDER BY key", [task])]
        for start in range(0, len(keys), size):
            items = study.items_of(keys[start : start + size])
            yield [(k, items[k].fields.get(field)) for k in keys[start : start + size] if k in items]
        return
    cursor = study._db.conn.execute(
        "SELECT key, json_extract(fields, ?) FROM items WHERE task = ? ORDER BY key", [f'$."{field}"', task]
    )
    while batch := cursor.fetchmany(size):
        yield batch


def item_ids_of(study: Study, task: str, keys: Sequence[int]) -> dict[int, str]:
    """Item key -> the item's id, of these keys of the task's items (``item_ids`` reads them all)."""
    found: dict[int, str] = {}
    for start in range(0, len(keys), 500):  # bound values at a time (``Study.items_of``)
        chunk = list(keys[start : start + 500])
        marks = ",".join("?" * len(chunk))
        sql = f"SELECT key, id FROM items WHERE task = ? AND key IN ({marks})"
        found.update(study._db.conn.execute(sql, [task, *chunk]).fetchall())
    return found


def item_ids(study: Study, task: str) -> dict[int, str]:
    """Item key -> the item's id."""
    return dict(study._db.conn.execute("SELECT key, id FROM items WHERE task = ?", [task]).fetchall())


def report_notes(study: Study, task: str) -> list[tuple[str, int, str, str, str, str | None, str | None]]:
    """(kind, item key, item id, system, rater label, question, text) of the flags and the comments with text in
    force, flags first, in item order."""
    rows: list[tuple[str, int, str, str, str, str | None, str | None]] = study._db.conn.execute(
        """SELECT n.kind, i.key, i.id, coalesce(i.system, '-'), ra.label, n.attribute, n.text
           FROM notes n JOIN items i ON i.key = n.item_key JOIN raters ra ON ra.id = n.rater_id
           WHERE i.task = ? AND n.kind IN ('flag', 'comment') AND n.retracted_at IS NULL
             AND (n.kind = 'flag' OR coalesce(n.text, '') != '')
           ORDER BY n.kind DESC, i.position, n.id""",
        [task],
    ).fetchall()
    return rows


def data_version(study: Study) -> int:
    """SQLite's data_version: changes when any connection (another process's too) has committed since."""
    (version,) = study._db.conn.execute("PRAGMA data_version").fetchone()
    return int(version)

"""A task's ratings in force as columns (issue 35 item 2): one query per table, the rows going into polars columns
in large batches, and "in force" (the newest rating of each item, question, rater, presentation and sample) chosen
over those columns -- not by SQLite's ``GROUP BY`` over the whole table (``study.RATINGS_IN_FORCE``: its grouping
alone was 2 s of a 100k study's read) and not through a Python object per rating.

The rows are read through the study's own ``sqlite3`` connection in batches of 100,000 into polars. Not through
Apache Arrow's ADBC SQLite driver, though it read 160k ratings in 0.10-0.14 CPU-s against 0.25 here: it links a
second copy of SQLite into the process, and closing its connection drops every POSIX lock this process holds on
the file -- another process then took the write lock while the app was inside a write transaction (tested in
``tests/store/test_one_sqlite.py``; SQLite's "How To Corrupt An SQLite Database File", section 2.2.1).

The result is the report's frame (``stats/sections/data.py:load_all``) to the row and the bit: the same filters
(people and judges, gold items left out, a person's rating only under sample 0, retests apart, ``excluded`` people),
in the order SQLite's grouping gave it (item, question, rater id, presentation, sample).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import polars as pl

from tui_rater.domain.details import Details
from tui_rater.store.study import Study
from tui_rater.store.team import has_team_tables

# the ratings in force are the newest (highest id) of each of these; the report's frame is in their order
GROUP = ("item_key", "attribute", "rater_id", "presentation", "sample")

_RATINGS_SCHEMA = {
    "rating_id": pl.Int64,
    "item_key": pl.Int64,
    "rater_id": pl.Int64,
    "attribute": pl.Utf8,
    "presentation": pl.Utf8,
    "sample": pl.Int64,
    "value": pl.Float64,
}
_READINGS_SCHEMA = {"parse_status": pl.Utf8, "no_mass": pl.Int64, "mass": pl.Float64, "mass_on": pl.Utf8}
_ITEMS_SCHEMA = {"item_key": pl.Int64, "system": pl.Utf8}
# rows fetched as Python tuples at a time, then columns: what the read holds in Python objects does not grow with the
# study (tests/stats/test_load_columns.py), and a batch is large enough that its Python call costs nothing
_BATCH_ROWS = 20_000


def _literal(text: str) -> str:
    # the statements are built as text (the ratings' and the items' alike): a quoted SQL string, '' its only escape
    return "'" + text.replace("'", "''") + "'"


def _mass(llm: str) -> str:
    """The probability a judge's pass put on the answers it was asked for, a number or NULL: the expression of
    ``readings.task_rating_batches``, kept to real numbers (its reader's ``_number``) so each column has one type."""

    def number(expression: str) -> str:
        return f"(CASE WHEN typeof({expression}) IN ('integer', 'real') THEN CAST({expression} AS REAL) END)"

    mass, p_yes, p_no = (f"json_extract(details, '$.{key}')" for key in (Details.MASS, Details.P_YES, Details.P_NO))
    return f"""(CASE WHEN {llm} AND details LIKE '%"{Details.MASS}"%' AND json_valid(details) THEN {number(mass)}
                     WHEN {llm} AND details LIKE '%"{Details.P_YES}"%' AND json_valid(details)
                     THEN {number(f"{p_yes} + {p_no}")} END)"""


def _statement(task: str, readings: bool, other_tasks: bool) -> str:
    llm = "rater_id IN (SELECT id FROM raters WHERE kind = 'llm')"
    extra = ""
    if readings:
        # a column the driver finds no number in until after its first batch is an error (its type is taken from
        # there): the mass, mostly none, is a flag and a 0.0; a value, mostly there, is read as it is
        mass = _mass(llm)
        extra = f""", parse_status, {mass} IS NULL, ifnull({mass}, 0.0),
            CASE WHEN NOT {llm} OR NOT json_valid(details) THEN ''
                 WHEN details LIKE '%"{Details.MASS}"%' THEN (CASE WHEN raw IS NULL THEN 'scale' ELSE 'constrained' END)
                 WHEN details LIKE '%"{Details.P_YES}"%' THEN 'yes_no' ELSE '' END"""
    # the task's items, where the study has another task's (a look-up per rating: 15 % of the read)
    task_only = f" AND item_key IN (SELECT key FROM items WHERE task = {_literal(task)})" if other_tasks else ""
    return f"""SELECT id, item_key, rater_id, attribute, presentation, sample, value{extra}
               FROM ratings WHERE retracted = 0 AND retest_of IS NULL{task_only}"""


def _read_rows(study: Study, sql: str, schema: dict[str, Any]) -> pl.DataFrame:
    cursor = study._db.conn.execute(sql)
    frames = [pl.DataFrame(schema=schema)]
    while batch := cursor.fetchmany(_BATCH_ROWS):
        frames.append(pl.DataFrame(batch, schema=schema, orient="row"))
    return pl.concat(frames, rechunk=True)


def read_columns(study: Study, task: str, *, readings: bool = False) -> pl.DataFrame:
    """Every stored rating of the task not undone and not a retest, as columns (``_RATINGS_SCHEMA``, and
    ``_READINGS_SCHEMA`` with ``readings``). (Questions and presentations as small codes from SQL ``CASE`` were
    tried: SQLite's comparisons cost more than the strings.)"""
    schema = _RATINGS_SCHEMA | (_READINGS_SCHEMA if readings else {})
    # two seeks in the index of items by task, not a scan
    (other_tasks,) = study._db.conn.execute(
        "SELECT EXISTS (SELECT 1 FROM items WHERE task < ?) OR EXISTS (SELECT 1 FROM items WHERE task > ?)",
        [task, task],
    ).fetchone()
    return _read_rows(study, _statement(task, readings, bool(other_tasks)), schema)


def task_items(study: Study, task: str) -> pl.DataFrame:
    """The task's items: item_key, system ('-' for none), by key."""
    sql = f"SELECT key, coalesce(system, '-') FROM items WHERE task = {_literal(task)} ORDER BY key"
    return _read_rows(study, sql, _ITEMS_SCHEMA)


def task_prompts(study: Study, task: str) -> pl.DataFrame:
    """The task's items: item_key, prompt (its ``prompt`` field where that is text, else ''), by key -- the pairing
    of two systems' items by prompt (``stats/sections/bias_corrected.py``) as columns."""
    sql = f"""SELECT key, CASE WHEN typeof(prompt) = 'text' THEN prompt ELSE '' END
              FROM (SELECT key, json_extract(fields, '$.prompt') AS prompt FROM items WHERE task = {_literal(task)})
              ORDER BY key"""
    return _read_rows(study, sql, {"item_key": pl.Int64, "prompt": pl.Utf8})


def ratings_in_force(
    study: Study,
    task: str,
    excluded: Sequence[str] = (),
    *,
    readings: bool = False,
    items: pl.DataFrame | None = None,
) -> pl.DataFrame:
    """The task's ratings in force of its people and judges, gold items left out: item_key, system, attribute,
    rater (its label), kind, presentation, sample, value (null: no value), rating_id, and with ``readings``
    parse_status, mass (null: none), mass_on (null: none) -- ``readings.task_rating_batches``'s rows as columns, in
    its order. ``excluded``: people (by name) whose ratings are left out. ``items``: ``task_items``, if read."""
    rows = read_columns(study, task, readings=readings)
    # in force: the newest of each group (``study.ratings_in_force``), the last of its run once sorted by group and
    # id (strings sort by their bytes, as SQLite's BINARY collation; a window's max over the groups cost 4x this);
    # every filter below keeps or drops whole groups (each is one item, one rater, one sample), so it may come
    # after the choice, as SQLite's does
    rows = rows.sort([*GROUP, "rating_id"])
    changes = [pl.col(c) != pl.col(c).shift(-1) for c in GROUP]
    rows = rows.filter(pl.any_horizontal(changes).fill_null(True))
    raters = study._db.conn.execute("SELECT id, label, kind, name FROM raters").fetchall()
    ids = [r[0] for r in raters]

    def of_rater(i: int) -> pl.Expr:
        return pl.col("rater_id").replace_strict(ids, [r[i] for r in raters], default=None, return_dtype=pl.Utf8)

    rows = rows.with_columns(of_rater(1).alias("rater"), of_rater(2).alias("kind"), of_rater(3).alias("name"))
    kept = pl.col("kind").is_in(["human", "llm"]) & ((pl.col("sample") == 0) | (pl.col("kind") != "human"))
    if excluded:
        kept &= ~((pl.col("kind") == "human") & pl.col("name").is_in(list(excluded)))
    if has_team_tables(study):
        gold = [key for (key,) in study._db.conn.execute("SELECT DISTINCT item_key FROM gold")]
        if gold:
            kept &= ~pl.col("item_key").is_in(gold)
    rows = rows.filter(kept)
    items = task_items(study, task) if items is None else items
    system = pl.col("item_key").replace_strict(items["item_key"], items["system"], default="-", return_dtype=pl.Utf8)

    columns = [
        pl.col("item_key"),
        system.alias("system"),
        pl.col("attribute"),
        pl.col("rater"),
        pl.col("kind"),
        pl.col("presentation"),
        pl.col("sample"),
        pl.col("value"),
        pl.col("rating_id"),
    ]
    if readings:
        columns += [
            pl.col("parse_status"),
            pl.when((pl.col("no_mass") == 0) & pl.col("mass").is_finite()).then(pl.col("mass")).alias("mass"),
            pl.when(pl.col("mass_on") != "").then(pl.col("mass_on")).alias("mass_on"),
        ]
    return rows.select(columns)

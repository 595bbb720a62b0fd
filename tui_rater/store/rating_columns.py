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

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
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
_RATING_CODES = ("attribute", "presentation")
_READING_CODES = ("attribute", "presentation", "parse_status", "mass_on")
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


def _statement(task: str, readings: bool, other_tasks: bool, judges: bool | None = None) -> str:
    """The ratings' statement; ``judges``: True for the judges' rows alone, False for everyone else's, None for all.
    With ``readings``, the judges' rows carry their readings' mass; the others' (``judges=False``) only their
    stored parse status (no mass: the expressions below cost a judge's row 2-3x a plain one, issue 35)."""
    llm = "rater_id IN (SELECT id FROM raters WHERE kind = 'llm')"
    who = {None: "", True: f" AND {llm}", False: f" AND NOT {llm}"}[judges]
    extra = ""
    if readings and judges is False:
        extra = ", parse_status"
    elif readings:
        # a column the driver finds no number in until after its first batch is an error (its type is taken from
        # there): the mass, mostly none, is a flag and a 0.0; a value, mostly there, is read as it is
        is_llm = "1" if judges else llm  # the judges' rows alone: every row is a judge's
        mass = _mass(is_llm)
        extra = f""", parse_status, {mass} IS NULL, ifnull({mass}, 0.0),
            CASE WHEN NOT {is_llm} OR NOT json_valid(details) THEN ''
                 WHEN details LIKE '%"{Details.MASS}"%' THEN (CASE WHEN raw IS NULL THEN 'scale' ELSE 'constrained' END)
                 WHEN details LIKE '%"{Details.P_YES}"%' THEN 'yes_no' ELSE '' END"""
    # the task's items, where the study has another task's (a look-up per rating: 15 % of the read)
    task_only = f" AND item_key IN (SELECT key FROM items WHERE task = {_literal(task)})" if other_tasks else ""
    return f"""SELECT id, item_key, rater_id, attribute, presentation, sample, value{extra}
               FROM ratings WHERE retracted = 0 AND retest_of IS NULL{task_only}{who}"""


def _read_rows(study: Study, sql: str, schema: dict[str, Any], codes: Sequence[str] = ()) -> pl.DataFrame:
    """The statement's rows as columns; ``codes``: string columns kept as categorical codes, a batch at a time (4
    bytes a row, not a 16-byte string view: a question's or a status's few distinct strings repeated 1.6M times
    were half of a 100k study's columns while they were read, issue 35)."""
    cursor = study._db.conn.execute(sql)

    def coded(frame: pl.DataFrame) -> pl.DataFrame:
        return frame.with_columns(pl.col(c).cast(pl.Categorical) for c in codes) if codes else frame

    frames = [coded(pl.DataFrame(schema=schema))]
    while batch := cursor.fetchmany(_BATCH_ROWS):
        frames.append(coded(pl.DataFrame(batch, schema=schema, orient="row")))
    return pl.concat(frames, rechunk=False)  # the rows in force are gathered from the chunks once (``_in_force``)


def _read_coded(study: Study, task: str, readings: bool) -> pl.DataFrame:
    """``read_columns`` with its string columns as categorical codes (``_read_rows``)."""
    if not readings:
        sql = _statement(task, False, _other_tasks(study, task))
        return _read_rows(study, sql, _RATINGS_SCHEMA, _RATING_CODES)
    others, judged = _read_parts(study, task)
    others = others.with_columns(
        pl.lit(1, dtype=pl.Int64).alias("no_mass"),
        pl.lit(0.0, dtype=pl.Float64).alias("mass"),
        pl.lit("", dtype=pl.Utf8).cast(pl.Categorical).alias("mass_on"),
    )
    return pl.concat([others, judged], rechunk=False)


def _other_tasks(study: Study, task: str) -> bool:
    # two seeks in the index of items by task, not a scan
    (other_tasks,) = study._db.conn.execute(
        "SELECT EXISTS (SELECT 1 FROM items WHERE task < ?) OR EXISTS (SELECT 1 FROM items WHERE task > ?)",
        [task, task],
    ).fetchone()
    return bool(other_tasks)


def _read_parts(study: Study, task: str, people_status: bool = True) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the others' rows -- the people's -- with their parse status where ``people_status``; the judges' rows with
    their readings), coded. The readings' mass only on the judges' rows: a person's row read with it took 2x as
    long (issue 35)."""
    other_tasks = _other_tasks(study, task)
    if people_status:
        plain = _RATINGS_SCHEMA | {"parse_status": pl.Utf8}
        others = _read_rows(study, _statement(task, True, other_tasks, judges=False), plain, _READING_CODES[:3])
    else:
        sql = _statement(task, False, other_tasks, judges=False)
        others = _read_rows(study, sql, _RATINGS_SCHEMA, _RATING_CODES)
    schema = _RATINGS_SCHEMA | _READINGS_SCHEMA
    judged = _read_rows(study, _statement(task, True, other_tasks, judges=True), schema, _READING_CODES)
    return others, judged


def read_columns(study: Study, task: str, *, readings: bool = False) -> pl.DataFrame:
    """Every stored rating of the task not undone and not a retest, as columns (``_RATINGS_SCHEMA``, and
    ``_READINGS_SCHEMA`` with ``readings``), in no particular order (with ``readings``: the people's rows, then the
    judges'). (Questions and presentations as small codes from SQL ``CASE`` were tried: SQLite's comparisons cost
    more than the strings.)"""
    coded = _read_coded(study, task, readings)
    return coded.with_columns(pl.col(c).cast(pl.Utf8) for c in coded.columns if coded.schema[c] == pl.Categorical)


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


def _in_force(
    study: Study, task: str, excluded: Sequence[str], readings: bool, items: pl.DataFrame | None
) -> tuple[pl.DataFrame, list[pl.Expr]]:
    """(the rows in force, kept, with their string columns as codes; the expressions of ``ratings_in_force``'s
    columns over them, each string column categorical)."""
    rows = _read_coded(study, task, readings)
    rows = rows[_chosen(study, rows, excluded)]
    return rows, _columns(study, task, items, readings)


def _raters(study: Study) -> list[tuple[Any, ...]]:
    return study._db.conn.execute("SELECT id, label, kind, name FROM raters").fetchall()


def _chosen(study: Study, rows: pl.DataFrame, excluded: Sequence[str]) -> pl.Series | np.ndarray:
    """The indices of the rows in force and kept, in the group's order."""
    raters = _raters(study)
    # the people and the judges by their ids (a person's rating only under sample 0; ``excluded`` people left out)
    people = [r[0] for r in raters if r[2] == "human" and r[3] not in set(excluded)]
    judges = [r[0] for r in raters if r[2] == "llm"]
    kept = pl.col("rater_id").is_in(judges) | (pl.col("rater_id").is_in(people) & (pl.col("sample") == 0))
    if has_team_tables(study):
        gold = [key for (key,) in study._db.conn.execute("SELECT DISTINCT item_key FROM gold")]
        if gold:
            kept &= ~pl.col("item_key").is_in(gold)
    # in force: the newest of each group (``study.ratings_in_force``), the last of its run once sorted by group and
    # id (strings sort by their bytes, as SQLite's BINARY collation: a coded column sorts by its strings' rank; a
    # window's max over the groups cost 4x this). ``kept`` keeps or drops whole groups (each is one item, one rater,
    # one sample), so it may come before the choice. Only the group's columns and each row's index are sorted, and
    # the rows in force gathered once: sorting every column was most of a 100k study's peak memory (issue 35)
    group = [_by_string(rows, c) if rows.schema[c] == pl.Categorical else pl.col(c) for c in GROUP]
    return _newest(rows.select(*group, "rating_id", kept.alias("kept")))


def _columns(study: Study, task: str, items: pl.DataFrame | None, readings: bool) -> list[pl.Expr]:
    """The expressions of ``ratings_in_force``'s columns over the coded rows, each string column categorical."""
    raters = _raters(study)
    ids = [r[0] for r in raters]

    def of_rater(i: int) -> pl.Expr:
        names = pl.Series([r[i] for r in raters], dtype=pl.Utf8).cast(pl.Categorical)
        return pl.col("rater_id").replace_strict(ids, names, default=None, return_dtype=pl.Categorical)

    items = task_items(study, task) if items is None else items
    systems = items["system"].cast(pl.Categorical)
    dash = pl.lit("-", dtype=pl.Utf8).cast(pl.Categorical)
    system = pl.col("item_key").replace_strict(items["item_key"], systems, default=dash, return_dtype=pl.Categorical)
    columns = [
        pl.col("item_key"),
        system.alias("system"),
        pl.col("attribute"),
        of_rater(1).alias("rater"),
        of_rater(2).alias("kind"),
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
    return columns


def _as_text(columns: list[pl.Expr]) -> list[pl.Expr]:
    return [column.cast(pl.Utf8) if i in _CODED else column for i, column in enumerate(columns)]


# the categorical ones among ``_in_force``'s columns: system, attribute, rater, kind, presentation, parse_status,
# mass_on
_CODED = (1, 2, 3, 4, 5, 9, 11)


def _newest(keyed: pl.DataFrame) -> pl.Series | np.ndarray:
    """The rows (their indices) in force, in the group's order: of each group (``GROUP``, every column a number) of
    the kept rows, the one with the highest rating_id.

    The group's columns as one integer, each column a digit of its own base (its values less its least), sorted with
    the rating id by numpy: the same order as sorting by the columns, in two integer columns -- a sort of the six
    columns held their copy and polars' row encoding of them at once (issue 35: a 100k study's peak memory). Where
    the digits do not fit in 62 bits, polars sorts the columns."""
    kept = keyed["kept"].to_numpy()
    columns = [keyed[c].to_numpy().astype(np.int64, copy=False) for c in GROUP]
    lows = [int(c.min()) if len(c) else 0 for c in columns]
    bases = [int(c.max()) - low + 1 if len(c) else 1 for c, low in zip(columns, lows, strict=True)]
    if math.prod(bases) >= 2**62:
        in_order = keyed.with_row_index("row").filter(pl.col("kept")).sort([*GROUP, "rating_id"])
        changes = [pl.col(c) != pl.col(c).shift(-1) for c in GROUP]
        return in_order.select(pl.col("row").filter(pl.any_horizontal(changes).fill_null(True)))["row"]
    rows = np.nonzero(kept)[0]
    key = np.zeros(len(rows), dtype=np.int64)
    for column, low, base in zip(columns, lows, bases, strict=True):
        key = key * base + (column[rows] - low)
    order = np.lexsort((keyed["rating_id"].to_numpy()[rows], key))
    key = key[order]
    last = np.ones(len(key), dtype=bool)
    last[:-1] = key[:-1] != key[1:]
    return rows[order[last]]


def _by_string(rows: pl.DataFrame, column: str) -> pl.Expr:
    """A coded column as its strings' rank among its distinct strings (by their bytes, as polars sorts strings)."""
    distinct = rows[column].unique()
    ranked = distinct.cast(pl.Utf8).arg_sort(nulls_last=False)
    return (
        pl.col(column)
        .to_physical()
        .replace_strict(distinct.to_physical().gather(ranked), pl.int_range(len(distinct), dtype=pl.UInt32, eager=True))
    )


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
    rows, columns = _in_force(study, task, excluded, readings, items)
    return rows.select(_as_text(columns))


def ratings_and_readings(study: Study, task: str, excluded: Sequence[str] = ()) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(``ratings_in_force``'s rows with a value, its first 9 columns, its string columns categorical; its judges'
    rows, every column) -- from the coded rows in force, without the whole frame of strings between. A report holds
    the first all along: a 16-byte string view per row for its five columns of a few distinct strings was half of
    it (issue 35: a 100k study's 1.6M rows)."""
    others, judges = _read_parts(study, task, people_status=False)
    # the people's rows and the judges' side by side (their chunks, not a copy), of the columns both have: the
    # people's rows carry no readings' columns (1.2M rows of constants at 100k, issue 35: memory)
    shared = list(_RATINGS_SCHEMA)
    rows = pl.concat([others.select(shared), judges.select(shared)], rechunk=False)
    in_force = np.asarray(_chosen(study, rows, excluded))
    columns = _columns(study, task, None, True)
    rows = rows[in_force]  # (the rows read are let go here)
    rated = rows.lazy().filter(pl.col("value").is_not_null()).select(columns[:9]).collect()
    del rows
    # the judges' rows in force, in the same order: those past the people's in the side-by-side rows
    judged = judges[in_force[in_force >= others.height] - others.height].select(_as_text(columns))
    return rated, judged

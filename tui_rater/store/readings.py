"""The statements the report reads ratings with (``stats/``): stats computes, the store owns the SQL on ``ratings``.
Every one reads the ratings in force (``study.ratings_in_force``)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from tui_rater.domain.details import Details
from tui_rater.store.study import RATINGS_IN_FORCE, Study
from tui_rater.store.team import has_team_tables

# gold (attention) items score the annotators (``tui-rater progress``); their ratings are kept out of every
# agreement statistic and verdict (``cli/reporting.py`` says how many)
NOT_GOLD = " AND r.item_key NOT IN (SELECT item_key FROM gold)"


def details_mention(study: Study, key: str) -> bool:
    """Does any stored rating's details name ``key`` (the ``LIKE`` each statement below filters on)? One scan of
    the table, stopping at the first: 0.1 s at 400k ratings against ~1 s for grouping the table into the ratings in
    force (issue 35), which a study with no such detail (every imported or human rating) need not pay."""
    found = study._db.conn.execute(f"""SELECT EXISTS (SELECT 1 FROM ratings WHERE details LIKE '%"{key}"%')""")
    return bool(found.fetchone()[0])


def task_ratings(study: Study, task: str, excluded: Sequence[str] = ()) -> list[tuple[Any, ...]]:
    """``task_rating_batches`` in one list."""
    return [row for batch in task_rating_batches(study, task, excluded) for row in batch]


def task_rating_batches(
    study: Study, task: str, excluded: Sequence[str] = (), size: int = 50_000
) -> Iterator[list[tuple[Any, ...]]]:
    """Every rating in force of the task's people and judges, gold items left out: (item key, system, attribute,
    rater label, rater kind, presentation, sample, value, rating id, parse status, the probability a judge's pass
    put on the answers it was asked for or None -- a distribution or constrained pass's scale mass, else the
    implicit score's p(yes) + p(no) --, where that probability is: 'scale' (a distribution pass), 'constrained'
    (a constrained reply's, before its grammar), 'yes_no' (the implicit score) or None) -- one pass over the
    ratings, ``size`` rows at a time (the report turns each batch into columns: 1.6M rows as tuples held at once
    were most of a 100k report's memory). ``excluded``: people whose ratings are left out too."""
    not_gold = NOT_GOLD if has_team_tables(study) else ""
    left_out = f" AND NOT (ra.kind = 'human' AND ra.name IN ({','.join('?' * len(excluded))}))" if excluded else ""
    cursor = study._db.conn.execute(
        f"""SELECT r.item_key, coalesce(i.system, '-'), r.attribute, ra.label, ra.kind, r.presentation, r.sample,
                   r.value, r.id, r.parse_status,
                   CASE WHEN ra.kind = 'llm' AND r.details LIKE '%"{Details.MASS}"%' AND json_valid(r.details)
                        THEN json_extract(r.details, '$.{Details.MASS}')
                        WHEN ra.kind = 'llm' AND r.details LIKE '%"{Details.P_YES}"%' AND json_valid(r.details)
                        THEN json_extract(r.details, '$.{Details.P_YES}') + json_extract(r.details, '$.{Details.P_NO}')
                        END,
                   CASE WHEN ra.kind != 'llm' OR NOT json_valid(r.details) THEN NULL
                        WHEN r.details LIKE '%"{Details.MASS}"%' THEN (CASE WHEN r.raw IS NULL THEN 'scale'
                                                                          ELSE 'constrained' END)
                        WHEN r.details LIKE '%"{Details.P_YES}"%' THEN 'yes_no' END
            FROM {RATINGS_IN_FORCE} WHERE i.task = ? AND ra.kind IN ('human', 'llm'){not_gold}{left_out}""",
        [task, *excluded],
    )
    while batch := cursor.fetchmany(size):
        yield batch


def excluded_ratings(study: Study, task: str, names: Sequence[str]) -> dict[str, int]:
    """name -> how many of their ratings in force of the task (gold items aside) ``task_ratings`` leaves out."""
    if not names:
        return {}
    not_gold = NOT_GOLD if has_team_tables(study) else ""
    rows = study._db.conn.execute(
        f"""SELECT ra.name, count(*) FROM {RATINGS_IN_FORCE}
            WHERE i.task = ? AND ra.kind = 'human' AND r.value IS NOT NULL
                  AND ra.name IN ({",".join("?" * len(names))}){not_gold}
            GROUP BY ra.name""",
        [task, *names],
    ).fetchall()
    found = dict(rows)
    return {name: int(found.get(name, 0)) for name in names}


def implicit_jumps(study: Study, task: str) -> list[tuple[Any, ...]]:
    """(judge, question, how many of its Implicit Scores had p(no) = 0, the least p(yes) among them)."""
    if not details_mention(study, Details.P_NO):
        return []
    return study._db.conn.execute(
        f"""SELECT ra.label, r.attribute, count(*), min(json_extract(r.details, '$.{Details.P_YES}'))
            FROM {RATINGS_IN_FORCE}
            WHERE i.task = ? AND ra.kind = 'llm' AND r.value IS NOT NULL AND r.details LIKE '%"{Details.P_NO}"%'
                  AND json_valid(r.details) AND json_type(r.details, '$.{Details.P_NO}') IN ('real', 'integer')
                  AND json_extract(r.details, '$.{Details.P_NO}') = 0
                  AND json_type(r.details, '$.{Details.P_YES}') IN ('real', 'integer')
            GROUP BY ra.label, r.attribute""",
        [task],
    ).fetchall()


def expected_scores(study: Study, task: str) -> list[tuple[Any, ...]]:
    """(judge, question, item key, the judge's expected score averaged over its passes)."""
    if not details_mention(study, Details.EXPECTED):
        return []
    return study._db.conn.execute(
        f"""SELECT ra.label, r.attribute, r.item_key, avg(json_extract(r.details, '$.{Details.EXPECTED}'))
            FROM {RATINGS_IN_FORCE}
            WHERE i.task = ? AND ra.kind = 'llm' AND r.details LIKE '%"{Details.EXPECTED}"%' AND json_valid(r.details)
                  AND json_type(r.details, '$.{Details.EXPECTED}') IN ('real', 'integer')
            GROUP BY ra.label, r.attribute, r.item_key""",
        [task],
    ).fetchall()

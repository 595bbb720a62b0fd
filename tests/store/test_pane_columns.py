"""The live pane's first read as arrays of numbers (``store/pane_columns.py``, issue 35 item 1): every stored rating not
undone and not a retest, each column what a plain ``SELECT`` of the row says -- the values to the bit, whether
whole, halves, fractions no power of two makes whole, huge, tiny or none, and presentations holding the separator."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from tui_rater.store import pane_columns
from tui_rater.store.db import utc_now, write
from tui_rater.store.ratings import NewRating, insert_ratings
from tui_rater.store.study import Study

VALUES = [1.0, 4.5, 2.25, 0.1, 1 / 3, -3.0, 0.0, 1e300, -1e300, 5e-324, 2.0**50, 2.0**60, 2.0**62, 1e18 + 3, None]


def _by_hand(study: Study, attributes: list[str]) -> list[tuple[object, ...]]:
    rows = study._db.conn.execute(
        "SELECT id, item_key, rater_id, sample, attribute, presentation, value FROM ratings "
        "WHERE retracted = 0 AND retest_of IS NULL ORDER BY id"
    ).fetchall()
    return [
        (i, key, rater, sample, attributes.index(a) if a in attributes else -1, shown, value)
        for i, key, rater, sample, a, shown, value in rows
    ]


def _read(study: Study, attributes: list[str], item_keys: list[int] | None = None) -> list[tuple[object, ...]]:
    found = pane_columns.stored_ratings(study, attributes, item_keys)
    return [
        (i, key, rater, sample, a, found.presentations[p], None if math.isnan(v) else v)
        for i, key, rater, sample, a, p, v in zip(
            found.rating_id.tolist(),
            found.item_key.tolist(),
            found.rater_id.tolist(),
            found.sample.tolist(),
            found.attribute.tolist(),
            found.presentation.tolist(),
            found.value.tolist(),
        )
    ]


@pytest.mark.parametrize("items", [False, True])
@pytest.mark.parametrize("ids_a_read", [None, 4])
@pytest.mark.parametrize("presentations", [("", "original", "swapped"), ("a,b", "a\x00b", "")])
def test_every_column_is_the_row_as_stored(
    tmp_path: Path,
    presentations: tuple[str, ...],
    ids_a_read: int | None,
    items: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Read at once, and 4 ids at a time (a large study's reads: each range's presentations numbered alike); and
    the ratings of two of the items only (an update of the running sums), one item a statement, by id as ever."""
    if ids_a_read is not None:
        monkeypatch.setattr(pane_columns, "_RANGE", ids_a_read)
        monkeypatch.setattr(pane_columns, "_ITEMS", 1)
    study = Study.open(tmp_path / "s.db")
    try:
        task = study.task("story")
        study.add_items(task, [{"id": f"s{i}", **{f: f"{f} {i}" for f in task.fields}} for i in range(3)])
        keys = [item.key for item in study.items("story")]
        ann, judge = study.human("ann").id, study.judge("j", {"model": "j"}).id
        names = [a.name for a in task.attributes]
        rows = [
            NewRating(
                keys[i % 3],
                [*names, "an old question"][i % 5],
                judge if i % 2 else ann,
                value,
                utc_now(),
                sample=i % 3 if i % 2 else 0,
                presentation=presentations[i % len(presentations)] if i % 2 else "",
            )
            for i, value in enumerate(VALUES * 2)
        ]
        with write(study._db) as conn:
            insert_ratings(conn, rows)
        (first,) = study._db.conn.execute("SELECT min(id) FROM ratings").fetchone()
        study.retract_rating(first)  # an undo: not read
        expected = _by_hand(study, names)
        found = _read(study, names, [keys[2], keys[0]] if items else None)
        if items:
            expected = [row for row in expected if row[1] != keys[1]]
            assert 0 < len(found) < len(VALUES) * 2 - 1
        else:
            assert len(found) == len(VALUES) * 2 - 1
        assert len(found) == len(expected)
        assert [row[:6] for row in found] == [row[:6] for row in expected]
        for mine, theirs in zip(found, expected):  # to the bit
            assert (mine[6] is None) == (theirs[6] is None)
            if theirs[6] is not None:
                assert np.float64(mine[6]).tobytes() == np.float64(theirs[6]).tobytes(), theirs
    finally:
        study.close()


def test_an_empty_study_reads_no_rating(tmp_path: Path) -> None:
    study = Study.open(tmp_path / "s.db")
    try:
        found = pane_columns.stored_ratings(study, ["relevance"])
        assert found.rating_id.size == 0 and found.value.size == 0 and found.presentations == []
        assert pane_columns.task_item_keys(study, "story").size == 0
    finally:
        study.close()

"""``insert_imported`` (an import's ratings without a ``NewRating`` each) writes the rows ``insert_ratings`` writes
for the same ratings: the import was made faster, not different."""

from __future__ import annotations

import contextlib
import sqlite3

from tui_rater.store.db import write
from tui_rater.store.ratings import NewRating, insert_imported, insert_ratings
from tui_rater.store.study import Study

STORIES = [{"id": f"s{i}", "prompt": "P", "story": f"Story {i}."} for i in range(3)]


def _rows(path):
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return conn.execute("SELECT * FROM ratings ORDER BY id").fetchall()


def test_imported_rows_are_the_rows_of_new_ratings(tmp_path):
    rated = [(0, "grammaticality", 4, 0, 5.0), (1, "likability", 4, 2, 2.5), (2, "relevance", 4, 0, 1.0)]
    when, source = "2026-11-29T12:00:00.000+00:00", {"source": "/data/ratings \u00e9.csv"}
    for name in ("imported", "new"):
        study = Study.open(tmp_path / f"{name}.db")
        study.add_items(study.task("story"), STORIES)
        judge = study.judge("j", {"imported_from": "j"})
        keys = [key for (key,) in study._db.conn.execute("SELECT key FROM items ORDER BY position")]
        rows = [(keys[i], question, judge.id, sample, value) for i, question, _, sample, value in rated]
        with write(study._db) as conn:
            if name == "imported":
                insert_imported(conn, rows, when, source)
            else:
                insert_ratings(
                    conn,
                    [
                        NewRating(k, q, r, v, when, sample=s, parse_status="imported", details=source)
                        for k, q, r, s, v in rows
                    ],
                )
        study.close()
    assert _rows(tmp_path / "imported.db") == _rows(tmp_path / "new.db")
    assert len(_rows(tmp_path / "new.db")) == 3

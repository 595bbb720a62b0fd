"""The report loads a task's ratings as columns a batch at a time (issue 35): the Python objects it holds while
loading do not grow with the study (1.6M rating tuples held at once were most of a 100k report's memory)."""

from __future__ import annotations

import tracemalloc

from tui_rater.stats.sections.data import load_all
from tui_rater.store.db import utc_now
from tui_rater.store.study import Study, content_hash


def _study(tmp_path, items: int) -> Study:
    study = Study.open(tmp_path / f"s{items}.db")
    conn, now = study._db.conn, utc_now()
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO items (id, task, system, fields, position, content_hash, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
        [
            (f"i{i}", "story", "human" if i % 2 else "gpt2", "{}", i, content_hash("story", None, {"n": str(i)}), now)
            for i in range(items)
        ],
    )
    conn.execute("COMMIT")
    raters = [study.human(f"h{k}").id for k in range(3)] + [study.judge("j", {"m": 1}).id]
    keys = [k for (k,) in conn.execute("SELECT key FROM items")]
    questions = ("grammaticality", "cohesiveness", "likability", "relevance")
    conn.execute("BEGIN")
    conn.executemany(
        "INSERT INTO ratings (item_key, attribute, rater_id, sample, value, created_at) VALUES (?, ?, ?, 0, ?, ?)",
        ((key, q, r, float(1 + (key + r) % 5), now) for key in keys for q in questions for r in raters),
    )
    conn.execute("COMMIT")
    return study


def _peak(study: Study) -> tuple[int, int]:
    tracemalloc.start()
    try:
        frame, _ = load_all(study, "story")
        return frame.height, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_loading_holds_a_batch_not_the_study(tmp_path):
    small_rows, small = _peak(_study(tmp_path, 1_000))
    large_rows, large = _peak(_study(tmp_path, 16_000))
    assert (small_rows, large_rows) == (16_000, 256_000)
    # 16x the ratings: the rows held as tuples at once grew ~16x; a batch of 50,000 at a time stays within ~5x
    assert large < 8 * small, (small, large)

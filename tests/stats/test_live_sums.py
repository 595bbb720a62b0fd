"""The live pane's running sums (issue 35 item 1): after every insert, revision, failed reading and undo, the sums
updated from what changed equal the sums built afresh and the full computation's figures, and the pane shows the
same text; an update after one rating on a 20,000-item study reads that item's ratings, not the study's."""

from __future__ import annotations

import random
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from tui_rater.service.live import LivePane, merge
from tui_rater.stats.live import pane_data
from tui_rater.stats.live_sums import LiveSums, PaneSums
from tui_rater.store.db import utc_now, write
from tui_rater.store.ratings import NewRating, insert_ratings
from tui_rater.store.study import Study
from tui_rater.ui.agreement import render_pane

PEOPLE = ("ann", "bea", "cy")
JUDGES = ("j1", "j2")
QUEUE = {"done": 0, "queued": 0, "leased": 0, "failed": 0}


def _study(tmp_path: Path, task: str, items: int) -> tuple[Study, dict[str, int], list[int]]:
    study = Study.open(tmp_path / "live.db")
    fields = study.task(task).fields
    study.add_items(
        study.task(task),
        [{"id": f"s{i}", "system": f"sys{i % 2}", **{f: f"{f} {i}" for f in fields}} for i in range(items)],
    )
    raters = {name: study.human(name).id for name in PEOPLE}
    raters |= {name: study.judge(name, {"model": name}).id for name in JUDGES}
    keys = [item.key for item in study.items(task)]
    return study, raters, keys


def _same_sums(found: PaneSums, expected: PaneSums) -> None:
    assert (found.n_ratings, found.humans, found.judges) == (expected.n_ratings, expected.humans, expected.judges)
    assert found.questions.keys() == expected.questions.keys()
    for name, question in expected.questions.items():
        mine = found.questions[name]
        assert mine.distributions == question.distributions
        for judge, sums in question.judges.items():
            got = mine.judges.get(judge)
            if sums.n == 0 and got is None:
                continue
            assert got is not None
            assert (got.n, got.agree) == (sums.n, sums.agree), (name, judge)
            assert abs(got.difference - sums.difference) <= 1e-12, (name, judge)
            if sums.confusion is not None:
                assert got.confusion is not None and np.array_equal(got.confusion, sums.confusion)


def _same_as_full(study: Study, task: str, found: PaneSums) -> None:
    """The sums against the pane's full computation (``stats/live.py``, numpy over the report's frame), and the
    text the pane shows from the two merged against the text of the full computation alone."""
    full = pane_data(study, task, QUEUE, [])
    assert found.n_ratings == full.n_ratings
    for pane in full.attributes:
        question = found.questions[pane.attribute]
        assert {e: c for e, c in question.distributions.items()} == pane.distributions, pane.attribute
        for row in pane.rows:
            sums = question.judges.get(row.judge)
            if row.exact.value is None:
                assert sums is None or sums.n == 0
                continue
            assert sums is not None and sums.n == row.exact.n
            assert 100.0 * (sums.agree / sums.n) == row.exact.value
            if row.bias is not None and row.bias.value is not None:
                assert abs(sums.difference / sums.n - row.bias.value) <= 1e-12
    merged = merge(full, found, study.task(task), QUEUE, [])
    for focus in range(len(full.attributes)):
        assert render_pane(merged, focus, 0).plain == render_pane(full, focus, 0).plain


@pytest.mark.parametrize("task", ["story", "story-pairwise"])
def test_sums_updated_from_changes_equal_a_full_recomputation_after_every_change(tmp_path: Path, task: str) -> None:
    study, raters, keys = _study(tmp_path, task, 12)
    rng = random.Random(35)
    attributes = [a.name for a in study.task(task).attributes]
    points = {a.name: list(a.scale.points) for a in study.task(task).attributes}
    live = LivePane(task)
    first = live.look(study)
    assert first is not None and first.built
    in_force: list[int] = []
    try:
        for step in range(70):
            action = rng.random()
            if action < 0.12 and in_force:  # undo: the rating before it is in force again
                study.retract_rating(in_force.pop(rng.randrange(len(in_force))))
            else:
                rater = rng.choice([*PEOPLE, *JUDGES])
                attribute = rng.choice(attributes)
                value: float | None = float(rng.choice(points[attribute]))
                if rater in JUDGES and rng.random() < 0.3:  # a judge's x.5, or a reply that did not parse
                    value = None if rng.random() < 0.5 else min(value + 0.5, max(points[attribute]))
                sample = rng.choice((0, 0, 1)) if rater in JUDGES else 0
                # few items: a new rating often revises one in force (the newest row of a key is in force)
                item = rng.choice(keys[:6]) if step < 40 else rng.choice(keys)
                in_force.append(study.add_rating(item, attribute, raters[rater], value, sample=sample))
            look = live.look(study)
            assert look is not None and not look.built  # every change an update, none a rebuild
            fresh = LiveSums(study.task(task))
            fresh.build(study)
            _same_sums(look.sums, fresh.snapshot())
            if step % 7 == 6 or step > 60:
                _same_as_full(study, task, look.sums)
        assert live.look(study) is None  # nothing new: no work
    finally:
        study.close()


def test_an_update_after_one_rating_reads_that_items_ratings_not_the_study(tmp_path: Path) -> None:
    """On a 20,000-item study (3 people and a judge on 4 questions: 320,000 ratings), the update after one more rating
    reads the 16 ratings in force of its item, and SQLite runs a few hundred steps for it, not millions."""
    items = 20_000
    study, raters, keys = _study(tmp_path, "story", items)
    attributes = [a.name for a in study.task("story").attributes]
    now = utc_now()
    rows = [
        NewRating(key, attribute, raters[name], float((key * 7 + r + a) % 5 + 1), now)
        for key in keys
        for a, attribute in enumerate(attributes)
        for r, name in enumerate((*PEOPLE, "j1"))
    ]
    with write(study._db) as conn:
        insert_ratings(conn, rows)
    try:
        live = LiveSums(study.task("story"))
        steps = [0]

        def count() -> int:
            steps[0] += 1
            return 0

        conn: sqlite3.Connection = study._db.conn
        conn.set_progress_handler(count, 1000)  # every 1,000 virtual-machine steps
        live.build(study)
        built = steps[0]  # the build reads the study (``store/rating_columns.py``, through this connection)
        assert live.rows_read == items * 16
        rating = study.add_rating(keys[items // 2], attributes[0], raters["ann"], 1.0)
        steps[0] = 0
        assert live.update(study)
        assert live.rows_read == 16  # the item's ratings in force, the new one among them
        assert steps[0] * 1000 < 50_000, steps[0]  # an index look-up per item read, never a scan of the ratings
        assert built > 200 * steps[0] + 200
        study.retract_rating(rating)  # an undo is found by its id, through the index of undone ratings
        steps[0] = 0
        assert live.update(study)
        assert live.rows_read == 16 and steps[0] * 1000 < 50_000, steps[0]
        conn.set_progress_handler(None, 0)
        fresh = LiveSums(study.task("story"))
        fresh.build(study)
        _same_sums(live.snapshot(), fresh.snapshot())
    finally:
        study.close()

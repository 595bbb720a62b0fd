"""The live pane's first numbers from columns (issue 35 item 2): the ratings in force read as columns in one query
(``store/rating_columns.py``) are the rows a plain-Python reading of the ratings table says are in force, through
the Arrow driver and through the study's own connection alike; and the running sums built from them
(``LiveSums.build``) are the state the report's per-item code built before -- the same per-item values and counts,
the same sums, the same text in the pane -- and the figures an implementation written here finds, on generated
studies with revisions, failed readings, x.5 values, undos, retests, strays, gold items, several samples per judge
and a pairwise task judged in both orders."""

from __future__ import annotations

import json
import math
import random
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tests.stats.test_live_sums import JUDGES, PEOPLE, QUEUE, _same_as_full, _same_sums, _study
from tui_rater.service.live import merge
from tui_rater.stats.live import pane_data
from tui_rater.stats.live_sums import LiveSums, _Question
from tui_rater.stats.records import ALL
from tui_rater.stats.sections.data import ReportData, load_all
from tui_rater.store import rating_columns
from tui_rater.store.db import utc_now, write
from tui_rater.store.progress_reads import item_ids
from tui_rater.store.ratings import NewRating, insert_ratings
from tui_rater.store.study import Study
from tui_rater.store.team import add_gold
from tui_rater.ui.agreement import render_pane


def _generated(tmp_path: Path, task: str, seed: int, old_question: bool = True) -> Study:
    """30 items; 3 people and 2 judges rating the first 20 again and again (revisions), judges with 3 samples, x.5
    values and failed readings (with and without a scale mass), a pair in both orders, a person's stray sample 1
    and blind retests (never in force), a gold item, undos; and another task's ratings beside them."""
    study, raters, keys = _study(tmp_path, task, 30)
    other = study.task("story" if task != "story" else "title-fluency")
    study.add_items(other, [{"id": f"o{i}", **{f: f"{f} {i}" for f in other.fields}} for i in range(4)])
    other_keys = [item.key for item in study.items(other.name)]
    add_gold(study, {keys[-1]: {study.task(task).attributes[0].name: 1.0}})
    attributes = {a.name: list(a.scale.points) for a in study.task(task).attributes}
    pairwise = task == "story-pairwise"
    rng = random.Random(seed)
    ids: list[int] = []
    for step in range(500):
        rater = rng.choice([*PEOPLE, *JUDGES])
        attribute = rng.choice(list(attributes))
        points = attributes[attribute]
        value: float | None = float(rng.choice(points))
        item = rng.choice(keys[:20]) if step < 420 else rng.choice(keys)
        extra: dict[str, Any] = {}
        if rater in JUDGES:
            extra["sample"] = rng.choice((0, 1, 2))
            extra["presentation"] = rng.choice(("original", "swapped")) if pairwise else ""
            roll = rng.random()
            if roll < 0.15:  # a reply that did not parse
                value, extra["parse_status"], extra["raw"] = None, "unparsed", "I cannot say"
            elif roll < 0.35 and not pairwise:  # x.5: between two points
                value = min(value + 0.5, max(points))
            shape = rng.random()
            if shape < 0.3:
                extra["details"] = {"mass": rng.choice((0.93, 1, 0.5))}
            elif shape < 0.45:
                extra["details"] = {"p_yes": 0.25, "p_no": rng.choice((0.5, 0))}
            elif shape < 0.5:
                extra["details"] = {"mass": "high"}  # not a number: no mass
        elif rng.random() < 0.05:
            extra["sample"] = 1  # a person's rating under another sample: never in force
        elif rng.random() < 0.05 and ids:
            extra["retest_of"] = ids[-1]  # a blind retest: never in force
        rating = NewRating(item, attribute, raters[rater], value, utc_now(), **extra)
        with write(study._db) as conn:
            rating_id = insert_ratings(conn, [rating])
        assert rating_id is not None
        ids.append(rating_id)
        if rng.random() < 0.08:  # an undo: the rating before it is in force again
            study.retract_rating(ids.pop(rng.randrange(len(ids))))
    # a question the task no longer has and a presentation no protocol writes: kept, as text, like any other
    retired = [
        NewRating(keys[0], "an old question", raters["j1"], 2.0, utc_now(), presentation="mirrored"),
        NewRating(keys[1], "an old question", raters["cy"], 1.0, utc_now()),
    ]
    if old_question:
        with write(study._db) as conn:
            insert_ratings(conn, retired)
    other_attribute = other.attributes[0]
    for key in other_keys:  # another task's ratings: never this task's
        study.add_rating(key, other_attribute.name, raters["ann"], float(other_attribute.scale.points[0]))
    return study


# --- the ratings in force, by hand ----------------------------------------------------------------------------


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


def _mass(details: str | None, raw: str | None) -> tuple[float | None, str | None]:
    """A judge reading's scale mass and where it is (``readings.task_rating_batches``' rule, for these details)."""
    if details is None:
        return None, None
    found = json.loads(details)
    if '"mass"' in details:
        return _number(found.get("mass")), "scale" if raw is None else "constrained"
    if '"p_yes"' in details:
        p_yes, p_no = _number(found.get("p_yes")), _number(found.get("p_no"))
        return (None if p_yes is None or p_no is None else p_yes + p_no), "yes_no"
    return None, None


def _in_force_by_hand(study: Study, task: str) -> list[tuple[Any, ...]]:
    """The newest rating of each (item, question, rater, presentation, sample), not undone, not a retest, a
    person's only under sample 0, of the task's people and judges, gold items left out; in that key's order."""
    conn = study._db.conn
    raters = {rid: (label, kind) for rid, label, kind in conn.execute("SELECT id, label, kind FROM raters")}
    items = {key: system or "-" for key, system in conn.execute("SELECT key, system FROM items WHERE task = ?", [task])}
    gold = {key for (key,) in conn.execute("SELECT item_key FROM gold")}
    newest: dict[tuple[Any, ...], tuple[Any, ...]] = {}
    for row in conn.execute(
        "SELECT id, item_key, attribute, rater_id, presentation, sample, value, parse_status, details, raw, "
        "retracted, retest_of FROM ratings ORDER BY id"
    ):
        rating_id, key, attribute, rater_id, presentation, sample, *_, retracted, retest_of = row
        kind = raters[rater_id][1]
        if retracted or retest_of is not None or (kind == "human" and sample != 0):
            continue
        newest[(key, attribute, rater_id, presentation, sample)] = row
    found = []
    for group in sorted(newest):
        rating_id, key, attribute, rater_id, presentation, sample, value, status, details, raw, *_ = newest[group]
        label, kind = raters[rater_id]
        if key not in items or key in gold or kind not in ("human", "llm"):
            continue
        mass, mass_on = _mass(details, raw) if kind == "llm" else (None, None)
        row = (key, items[key], attribute, label, kind, presentation, sample, value, rating_id, status, mass, mass_on)
        found.append(row)
    return found


@pytest.mark.parametrize("task", ["story", "story-pairwise"])
def test_the_columns_are_the_ratings_in_force(tmp_path: Path, task: str) -> None:
    study = _generated(tmp_path, task, 7)
    try:
        expected = _in_force_by_hand(study, task)
        assert len(expected) > 100 and any(row[7] is None for row in expected)
        frame = rating_columns.ratings_in_force(study, task, readings=True)
        assert frame.rows() == expected
        # the report's loader: the rows with a value, and every judge reading with its status and mass
        ratings, readings = load_all(study, task)
        assert ratings.rows() == [row[:9] for row in expected if row[7] is not None]
        assert readings.rows() == [
            (row[3], row[2], row[9], row[7] is not None, row[10], row[11]) for row in expected if row[4] == "llm"
        ]
        # a person left out (``--exclude-annotator``)
        left = rating_columns.ratings_in_force(study, task, ["bea"], readings=True)
        assert left.rows() == [row for row in expected if not (row[4] == "human" and row[3] == "bea")]
    finally:
        study.close()


def test_the_columns_see_an_uncommitted_rating_of_this_connection(tmp_path: Path) -> None:
    """The columns are read through the study's own connection: a rating stored inside its open transaction is in
    them (a second connection would not see it)."""
    study = _generated(tmp_path, "story", 11)
    try:
        key = study.items("story")[0].key
        ann = study.human("ann").id
        conn = study._db.conn
        conn.execute("BEGIN")
        conn.execute(
            "INSERT INTO ratings (item_key, attribute, rater_id, value, created_at) VALUES (?, 'relevance', ?, 2.0, ?)",
            [key, ann, utc_now()],
        )
        (newest,) = conn.execute("SELECT max(id) FROM ratings").fetchone()
        assert newest in rating_columns.read_columns(study, "story")["rating_id"].to_list()
        conn.execute("ROLLBACK")
    finally:
        study.close()


def _per_item_build(study: Study, task_name: str) -> LiveSums:
    """The build before the columns (``LiveSums.build`` until issue 35 item 2): the report's loader and its
    per-item code (``ReportData``) over the whole study."""
    task = study.task(task_name)
    sums = LiveSums(task)
    keys = sorted(item_ids(study, task_name))
    sums.position = {key: i for i, key in enumerate(keys)}
    data = ReportData(study, task)
    positions = np.array([sums.position[key] for key in data.keys(ALL).tolist()], dtype=np.int64)
    for attribute in task.attributes:
        question = _Question(attribute, data.protocol(attribute).level, len(keys))
        _store(question, data, positions)
        question.add(np.arange(len(keys)), 1)
        sums.questions[attribute.name] = question
    return sums


def _store(question: _Question, data: ReportData, positions: np.ndarray) -> None:
    """The evaluators' per-item values and counts at ``positions`` from the report's per-item code on ``data`` (what
    ``_Question.store`` did, for the build and the updates, before the columns)."""
    for evaluator in data.evaluators():
        question.arrays(evaluator)
    for evaluator in data.evaluators():
        values = data.item_values(evaluator, question.attribute, ALL)
        question.put(evaluator, positions, values, data.matrix(evaluator, question.attribute.name, ALL))


def _nearest(value: float, points: list[float]) -> float:
    # the scale point nearest a (mean) rating, a tie going up (3.5 -> 4)
    best = min(abs(value - p) for p in points)
    return max(p for p in points if abs(value - p) <= best + 1e-9)


def _by_hand(rows: list[tuple[Any, ...]], points: list[float]) -> dict[str, Any]:
    """For a scored task: per question, each judge's n, agreement and sum of (judge − humans) over the items both
    rated, the confusion, and each evaluator's distribution of ratings on the scale's points; and how many
    ratings there are."""
    scores: dict[tuple[str, str], dict[int, list[float]]] = defaultdict(lambda: defaultdict(list))
    every: dict[tuple[str, str], list[float]] = defaultdict(list)
    for key, _, attribute, rater, kind, _, _, value, *_ in rows:
        if value is None or attribute == "an old question":
            continue
        evaluator = "humans" if kind == "human" else rater
        scores[(attribute, evaluator)][key].append(value)
        every[(attribute, evaluator)].append(value)
    found: dict[str, Any] = {"n_ratings": sum(len(v) for v in every.values())}
    for (attribute, evaluator), values in every.items():
        found[(attribute, evaluator, "distribution")] = [
            sum(1 for v in values if _nearest(v, points) == p) for p in points
        ]
    for (attribute, judge), judged in scores.items():
        if judge == "humans":
            continue
        humans = scores.get((attribute, "humans"), {})
        both = sorted(set(judged) & set(humans))
        h = [math.fsum(humans[k]) / len(humans[k]) for k in both]
        j = [math.fsum(judged[k]) / len(judged[k]) for k in both]
        confusion = np.zeros((len(points), len(points)), dtype=np.int64)
        for a, b in zip(h, j):
            confusion[points.index(_nearest(a, points)), points.index(_nearest(b, points))] += 1
        found[(attribute, judge)] = (
            len(both),
            sum(1 for a, b in zip(h, j) if _nearest(a, points) == _nearest(b, points)),
            math.fsum(b - a for a, b in zip(h, j)),
            confusion,
        )
    return found


def _same_state(found: LiveSums, expected: LiveSums) -> None:
    """Every question's per-item values, rating counts and label counts, to the bit, and its sums."""
    assert found.position == expected.position
    for name, question in expected.questions.items():
        mine = found.questions[name]
        assert mine.values.keys() == question.values.keys(), name
        for evaluator in question.values:
            assert np.array_equal(mine.values[evaluator], question.values[evaluator], equal_nan=True), evaluator
            assert np.array_equal(mine.rows[evaluator], question.rows[evaluator]), evaluator
            assert np.array_equal(mine.counts[evaluator], question.counts[evaluator]), evaluator
            assert np.array_equal(mine.totals[evaluator], question.totals[evaluator]), evaluator
    _same_sums(found.snapshot(), expected.snapshot())


@pytest.mark.parametrize(("task", "seed"), [("story", 1), ("story", 2), ("story-pairwise", 3), ("story-pairwise", 4)])
def test_the_columnar_build_is_the_per_item_build_and_the_figures_by_hand(tmp_path: Path, task: str, seed: int) -> None:
    # (a question the task no longer has is left out here: the pane's full computation counts its ratings in the
    # number of ratings, the sums do not -- as before the columns)
    study = _generated(tmp_path, task, seed, old_question=False)
    try:
        columnar = LiveSums(study.task(task))
        columnar.build(study)
        per_item = _per_item_build(study, task)
        _same_state(columnar, per_item)
        sums = columnar.snapshot()
        # what the pane shows: the sums merged over the full computation, as the full computation alone shows it
        _same_as_full(study, task, sums)
        full = pane_data(study, task, QUEUE, [])
        for focus in range(len(full.attributes)):
            old = render_pane(merge(full, per_item.snapshot(), study.task(task), QUEUE, []), focus, 0).plain
            assert render_pane(merge(full, sums, study.task(task), QUEUE, []), focus, 0).plain == old
            first = render_pane(merge(None, sums, study.task(task), QUEUE, []), focus, 0).plain
            assert first == render_pane(merge(None, per_item.snapshot(), study.task(task), QUEUE, []), focus, 0).plain
        if task != "story":
            return
        points = list(study.task(task).attributes[0].scale.points)
        expected = _by_hand(_in_force_by_hand(study, task), points)
        assert sums.n_ratings == expected["n_ratings"]
        for name, question in sums.questions.items():
            for evaluator, counts in question.distributions.items():
                assert counts == expected.get((name, evaluator, "distribution"), [0] * len(points)), (name, evaluator)
            for judge, judged in question.judges.items():
                n, agree, difference, confusion = expected.get((name, judge), (0, 0, 0.0, np.zeros((5, 5))))
                assert (judged.n, judged.agree) == (n, agree), (name, judge)
                assert abs(judged.difference - difference) <= 1e-12, (name, judge)
                assert judged.confusion is not None and np.array_equal(judged.confusion, confusion)
    finally:
        study.close()


def test_a_first_look_on_an_empty_study_and_on_one_with_only_failed_readings(tmp_path: Path) -> None:
    """No rating at all, then only readings that did not parse: the columnar build is the per-item one."""
    study, raters, keys = _study(tmp_path, "story", 5)
    try:
        for step in range(2):
            columnar = LiveSums(study.task("story"))
            columnar.build(study)
            assert columnar.rows_read == 0
            _same_state(columnar, _per_item_build(study, "story"))
            assert rating_columns.ratings_in_force(study, "story").height == step
            study.add_rating(keys[0], "relevance", raters["j1"], None, parse_status="unparsed", raw="?")
    finally:
        study.close()

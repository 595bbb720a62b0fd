"""`progress`'s per-annotator figures as pure functions (issue 31 item 1), checked on random studies against a
pandas computation written here from the rules in service/progress.py's docstring (not the product's code)."""

from __future__ import annotations

import random
import statistics

import numpy as np
import pandas as pd
import pytest

from tui_rater.domain import progress_figures as figures
from tui_rater.domain.questions import Choice, Scale

LIKERT = Scale("likert", 1, 5)
CONTINUOUS = Scale("continuous", 0, 100)
CHOICE = Scale("choice", 0, 2, choices=(Choice("A", "a"), Choice("B", "b"), Choice("tie", "t")))
QUESTIONS = {
    "fluency": figures.Question(LIKERT, nominal=False),
    "score": figures.Question(CONTINUOUS, nominal=False),
    "pick": figures.Question(CHOICE, nominal=True),
}
DRAW = {"fluency": lambda r: float(r.randint(1, 5)), "score": lambda r: float(r.randint(0, 100)),
        "pick": lambda r: float(r.randint(0, 2))}  # fmt: skip


def random_study(seed: int):
    r = random.Random(seed)
    people = ["ann", "bo", "cy", "di"]
    rows = []  # (item, question, rater, value)
    for key in range(1, 41):
        for question in [*QUESTIONS, "gone"]:  # "gone": a question the task no longer asks
            draw = DRAW.get(question, DRAW["fluency"])
            for person in people:
                if r.random() < 0.6:
                    rows.append((key, question, person, draw(r)))
    gold = {key: {q: DRAW[q](r) for q in QUESTIONS if r.random() < 0.7} for key in r.sample(range(1, 41), 6)}
    judged = {
        (key, q): [DRAW[q](r) for _ in range(r.randint(0, 3))] for key in range(1, 41) for q in QUESTIONS
    }  # fmt: skip
    values: figures.Values = {}
    for key, question, person, value in rows:
        values.setdefault((key, question), {}).setdefault(person, []).append(value)
    return rows, values, gold, judged


@pytest.mark.parametrize("seed", range(8))
def test_gold_accuracy_and_the_gaps_to_people_and_judges_match_pandas(seed):
    rows, values, gold, judged = random_study(seed)
    frame = pd.DataFrame(rows, columns=["item", "question", "rater", "value"])
    for name in ("ann", "bo", "cy", "di"):
        answered, right, gaps = figures.gold_and_gaps(name, values, judged, gold, QUESTIONS)
        own = frame[(frame.rater == name) & frame.question.isin(list(QUESTIONS))]
        # gold: every own answer to a gold item's question with an answer; right = equal on points, within 10 on 0-100
        on_gold = own[own.item.isin(list(gold))]
        answers = [gold[i].get(q) for i, q in zip(on_gold.item, on_gold.question, strict=True)]
        kept = [(q, v, a) for q, v, a in zip(on_gold.question, on_gold.value, answers, strict=True) if a is not None]
        expected_right = sum(abs(v - a) <= 10 if q == "score" else v == a for q, v, a in kept)
        assert (answered, right) == (len(kept), expected_right)
        # gaps on the other items: numeric |own - mean(others)|, nominal share of others unlike own
        rest = own[~own.item.isin(list(gold))]
        others = frame[(frame.rater != name)]
        people_num, people_nom, judges_num, judges_nom = [], [], [], []
        for item, question, value in zip(rest.item, rest.question, rest.value, strict=True):
            theirs = others[(others.item == item) & (others.question == question)].value.to_numpy()
            scores = np.array(judged.get((item, question), []))
            nominal = question == "pick"
            for pool, numeric, share in ((theirs, people_num, people_nom), (scores, judges_num, judges_nom)):
                if len(pool):
                    (share if nominal else numeric).append(
                        np.mean(pool != value) if nominal else abs(value - pool.mean())
                    )
        for got, want in (
            (gaps.people, people_num), (gaps.people_nominal, people_nom),
            (gaps.judges, judges_num), (gaps.judges_nominal, judges_nom),
        ):  # fmt: skip
            assert len(got) == len(want)
            assert np.allclose(sorted(got), sorted(want), rtol=0, atol=1e-12)


def test_a_gold_answer_to_a_question_the_task_no_longer_asks_is_not_scored():
    values: figures.Values = {(1, "gone"): {"ann": [3.0]}, (1, "fluency"): {"ann": [2.0]}}
    gold = {1: {"gone": 3.0, "fluency": 4.0}}
    answered, right, gaps = figures.gold_and_gaps("ann", values, {}, gold, {"fluency": QUESTIONS["fluency"]})
    assert (answered, right) == (1, 0) and gaps.people == []


def test_plan_counts_and_median_seconds_match_sets_written_here():
    r = random.Random(3)
    keys = list(range(1, 101))
    gold = set(r.sample(keys, 10))
    pairs = {(rater, key) for rater in range(1, 6) for key in keys if r.random() < 0.3}
    done = {key for rater, key in pairs if rater == 2}
    skipped = set(r.sample(keys, 7))
    mine = set(r.sample(keys, 30))
    assert figures.fixed_plan_counts(mine, done, skipped) == (30, len([k for k in mine if k not in done | skipped]))
    per_item = 2
    rated = {k: sum(1 for _r, key in pairs if key == k) for k in keys}
    open_items = [k for k in keys if k not in gold and rated[k] < per_item]
    mine_gold = set(r.sample(sorted(gold), 3))
    expected = len({*open_items, *mine_gold} - done - skipped)
    assert figures.dynamic_plan_remaining(keys, gold, per_item, pairs, mine_gold, done, skipped) == expected
    seconds = {k: r.uniform(1, 60) for k in keys if r.random() < 0.8}
    timed = [seconds[k] for k in sorted(done) if k in seconds]
    assert figures.median_seconds(seconds, done) == pytest.approx(statistics.median(timed), abs=0)
    assert figures.median_seconds(seconds, set()) is None
    assert figures.mean_or_none([]) is None

"""`progress`'s pure figures (domain/progress_figures.py) fed a real team study's export, checked against pandas.

The study is test_team's: three people on a fixed K=2 plan with gold items, a judge with two samples, skips,
flags, a changed mind, retests, a straight-liner. `tui-rater export --what ratings` / `--what notes` is read
into pandas; each figure is computed there from the rules in service/progress.py's docstring (groupby and
merges, not the product's code), the same inputs are handed to the pure functions, and both must agree -- and
agree with what `tui-rater progress --format json` shows."""

from __future__ import annotations

import json
import sqlite3

import numpy as np
import pandas as pd
import pytest

from tests.cli.test_team import TASK, rated_study
from tests.support import run_cli_process
from tui_rater.domain import progress_figures as figures
from tui_rater.domain.questions import Scale

PEOPLE = ["alice", "bob", "carol"]
GOLD_VALUES = [1 + i % 5 for i in range(6)]  # test_team's items_file: g0..g5, gold_fluency 1 + i % 5


def cli_ok(*args) -> str:
    done = run_cli_process(*args)
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def team(tmp_path_factory):
    folder = tmp_path_factory.mktemp("progress-export")
    db = rated_study(folder)
    cli_ok("export", "--db", db, "--what", "ratings", "--out", folder / "ratings.csv")
    cli_ok("export", "--db", db, "--what", "notes", "--out", folder / "notes.csv")
    ratings = pd.read_csv(folder / "ratings.csv", keep_default_na=False, na_values=[""])
    notes = pd.read_csv(folder / "notes.csv", keep_default_na=False, na_values=[""])
    (shown,) = json.loads(cli_ok("progress", "--db", db, "--task", TASK, "--format", "json"))
    with sqlite3.connect(db) as conn:  # the plan (no export holds it): item id -> its planned people and gold flag
        plan = pd.DataFrame(
            conn.execute(
                "SELECT ra.name, i.id, a.gold FROM assignments a JOIN raters ra ON ra.id = a.rater_id "
                "JOIN items i ON i.key = a.item_key"
            ).fetchall(),
            columns=["rater", "item", "gold"],
        )
    return ratings, notes, plan, {row["annotator"]: row for row in shown["annotators"]}


def keyed(items: pd.Series) -> pd.Series:
    """Item ids as the integer keys the figures take (t0..t39 -> 0..39, g0..g5 -> 100..105)."""
    return items.map(lambda i: int(i[1:]) + (100 if i.startswith("g") else 0))


def test_the_pure_figures_on_a_team_studys_export_equal_pandas_and_progress(team):
    ratings, notes, plan, shown = team
    ratings = ratings.assign(key=keyed(ratings["item"]))
    people = ratings[ratings.kind == "human"]
    judge = ratings[ratings.kind == "llm"].groupby(["key", "rater"]).value.mean().rename("score").reset_index()
    gold = {100 + i: {"fluency": float(v)} for i, v in enumerate(GOLD_VALUES)}
    # the pure functions' inputs, built from the export
    values: figures.Values = {}
    for key, attribute, name, value in people[["key", "attribute", "rater", "value"]].itertuples(index=False):
        values.setdefault((key, attribute), {}).setdefault(name, []).append(value)
    judged = figures.scores_by_question(
        {(k, "fluency", j): s for k, j, s in judge[["key", "rater", "score"]].itertuples(index=False)}
    )
    questions = {"fluency": figures.Question(Scale("likert", 1, 5), nominal=False)}
    pairs = {(name, key) for name, key in people[["rater", "key"]].itertuples(index=False)}
    in_force = notes[
        (notes.in_force.astype(str).str.lower() == "true") & (notes.retest.astype(str).str.lower() == "false")
    ]
    in_force = in_force.assign(key=keyed(in_force["item"]))
    for name in PEOPLE:
        mine = people[people.rater == name]
        regular, on_gold = mine[mine.key < 100], mine[mine.key >= 100]
        # pandas: each other person's value and the judges' mean on the same item, then the mean distance
        others = people[people.rater != name].groupby("key").value.apply(list)
        with_people = regular[regular.key.isin(others.index)]
        gap_people = np.mean([abs(v - np.mean(others[k])) for k, v in zip(with_people.key, with_people.value)])
        with_judge = regular.merge(judge.groupby("key").score.mean().rename("judges"), on="key")
        gap_judges = (with_judge.value - with_judge.judges).abs().mean()
        right = int((on_gold.value.to_numpy() == [gold[k]["fluency"] for k in on_gold.key]).sum())
        answered, got_right, gaps = figures.gold_and_gaps(name, values, judged, gold, questions)
        assert (answered, got_right) == (len(on_gold), right)
        assert figures.mean_or_none(gaps.people) == pytest.approx(gap_people, abs=1e-12)
        assert figures.mean_or_none(gaps.judges) == pytest.approx(gap_judges, abs=1e-12)
        assert (len(gaps.people), len(gaps.judges)) == (len(with_people), len(with_judge))
        assert gaps.people_nominal == gaps.judges_nominal == []
        # the plan's counts: planned items, less those rated or skipped
        done = figures.done_by(pairs, name)
        skipped = set(in_force[(in_force.rater == name) & (in_force.kind == "skip")].key)
        flagged = set(in_force[(in_force.rater == name) & (in_force.kind == "flag")].key)
        planned = plan[plan.rater == name].assign(key=lambda f: keyed(f["item"]))
        mine_keys, mine_gold = set(planned.key), set(planned[planned.gold == 1].key)
        left = len(set(planned.key) - set(mine.key) - skipped)
        assert figures.plan_counts("fixed", 2, mine_keys, mine_gold, [], gold, pairs, done, skipped) == (
            len(planned),
            left,
        )
        assert figures.plan_counts(None, 2, mine_keys, mine_gold, [], gold, pairs, done, skipped) == (None, None)
        # the median time per item over what they rated (the export's seconds: the rating in force's)
        seconds = dict(zip(mine.key, mine.seconds, strict=True))
        assert figures.median_seconds(seconds, done) == pytest.approx(float(mine.seconds.median()), abs=0)
        # and `progress` shows the same figures (its seconds add a changed mind's: not compared here)
        row = shown[name]
        accuracy = figures.share_or_none(got_right, answered)
        assert row["gold_answered"] == answered and row["gold_accuracy"] == pytest.approx(accuracy)
        assert row["gap_people"] == pytest.approx(gap_people) and row["shared_people"] == len(with_people)
        assert row["gap_judges"] == pytest.approx(gap_judges) and row["shared_judges"] == len(with_judge)
        assert (row["assigned"], row["remaining"], row["done"]) == (len(planned), left, len(mine))
        assert (row["skipped"], row["flagged"]) == (len(skipped), len(flagged))
    # the marks, from the rules written out here: carol rates every item 3 in half a second and misses the gold
    carol = people[(people.rater == "carol") & (people.key < 100)]
    share = carol.value.value_counts().max() / len(carol)
    assert figures.same_answer_mark(figures.own_answers(values, "carol", set(gold))) == (
        f"same answer {share:.0%} of {len(carol)} ratings"
    )
    assert figures.same_answer_mark([1.0, 2.0] * 10) is None
    assert figures.same_answer_mark([3.0] * 9) is None  # too few to tell
    typical = float(np.median([shown["alice"]["median_seconds"], shown["bob"]["median_seconds"]]))
    assert figures.fast_mark(0.5, [shown["alice"]["median_seconds"], shown["bob"]["median_seconds"]], 20) == (
        f"fast: 0.5 s per item, the others {typical:.1f} s"
    )
    assert figures.fast_mark(0.5, [1.0], 4) is None and figures.fast_mark(0.5, [1.4], 5) is None
    assert figures.gold_mark(0.5, 4) == "gold 50% right (4 answers)"
    assert figures.gold_mark(0.5, 2) is None and figures.gold_mark(0.7, 10) is None
    assert shown["carol"]["marks"][:3] == [
        figures.gold_mark(shown["carol"]["gold_accuracy"], shown["carol"]["gold_answered"]),
        f"fast: 0.5 s per item, the others {typical:.1f} s",
        f"same answer {share:.0%} of {len(carol)} ratings",
    ]

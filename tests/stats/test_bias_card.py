"""The bias card (issue 32 item 4) through `tui-rater report`: each figure and its 95 % interval against the same
item bootstrap written here (numpy's lstsq and plain means on each resample's items, repeated as drawn; the draws
from numpy's generator with the report's seed scheme), on a seeded synthetic study and on the demo study."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.stats.ratings import insert
from tui_rater.stats import intervals as iv
from tui_rater.store.study import Study

pytestmark = pytest.mark.usefixtures("item_draws")  # the statistics checked on each resample's items

TAIL = (1 - iv.LEVEL) / 2
ITEMS = 60


def _draws(n: int) -> np.ndarray:
    """The report's resamples, drawn here: counts of each of ``n`` items, seeded by (SEED, n)."""
    return np.random.default_rng([iv.SEED, n]).multinomial(n, np.full(n, 1.0 / n), size=iv.RESAMPLES)


def _bootstrap(n: int, figure) -> tuple[float, float]:
    values = []
    for w in _draws(n):
        index = np.repeat(np.arange(n), w)
        values.append(figure(index))
    finite = np.asarray([v for v in values if v is not None and np.isfinite(v)])
    low, high = np.quantile(finite, [TAIL, 1 - TAIL])
    return float(low), float(high)


def _story(path, seed=4) -> dict:
    """60 stories of two systems ('mine' written by the judge's family), lengths 20-400 words, 3 people; the
    judge adds 0.4 per SD of length and 0.5 on its family's stories."""
    rng = np.random.default_rng(seed)
    study = Study.open(path)
    lengths = rng.integers(20, 400, size=ITEMS)
    systems = ["mine" if i % 2 else "other" for i in range(ITEMS)]
    rows = [
        {"id": f"s{i}", "system": systems[i], "prompt": f"P{i}", "story": " ".join(["word"] * int(lengths[i]))}
        for i in range(ITEMS)
    ]
    study.add_items(study.task("story"), rows)
    keys = [item.key for item in sorted(study.items("story"), key=lambda it: int(it.id[1:]))]
    truth = rng.integers(1, 6, size=ITEMS).astype(float)
    people = np.zeros(ITEMS)
    for name in ("h1", "h2", "h3"):
        rater = study.human(name)
        values = np.clip(truth + rng.choice([-1, 0, 0, 1], size=ITEMS), 1, 5)
        people += values / 3
        for key, v in zip(keys, values):
            study.add_rating(key, "likability", rater.id, float(v))
    z = (lengths - lengths.mean()) / lengths.std(ddof=1)
    judge_values = np.clip(
        np.round(truth + 0.4 * z + 0.5 * (np.array(systems) == "mine") + rng.normal(0, 0.6, ITEMS)), 1, 5
    )
    judge = study.judge("judge", {"api_model": "m", "mode": "text"})
    for key, v in zip(keys, judge_values):
        insert(study, key, "likability", judge.id, float(v))
    study.close()
    return {"lengths": lengths.astype(float), "people": people, "judge": judge_values, "systems": np.array(systems)}


def _records(cli, db, *extra) -> list[dict]:
    code, out, err = cli("report", "--db", db, "--format", "json", *extra)
    assert code == 0, err
    return [r for task in json.loads(out)["tasks"].values() for r in task]


def _one(records, table, attribute, judge, statistic) -> dict:
    found = [
        r
        for r in records
        if (r["table"], r["attribute"], r["evaluator"], r["statistic"]) == (table, attribute, judge, statistic)
    ]
    assert len(found) == 1, (table, attribute, judge, statistic)
    return found[0]


def _slope(y, people, length) -> float:
    z = (length - length.mean()) / length.std(ddof=1)
    design = np.column_stack([np.ones_like(z), z, people])
    return float(np.linalg.lstsq(design, y, rcond=None)[0][1])


@pytest.fixture(scope="module")
def story(tmp_path_factory):
    db = tmp_path_factory.mktemp("bias") / "story.db"
    return db, _story(db)


def test_leniency_and_its_interval_match_a_bootstrap_of_mean_differences(cli, story):
    db, truth = story
    record = _one(_records(cli, db), "bias", "likability", "judge", "leniency")
    d = truth["judge"] - truth["people"]
    assert record["value"] == pytest.approx(d.mean(), abs=1e-9)
    assert record["n"] == ITEMS
    assert (record["ci_low"], record["ci_high"]) == pytest.approx(_bootstrap(ITEMS, lambda i: d[i].mean()), abs=1e-9)
    assert record["ci"] == iv.METHOD


def test_length_slope_is_lstsq_beyond_the_people_with_a_bootstrap_interval(cli, story):
    db, truth = story
    record = _one(_records(cli, db), "bias", "likability", "judge", "length_slope")
    y, people, length = truth["judge"], truth["people"], truth["lengths"]
    assert record["value"] == pytest.approx(_slope(y, people, length), abs=1e-9)
    sd = length.std(ddof=1)  # the report holds the full data's SD fixed across resamples

    def resampled(i):
        z = (length[i] - length.mean()) / sd
        design = np.column_stack([np.ones_like(z), z, people[i]])
        return np.linalg.lstsq(design, y[i], rcond=None)[0][1]

    assert (record["ci_low"], record["ci_high"]) == pytest.approx(_bootstrap(ITEMS, resampled), abs=1e-6)
    assert record["ci_low"] > 0  # the planted 0.4 per SD is seen
    assert "per SD of length" in record["note"]


def test_self_preference_needs_a_declared_family_and_matches_a_bootstrap(cli, story):
    db, truth = story
    assert not [r for r in _records(cli, db) if r["statistic"] == "self_preference"]
    record = _one(_records(cli, db, "--family", "judge=mine"), "bias", "likability", "judge", "self_preference")
    d, mine = truth["judge"] - truth["people"], truth["systems"] == "mine"
    assert record["value"] == pytest.approx(d[mine].mean() - d[~mine].mean(), abs=1e-9)

    def resampled(i):
        return d[i][mine[i]].mean() - d[i][~mine[i]].mean()

    assert (record["ci_low"], record["ci_high"]) == pytest.approx(_bootstrap(ITEMS, resampled), abs=1e-9)
    assert record["ci_low"] > 0


@pytest.mark.parametrize("given", ["judge", "=mine", "judge=", "judge=a --family judge=b"])
def test_a_malformed_family_is_one_sentence_and_a_failure(cli, story, given):
    db, _ = story
    code, out, err = cli("report", "--db", db, "--format", "json", *(f"--family {given}".split()))
    assert code != 0 and out == ""
    assert "--family" in err and len(err.strip().splitlines()) == 1


def test_the_card_prints_in_80_columns_and_html(cli, story, tmp_path):
    db, _ = story
    code, out, err = cli("report", "--db", db, "--format", "table", "--family", "judge=mine")
    assert code == 0, err
    card = out[out.index("Bias cards") :]
    assert "self-preference" in card and "length slope" in card and "leniency" in card
    assert max(len(line) for line in out.splitlines()) <= 80
    page = tmp_path / "r.html"
    code, _, err = cli("report", "--db", db, "--out", page, "--family", "judge=mine")
    assert code == 0, err
    assert "Bias cards" in page.read_text()


def _pairs(path, seed=9) -> dict:
    """40 pairs 'mine vs other' / 'other vs mine'; a judge in both orders that prefers the first-shown text
    a little, the longer text, and its family's."""
    rng = np.random.default_rng(seed)
    study = Study.open(path)
    n = 40
    la, lb = rng.integers(20, 300, size=n), rng.integers(20, 300, size=n)
    systems = ["mine vs other" if i % 2 else "other vs mine" for i in range(n)]
    rows = [
        {
            "id": f"p{i}",
            "system": systems[i],
            "prompt": f"P{i}",
            "story_a": "w " * int(la[i]),
            "story_b": "w " * int(lb[i]),
        }
        for i in range(n)
    ]
    study.add_items(study.task("story-pairwise"), rows)
    keys = [item.key for item in sorted(study.items("story-pairwise"), key=lambda it: int(it.id[1:]))]
    humans = []
    for name in ("q1", "q2", "q3"):
        rater = study.human(name)
        verdicts = rng.choice(3, size=n, p=[0.4, 0.4, 0.2]).astype(float)
        humans.append(verdicts)
        for key, v in zip(keys, verdicts):
            study.add_rating(key, "preference", rater.id, float(v))
    judge = study.judge("pj", {"api_model": "pm", "mode": "text", "variant": "v1"})
    orders = {}
    for order in ("original", "swapped"):
        favour = (la > lb).astype(float) * 0.3 + (np.array(systems) == "mine vs other") * 0.2
        first = rng.random(n) < 0.35 + favour
        verdict = np.where(first, 0.0, np.where(rng.random(n) < 0.8, 1.0, 2.0))
        if order == "swapped":
            verdict[:3] = np.nan  # three pairs judged in one order only
        orders[order] = verdict
        for key, v in zip(keys, verdict):
            if not np.isnan(v):
                insert(study, key, "preference", judge.id, float(v), presentation=order)
    study.close()
    return {"la": la, "lb": lb, "humans": np.vstack(humans), "orders": orders, "systems": np.array(systems)}


@pytest.fixture(scope="module")
def pairs(tmp_path_factory):
    db = tmp_path_factory.mktemp("bias") / "pairs.db"
    return db, _pairs(db)


def _sign(verdicts: np.ndarray) -> np.ndarray:
    return np.select([verdicts == 0, verdicts == 1, verdicts == 2], [1.0, -1.0, 0.0], np.nan)


def test_position_and_order_consistency_carry_a_bootstrap_over_pairs(cli, pairs):
    db, truth = pairs
    records = _records(cli, db)
    o, s = truth["orders"]["original"], truth["orders"]["swapped"]
    first = (o == 0).astype(float) + (s == 1)
    decisive = np.isin(o, [0, 1]).astype(float) + np.isin(s, [0, 1])
    complete = ~np.isnan(s)
    same = (complete & (o == s)).astype(float)
    n = o.size
    rate = _one(records, "position", "preference", "pj", "first_position_rate")
    assert rate["value"] == pytest.approx(first.sum() / decisive.sum())
    assert (rate["ci_low"], rate["ci_high"]) == pytest.approx(
        _bootstrap(n, lambda i: first[i].sum() / decisive[i].sum()), abs=1e-9
    )
    consistent = _one(records, "position", "preference", "pj", "order_consistency")
    assert consistent["value"] == pytest.approx(same.sum() / complete.sum())
    assert (consistent["ci_low"], consistent["ci_high"]) == pytest.approx(
        _bootstrap(n, lambda i: same[i].sum() / complete[i].sum()), abs=1e-9
    )


def test_pairs_length_slope_and_self_preference_use_the_preferences(cli, pairs):
    db, truth = pairs
    records = _records(cli, db, "--family", "pj=mine")
    o, s = truth["orders"]["original"], truth["orders"]["swapped"]
    # the judge's verdict: both orders needed, disagreeing orders are a tie (MT-Bench's rule)
    verdict = np.where(np.isnan(s), np.nan, np.where(o == s, o, 2.0))
    judge = _sign(verdict)
    people = np.mean([_sign(h) for h in truth["humans"]], axis=0)
    length = (truth["la"] - truth["lb"]).astype(float)
    keep = ~np.isnan(judge)
    slope = _one(records, "bias", "preference", "pj", "length_slope")
    assert slope["n"] == keep.sum()
    assert slope["value"] == pytest.approx(_slope(judge[keep], people[keep], length[keep]), abs=1e-9)
    sign = np.where(truth["systems"] == "mine vs other", 1.0, -1.0)
    d = ((judge - people) * sign)[keep]
    own = _one(records, "bias", "preference", "pj", "self_preference")
    assert own["value"] == pytest.approx(d.mean(), abs=1e-9)
    assert (own["ci_low"], own["ci_high"]) == pytest.approx(_bootstrap(d.size, lambda i: d[i].mean()), abs=1e-9)


def test_demo_study_has_a_card_per_question_checked_here(cli, demo):
    records = _records(cli, demo)
    card = [r for r in records if r["table"] == "bias"]
    assert {r["statistic"] for r in card} == {"leniency", "length_slope"}
    study = Study.open(demo)
    items = sorted(study.items("hanna"), key=lambda item: item.key)
    length = np.array([len(item.fields["story"].split()) for item in items], dtype=float)
    keys = np.array([item.key for item in items])
    study.close()
    people_ids = {r["evaluator"] for r in records if r["table"] == "table1" and r["evaluator"] != "humans"}
    assert people_ids  # the judges
    for r in card:
        assert r["value"] is not None and r["ci_low"] <= r["value"] <= r["ci_high"], r
    # one question checked end to end against the ratings in the file, read here with sqlite3
    import sqlite3

    with sqlite3.connect(demo) as conn:
        rows = conn.execute(
            "SELECT r.item_key, p.kind, r.value FROM ratings r JOIN raters p ON p.id = r.rater_id "
            "WHERE r.attribute = 'coherence' AND r.value IS NOT NULL"
        ).fetchall()
    human = {k: [v for kk, kind, v in rows if kk == k and kind == "human"] for k in keys.tolist()}
    judge = {k: [v for kk, kind, v in rows if kk == k and kind == "llm"] for k in keys.tolist()}
    people = np.array([np.mean(human[k]) if human[k] else np.nan for k in keys.tolist()])
    judged = np.array([np.mean(judge[k]) if judge[k] else np.nan for k in keys.tolist()])
    keep = ~(np.isnan(people) | np.isnan(judged))
    slope = _one(records, "bias", "coherence", next(iter(people_ids)), "length_slope")
    assert slope["value"] == pytest.approx(_slope(judged[keep], people[keep], length[keep]), abs=1e-9)
    lenient = _one(records, "bias", "coherence", next(iter(people_ids)), "leniency")
    assert lenient["value"] == pytest.approx(np.mean(judged[keep] - people[keep]), abs=1e-9)


@pytest.mark.parametrize("given", ["nobody=mine", "judge=nowhere"])
def test_a_family_naming_an_unknown_judge_or_system_is_one_sentence(cli, story, given):
    db, _ = story
    code, out, err = cli("report", "--db", db, "--format", "json", "--family", given)
    assert code != 0 and out == ""
    assert "--family" in err and len(err.strip().splitlines()) == 1

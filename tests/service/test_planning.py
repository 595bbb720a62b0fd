"""`--order uncertain`: the plan follows the judge's uncertainty, is drawn once, and knows its probabilities."""

from __future__ import annotations

import math

import numpy as np
import pytest

from tui_rater.domain.errors import UserError
from tui_rater.service.planning import active_sample, item_uncertainties, plan_uncertain_order
from tui_rater.stats import active
from tui_rater.store.plans import load_plan
from tui_rater.store.study import Study

N = 40
UNSURE = {str(v): 0.2 for v in range(1, 6)}  # entropy 1: as unsure as can be
SURE = {"1": 0.9996, "2": 0.0001, "3": 0.0001, "4": 0.0001, "5": 0.0001}  # entropy 0.003


def entropy(distribution):
    p = np.array(list(distribution.values()))
    return float(-(p * np.log(p)).sum() / math.log(len(p)))


def titles_with_judge(path, distributions=True, judges=("dist",)):
    """Even items: the judge is unsure; odd items: sure."""
    study = Study.open(path)
    study.add_items(study.task("title-fluency"), [{"id": f"t{i}", "title": f"Title {i}"} for i in range(N)])
    for name in judges:
        judge = study.judge(name, {"m": name})
        for n, item in enumerate(study.items("title-fluency")):
            distribution = UNSURE if n % 2 == 0 else SURE
            details = {"distribution": distribution} if distributions else None
            samples = (1.0, 5.0, 3.0) if n % 2 == 0 else (4.0, 4.0, 4.0)
            for sample, value in enumerate(samples):
                study.add_rating(
                    item.key, "fluency", judge.id, value, sample=sample, details=details if sample == 0 else None
                )
    return study


def test_the_plan_puts_the_items_the_judge_is_unsure_of_early_and_stores_what_it_was_drawn_with(tmp_path):
    study = titles_with_judge(tmp_path / "a.db")
    plan = plan_uncertain_order(study, "title-fluency", "alice", seed=3)
    ids = {item.key: int(item.id[1:]) for item in study.items("title-fluency")}
    order = [ids[s.item_key] for s in plan.showings]
    assert sorted(order) == list(range(N))
    assert any(n % 2 == 1 for n in order[:20])  # drawn at random: not a plain sort
    # ... yet mostly the unsure items first: sampling weights 3 : 1 (half of them spread evenly)
    shares = []
    for annotator in range(30):
        drawn = plan_uncertain_order(study, "title-fluency", f"a{annotator}", seed=3)
        shares.append(np.mean([ids[s.item_key] % 2 == 0 for s in drawn.showings[:10]]))
    assert 0.65 < np.mean(shares) < 0.9
    stored = {ids[s.item_key]: s.uncertainty for s in plan.showings}
    assert stored[0] == pytest.approx(1.0) and stored[1] == pytest.approx(entropy(SURE))
    assert all(0 <= s.draw < 1 for s in plan.showings)
    # the same annotator and seed: the same order (drawn again in another file); another annotator: another
    again = plan_uncertain_order(titles_with_judge(tmp_path / "b.db"), "title-fluency", "alice", seed=3)
    assert [s.item_key for s in again.showings] == [s.item_key for s in plan.showings]
    other = plan_uncertain_order(study, "title-fluency", "bob", seed=3)
    assert [s.item_key for s in other.showings] != [s.item_key for s in plan.showings]


def test_without_distributions_the_samples_disagreement_is_the_uncertainty(tmp_path):
    study = titles_with_judge(tmp_path / "s.db", distributions=False)
    found = item_uncertainties(study, "title-fluency", "dist")
    by_id = {item.id: found[item.key] for item in study.items("title-fluency")}
    # samples 1, 5, 3 on a 1-5 scale: their standard deviation over the largest possible one (2)
    assert by_id["t0"] == pytest.approx(np.std([1, 5, 3]) / 2) and by_id["t1"] == 0.0


def test_a_stored_plan_is_continued_not_redrawn(tmp_path):
    study = titles_with_judge(tmp_path / "a.db")
    plan = plan_uncertain_order(study, "title-fluency", "alice", seed=1)
    judge = study.judge("dist", {"m": "dist"})
    for item in study.items("title-fluency"):  # the judge changes its mind: the plan keeps its probabilities
        study.add_rating(item.key, "fluency", judge.id, 2.0, details={"distribution": SURE})
    assert plan_uncertain_order(study, "title-fluency", "alice", seed=1).showings == plan.showings
    with pytest.raises(UserError, match="--replan"):
        plan_uncertain_order(study, "title-fluency", "alice", seed=2)
    redrawn = plan_uncertain_order(study, "title-fluency", "alice", seed=2, replan=True)
    assert redrawn.id != plan.id and redrawn.showings != plan.showings
    stored = load_plan(study, study.human("alice").id, "title-fluency", "uncertain")
    assert stored is not None and stored.showings == redrawn.showings and stored.settings == redrawn.settings


def test_the_judge_is_chosen_or_asked_for_in_one_sentence(tmp_path):
    two = titles_with_judge(tmp_path / "two.db", judges=("a", "b"))
    with pytest.raises(UserError, match="several judges rated task 'title-fluency' \\(a, b\\); choose one"):
        plan_uncertain_order(two, "title-fluency", "alice")
    with pytest.raises(UserError, match="judge 'c' has no ratings"):
        plan_uncertain_order(two, "title-fluency", "alice", judge="c")
    assert plan_uncertain_order(two, "title-fluency", "alice", judge="b").settings["judge"] == "b"
    bare = Study.open(tmp_path / "bare.db")
    bare.add_items(bare.task("title-fluency"), [{"id": "t", "title": "T"}])
    with pytest.raises(UserError, match="needs a judge's ratings"):
        plan_uncertain_order(bare, "title-fluency", "alice")
    assert bare._db.conn.execute("SELECT count(*) FROM plans").fetchone() == (0,)


def test_the_active_sample_is_the_rated_prefix_with_its_probabilities(tmp_path):
    study = titles_with_judge(tmp_path / "a.db")
    plan = plan_uncertain_order(study, "title-fluency", "alice", seed=5)
    alice = study.human("alice")
    keys = [s.item_key for s in plan.showings]
    for key in keys[:6]:
        study.add_rating(key, "fluency", alice.id, 3.0, parse_status="human")
    study.add_rating(keys[9], "fluency", alice.id, 3.0, parse_status="human")  # out of order: not in the sample
    sample = active_sample(study, "title-fluency", "alice")
    assert sample is not None and sample.rated == 6 and sample.item_keys == keys and sample.judge == "dist"
    u = np.array([s.uncertainty for s in plan.showings])
    assert sample.probability == pytest.approx(active.sampling_probabilities(u, 6))
    assert sample.probability.sum() == pytest.approx(6) and sample.drawn.tolist() == [True] * 6 + [False] * (N - 6)
    assert active_sample(study, "title-fluency", "bob") is None


def test_the_report_weights_the_uncertain_orders_ratings_by_their_probabilities(tmp_path):
    from tui_rater.service.reports import build_reports
    from tui_rater.stats.active import active_mean

    study = titles_with_judge(tmp_path / "r.db")
    plan = plan_uncertain_order(study, "title-fluency", "alice", seed=2)
    alice = study.human("alice")
    keys = [s.item_key for s in plan.showings]
    for n, key in enumerate(keys[:12]):
        study.add_rating(key, "fluency", alice.id, float(1 + n % 5), parse_status="human")
    study.add_rating(keys[30], "fluency", alice.id, 5.0, parse_status="human")  # out of order: not in the sample
    records = build_reports(study, ["title-fluency"])["title-fluency"]
    ppi = {r.statistic: r for r in records if r.table == "ppi"}
    assert "weighted by 1/π" in ppi["ppi_mean"].note
    sample = active_sample(study, "title-fluency", "alice")
    assert sample is not None
    judge_value = {i.key: np.mean((1.0, 5.0, 3.0) if n % 2 == 0 else (4.0,)) for n, i in enumerate(study.items())}
    human = {key: float(1 + n % 5) for n, key in enumerate(keys[:12])}
    order = [i.key for i in study.items("title-fluency")]
    pi = dict(zip(sample.item_keys, sample.probability))
    expected, _ = active_mean(
        [judge_value[k] for k in order], [human.get(k, np.nan) for k in order], [pi[k] for k in order]
    )
    assert ppi["ppi_mean"].value == pytest.approx(expected.estimate)


def test_with_a_team_plan_the_uncertain_order_is_drawn_from_the_annotators_own_items(tmp_path):
    """Route human effort where the judge is least sure, within the plan: alice's order holds her assigned
    items only, and someone outside the plan is refused before anything is written."""
    from tui_rater.service.team import Design, plan_team
    from tui_rater.store.team import assignments

    study = titles_with_judge(tmp_path / "t.db")
    plan_team(study, "title-fluency", Design(["alice", "bob", "carol"], per_item=1), dry_run=False, replace=False)
    alice = next(r for r in study.raters("human") if r.name == "alice")
    hers = {a.item_key for a in assignments(study, "title-fluency", alice.id)}
    assert 0 < len(hers) < N
    plan = plan_uncertain_order(study, "title-fluency", "alice", seed=3)
    assert sorted(s.item_key for s in plan.showings) == sorted(hers)
    with pytest.raises(UserError, match="'mallory' is not in the plan"):
        plan_uncertain_order(study, "title-fluency", "mallory", seed=3)
    assert all(r.name != "mallory" for r in study.raters("human"))

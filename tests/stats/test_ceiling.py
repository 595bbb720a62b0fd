"""The people's own ceiling (issue 33 item 2): each person held out against the mean of the others, recomputed
here with scipy on the items both rated; the agreement thirds by a plain sort of the items' spreads; and the report
(through the real CLI) carries both beside each judge figure."""

from __future__ import annotations

import json
from itertools import pairwise

import numpy as np
import pytest
from scipy import stats as sp

from tests.stats.simulated import likert_study
from tests.support import run_cli_process
from tui_rater.stats import ceiling as cl

SCIPY = {
    "kendall_tau": lambda x, y: sp.kendalltau(x, y).statistic,  # tau-b, as Chiang & Lee's Table 2
    "spearman": lambda x, y: sp.spearmanr(x, y).statistic,
    "pearson": lambda x, y: sp.pearsonr(x, y).statistic,
}


def _held_out(persons: dict[str, np.ndarray], name: str, figure: str, items=None) -> float:
    mine = persons[name]
    xs, ys = [], []
    for i in range(mine.size) if items is None else items:
        others = [v[i] for other, v in persons.items() if other != name and not np.isnan(v[i])]
        if np.isnan(mine[i]) or not others:
            continue
        xs.append(mine[i])
        ys.append(sum(others) / len(others))
    return float(SCIPY[figure](xs, ys))


def _persons(seed: int) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, size=60)
    persons = {f"p{k}": np.clip(truth + rng.integers(-1, 2, size=60), 1, 5).astype(float) for k in range(4)}
    for values in persons.values():
        values[rng.random(60) < 0.2] = np.nan  # each person skips some items
    return persons


@pytest.mark.parametrize("figure", ["kendall_tau", "spearman", "pearson"])
def test_each_person_held_out_against_the_rest_is_scipys_figure(figure):
    persons = _persons(3)
    found = cl.leave_one_person_out(persons, figure)
    expected = {name: _held_out(persons, name, figure) for name in persons}
    for name, stat in found.persons.items():
        assert stat.value == pytest.approx(expected[name], abs=1e-12)
        assert stat.extra["ci_low"] <= stat.value <= stat.extra["ci_high"]
    assert found.low == pytest.approx(min(expected.values()))
    assert found.high == pytest.approx(max(expected.values()))
    assert found.median == pytest.approx(float(np.median(list(expected.values()))))


def test_one_person_has_no_ceiling():
    found = cl.leave_one_person_out({"solo": np.array([1.0, 2.0, 3.0])}, "kendall_tau")
    assert found.low is None and "at least 2 persons" in found.note


def test_agreement_thirds_are_equal_thirds_of_the_items_sorted_by_the_persons_spread():
    persons = _persons(4)
    thirds = cl.agreement_thirds(persons)
    ratings = np.vstack(list(persons.values()))
    rated = [i for i in range(60) if np.sum(~np.isnan(ratings[:, i])) >= 2]
    spread = {i: float(np.std([v for v in ratings[:, i] if not np.isnan(v)])) for i in rated}
    ordered = sorted(rated, key=lambda i: (spread[i], i))
    size, extra = divmod(len(ordered), 3)
    cuts = [0, size + (extra > 0), 2 * size + (extra > 0) + (extra > 1), len(ordered)]
    for name, (a, b) in zip(("high", "middle", "low"), pairwise(cuts)):
        assert {i for i in range(60) if thirds[i] == name} == set(ordered[a:b])
    assert all(thirds[i] == "" for i in range(60) if i not in rated)


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    sim = likert_study(tmp_path_factory.mktemp("ceiling") / "c.db", prompts=30, attributes=("likability",))
    out = run_cli_process("report", "--db", sim.path, "--format", "json", timeout=300)
    assert out.returncode == 0, out.stderr
    text = run_cli_process("report", "--db", sim.path, timeout=300)
    assert text.returncode == 0, text.stderr
    return sim, json.loads(out.stdout)["tasks"]["story"], text.stdout


def _record(records, **where) -> dict:
    found = [r for r in records if all(r[k] == v for k, v in where.items())]
    assert len(found) == 1, (where, found)
    return found[0]


def test_the_report_gives_each_judge_figure_beside_the_held_out_persons(report):
    sim, records, text = report
    ids = sim.ids  # item key order is import order
    persons = {h: np.array([v.get(i, np.nan) for i in ids]) for h, v in sim.humans["likability"].items()}
    group = np.nanmean(np.vstack(list(persons.values())), axis=0)
    for figure in ("kendall_tau", "spearman", "pearson"):
        expected = {h: _held_out(persons, h, figure) for h in persons}
        for h, value in expected.items():
            assert _record(records, table="ceiling", evaluator=h, statistic=figure)["value"] == pytest.approx(value)
        low = _record(records, table="ceiling", evaluator="humans", statistic=f"{figure}_people_low")
        assert low["value"] == pytest.approx(min(expected.values())) and low["n"] == 4
        judge = np.array([sim.judges["likability"]["close"][i] for i in ids])
        shown = _record(records, table="ceiling", evaluator="close", statistic=figure)
        assert shown["value"] == pytest.approx(SCIPY[figure](group, judge))
        assert shown["ci_low"] is not None and shown["ci_low"] <= shown["value"] <= shown["ci_high"]
    assert "The people's own ceiling" in text and "people (held out)" in text


def test_the_report_stratifies_by_the_persons_agreement(report):
    sim, records, text = report
    ids = sim.ids
    persons = {h: np.array([v.get(i, np.nan) for i in ids]) for h, v in sim.humans["likability"].items()}
    thirds = cl.agreement_thirds(persons)
    group = np.nanmean(np.vstack(list(persons.values())), axis=0)
    judge = np.array([sim.judges["likability"]["close"][i] for i in ids])
    for third in ("high", "middle", "low"):
        items = [i for i in range(len(ids)) if thirds[i] == third]
        statistic = f"kendall_tau_{third}_agreement"
        shown = _record(records, table="ceiling_by_agreement", evaluator="close", statistic=statistic)
        assert shown["n"] == len(items)
        assert shown["value"] == pytest.approx(sp.kendalltau(group[items], judge[items]).statistic)
        people = [_held_out(persons, h, "kendall_tau", items) for h in persons]
        high = _record(records, table="ceiling_by_agreement", evaluator="humans", statistic=f"{statistic}_people_high")
        assert high["value"] == pytest.approx(max(people))
    assert "by how much the persons agree on an item" in " ".join(text.split())

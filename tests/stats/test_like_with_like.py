"""A judge that rated fewer items than the humans is compared with them on the items both rated, and says n
(issue 26, item 7): Table 1 gives both means again on those items; the convergence curves count only items
the judge rated too (they ran to n = 96 for a judge of 32)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.stats.ratings import insert
from tests.stats.simulated import likert_study
from tests.support import run_cli_process

PARTIAL = 36  # of the 100 items, the partial judge rated these (the first in import order)


@pytest.fixture(scope="module")
def partial(tmp_path_factory):
    sim = likert_study(tmp_path_factory.mktemp("partial") / "p.db", prompts=50, attributes=("likability",))
    study = sim.open()
    key = {item.id: item.key for item in study.items("story")}
    rater = study.judge("partial", {"api_model": "partial", "mode": "text"})
    rated = sim.ids[:PARTIAL]
    for item in rated:
        insert(study, key[item], "likability", rater.id, sim.judges["likability"]["close"][item])
    study.close()
    out = run_cli_process("report", "--db", sim.path, "--format", "json", timeout=300)
    assert out.returncode == 0, out.stderr
    return sim, rated, json.loads(out.stdout)["tasks"]["story"]


def _get(records, **where) -> list[dict]:
    return [r for r in records if all(r[k] == v for k, v in where.items())]


def test_table1_gives_both_means_on_the_items_both_rated(partial):
    sim, rated, records = partial
    for system in ("gpt2", "human", "all"):
        mine = [i for i in rated if system == "all" or sim.system[i] == system]
        humans = [v for h in sim.humans["likability"].values() for i, v in h.items() if i in mine]
        judge = [sim.judges["likability"]["close"][i] for i in mine]
        (shared,) = _get(records, table="table1", system=system, evaluator="partial", statistic="mean_on_shared_items")
        (theirs,) = _get(
            records, table="table1", system=system, evaluator="partial", statistic="humans_mean_on_shared_items"
        )
        assert shared["n"] == theirs["n"] == len(mine) and "items the judge and the humans both rated" in shared["note"]
        assert shared["value"] == pytest.approx(np.mean(judge)) and theirs["value"] == pytest.approx(np.mean(humans))
        # the existing means stay what they were: the judge's over its items, the humans' over theirs
        (whole,) = _get(
            records, table="table1", attribute="likability", system=system, evaluator="humans", statistic="mean"
        )
        every = [v for h in sim.humans["likability"].values() for i, v in h.items() if system in ("all", sim.system[i])]
        assert whole["value"] == pytest.approx(np.mean(every))
    # a judge of every item needs no second mean
    assert not _get(records, table="table1", evaluator="close", statistic="mean_on_shared_items")


def test_the_convergence_curves_count_only_items_the_judge_rated(partial):
    _, rated, records = partial
    omega = _get(records, table="verdict_convergence", evaluator="partial", statistic="winning_rate")
    assert omega and max(r["n"] for r in omega) == PARTIAL
    assert max(r["n"] for r in _get(records, table="verdict_convergence", evaluator="close")) == 100
    for system in ("gpt2", "human"):
        ppi = _get(records, table="ppi_convergence", evaluator="partial", system=system, statistic="ppi_mean")
        assert max(r["n"] for r in ppi) == sum(1 for i in rated if i.startswith(system))
    # the final curve point is the verdict on all the items both rated
    (verdict,) = _get(records, table="verdict", evaluator="partial", statistic="winning_rate")
    assert omega[-1]["value"] == verdict["value"]


def test_the_text_table_says_n(partial):
    sim, _, _ = partial
    text = run_cli_process("report", "--db", sim.path, env={"COLUMNS": "200", "PATH": "/usr/bin:/bin"}).stdout
    assert f"on the {PARTIAL} items both rated:" in text

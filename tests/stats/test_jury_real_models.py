"""Issue 32: the jury-vs-best-member test on a real model, with enough items for its p-value to mean something.

The demo study (HANNA's three people per story and Mistral-7B's imported ratings) plus SmolLM2-135M-Instruct
judging the first 30 stories in distribution mode; a mean jury of the two. Every question's paired t-test of the
jury's alt-test advantage against each member's, its Holm adjustment and the "better than its best member" verdict
are recomputed here from `export --what ratings` with the alt-test's per-item scores written from the paper
(Calderon et al. 2025) — scipy and statsmodels, not the product's code."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import scipy.stats as sp

from tests.judge.conftest import smollm2_gguf  # noqa: F401  (the real GGUF, as a fixture)
from tests.stats.test_jury import _advantages
from tests.support import copy_demo
from tui_rater.cli import main

STORIES = 30
TASK = "hanna"
MISTRAL = "hanna-mistral-7b-p1"
SMALL = "smollm2"


def run(*args: object) -> int:
    return main([str(a) for a in args])


@pytest.mark.slow
@pytest.mark.timeout(1200)  # the judge alone: 150 s on a quiet 2-core machine, over 300 s beside a busy suite
def test_a_jury_of_a_real_model_and_mistral_is_tested_against_its_best_member_as_scipy_does(
    tmp_path,
    demo_original,
    smollm2_gguf,  # noqa: F811
):
    from statsmodels.stats.multitest import multipletests

    db = copy_demo(demo_original, tmp_path, "d.db")
    code = run(
        "judge", "--db", db, "--model", smollm2_gguf, "--task", TASK, "--mode", "distribution", "--min-mass", "0",
        "--samples", "1", "--limit", STORIES, "--judge-name", SMALL, "--as", "lead",
    )  # fmt: skip
    assert code in (0, 1)  # 1: not agreement-ready (the small model puts little mass on the scale)
    exported, judgements, report = tmp_path / "ratings.csv", tmp_path / "judgements.jsonl", tmp_path / "report.json"
    assert run("export", "--what", "ratings", "--db", db, "--out", exported) == 0
    assert run("export", "--what", "judgements", "--db", db, "--out", judgements) == 0
    # the ratings export names a judge by its identity, the reports and `jury` by its label: the judgements have both
    labels = {row["rater"]: row["judge"] for row in map(json.loads, judgements.read_text().splitlines())}
    ratings = pd.read_csv(exported)
    ratings = ratings[ratings["task"] == TASK]
    ratings.loc[ratings["kind"] == "llm", "rater"] = ratings.loc[ratings["kind"] == "llm", "rater"].map(
        lambda r: labels.get(r, r)
    )
    small = sorted({label for label in labels.values() if SMALL in label})
    assert len(small) == 1, labels
    names = [MISTRAL, small[0]]
    assert run("jury", "pair", "--members", ",".join(names), "--aggregate", "mean", "--task", TASK, "--db", db) == 0
    assert run("report", "--db", db, "--task", TASK, "--format", "json", "--out", report) == 0
    jury_rows = [r for r in json.loads(report.read_text())["tasks"][TASK] if r["table"] == "jury"]
    assert jury_rows
    checked, finite = 0, []
    for attribute in sorted(set(ratings["attribute"])):
        frame = ratings[ratings["attribute"] == attribute]
        per = frame.groupby(["rater", "item"])["value"].mean()
        humans = {
            h: per[h].to_dict() for h in sorted(set(frame.loc[frame["kind"] == "human", "rater"]))
        }  # fmt: skip
        members = {name: per[name].to_dict() for name in names}
        items = sorted(set.intersection(*(set(m) for m in members.values())))
        assert len(items) >= STORIES - 2, (attribute, len(items))  # a reading with no mass is no value
        jury = {i: float(np.mean([members[m][i] for m in members])) for i in items}
        own = _advantages(humans, jury, items)
        table = [r for r in jury_rows if r["attribute"] == attribute]
        pvalues = []
        for name in members:
            theirs = _advantages(humans, members[name], items)
            expected = sp.ttest_rel(own, theirs, alternative="greater")
            row = next(
                r for r in table if r["statistic"] == "advantage_difference" and r["evaluator_b"] == name
            )  # fmt: skip
            assert row["n"] == len(items)
            assert row["value"] == pytest.approx(float(np.mean(own - theirs)), abs=1e-12)
            if np.isnan(expected.pvalue):
                assert row["p"] is None or np.isnan(row["p"])
                pvalues.append(1.0)
                continue
            assert row["p"] == pytest.approx(expected.pvalue, rel=1e-9)
            pvalues.append(float(expected.pvalue))
            finite.append((attribute, name, round(float(expected.pvalue), 4)))
        for name, adjusted in zip(members, multipletests(pvalues, method="holm")[1], strict=True):
            row = next(r for r in table if r["statistic"] == "advantage_difference" and r["evaluator_b"] == name)
            if row["p"] is not None and not np.isnan(row["p"]):
                assert f"Holm-adjusted p = {adjusted:.3g}" in row["note"]
        best = next(r for r in table if r["statistic"] == "better_than_best_member")
        assert best["value"] == float(max(pvalues) < 0.05)
        checked += 1
    assert checked == 6  # HANNA's six questions
    print("jury vs member, one-sided paired t-test p:", finite)
    assert len(finite) == 12  # every question, both members: a real p-value each, checked above

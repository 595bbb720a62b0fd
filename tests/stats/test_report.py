"""The report on real data: HANNA's human ratings and an LLM's, checked against krippendorff and scipy.

The HANNA subset is in tests/data/hanna (runs from a fresh clone); the study is built by the
``hanna`` fixture (tests/stats/conftest.py) through the real CLI.
"""

from __future__ import annotations

import json

import krippendorff
import numpy as np
import pytest
from scipy import stats as sp

from tests.stats.hanna import CRITERIA, SYSTEMS, human_matrix
from tests.stats.hanna import judge_vector as llm_vector
from tests.support import run_cli_process
from tui_rater.stats.report import build_report
from tui_rater.store.study import Study


@pytest.mark.parametrize("code", list(CRITERIA))
def test_alpha_matches_krippendorff(hanna, code):
    data, index, _ = hanna
    for system in ("Human", "GPT-2"):
        m = human_matrix(data, system, code)
        expected_i = krippendorff.alpha(reliability_data=m, level_of_measurement="interval")
        expected_o = krippendorff.alpha(
            reliability_data=m, level_of_measurement="ordinal", value_domain=[1, 2, 3, 4, 5]
        )
        got = index[("table1", CRITERIA[code], system, "humans", None, "alpha_interval")]
        assert got.value == pytest.approx(expected_i, abs=1e-9)
        assert index[("table1", CRITERIA[code], system, "humans", None, "alpha_ordinal")].value == pytest.approx(
            expected_o, abs=1e-9
        )


@pytest.mark.parametrize("code", list(CRITERIA))
def test_kendall_and_welch_match_scipy(hanna, code):
    data, index, _ = hanna
    name = CRITERIA[code]
    for system in ("Human", "GPT-2"):
        human_mean = human_matrix(data, system, code).mean(axis=0)
        llm = llm_vector(data, system, code)
        keep = ~np.isnan(llm)
        expected = sp.kendalltau(human_mean[keep], llm[keep])
        got = index[("table2", name, system, "humans", "llama-13b", "kendall_tau")]
        assert got.value == pytest.approx(expected.statistic, abs=1e-12)
        assert got.p == pytest.approx(expected.pvalue, rel=1e-9)
    a = human_matrix(data, "Human", code).ravel()
    b = human_matrix(data, "GPT-2", code).ravel()
    expected = sp.ttest_ind(a, b, equal_var=False)
    got = index[("welch", name, "GPT-2", "humans", None, "welch_t")]
    assert got.value == pytest.approx(expected.statistic, abs=1e-9) and got.p == pytest.approx(
        expected.pvalue, rel=1e-9
    )


def test_means_and_pairs(hanna):
    data, index, _ = hanna
    m = human_matrix(data, "Human", "CH")
    assert index[("table1", "coherence", "Human", "humans", None, "mean")].value == pytest.approx(m.mean())
    assert index[("table1", "coherence", "Human", "humans", None, "std")].value == pytest.approx(m.ravel().std(ddof=1))
    # every human vs every other on all items, systems pooled (Table 6 proper is per writer: test_tables.py)
    h1 = np.concatenate([data[(system, "hanna-h1", "CH")] for system in SYSTEMS])
    h2 = np.concatenate([data[(system, "hanna-h2", "CH")] for system in SYSTEMS])
    got = index[("pairs", "coherence", "all", "hanna-h1", "hanna-h2", "kendall_tau")]
    assert got.value == pytest.approx(sp.kendalltau(h1, h2).statistic)


def test_report_formats(hanna, tmp_path):
    _, _, db = hanna
    out = run_cli_process("report", "--db", db, "--format", "json")
    assert out.returncode == 0, out.stderr
    payload = json.loads(out.stdout)
    assert payload["schema"] == "tui-rater.report/1"
    record = payload["tasks"]["hanna"][0]
    assert set(record) == {
        "table",
        "task",
        "attribute",
        "system",
        "evaluator",
        "evaluator_b",
        "statistic",
        "value",
        "n",
        "p",
        "note",
        "ci_low",
        "ci_high",
        "ci",
    }
    md = run_cli_process("report", "--db", db, "--format", "markdown").stdout
    assert "## Table 1" in md and "| coherence | humans |" in md
    table = run_cli_process("report", "--db", db).stdout
    assert "Table 2" in table and "llama-13b" in table
    assert run_cli_process("report", "--db", db, "--format", "csv", "--out", tmp_path / "r.csv").returncode == 0
    assert (tmp_path / "r.csv").read_text().startswith("table,task,attribute")


def test_undefined_values_show_as_na(tmp_path):
    db = tmp_path / "one.db"
    study = Study.open(db)
    study.add_items(study.task("title-fluency"), [{"id": "a", "system": None, "title": "T"}])
    rater = study.human("only")
    study.add_rating(study.items()[0].key, "fluency", rater.id, 3)
    records = build_report(study, "title-fluency")
    alpha = next(r for r in records if r.statistic == "alpha_interval")
    assert alpha.value is None and alpha.note == "needs at least two raters"
    out = run_cli_process("report", "--db", db)
    assert out.returncode == 0 and "n/a" in out.stdout

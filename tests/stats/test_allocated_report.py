"""The report on a study whose people rated a stratified draw (``assign --allocate``): each stratum weighted by its
share N_h / N of the draw's frame, on the pilot and each stratum's rated prefix of the draw. Checked against
``ppi_py`` (its weighted PPI point estimate, with weights n·W_h / n_h on the rated items) and against the stratified
variance Σ W_h² Var_h / n_h (+ the judge's term) written here from Cochran (1977, §5.3) and Fisch et al. (2024)."""

from __future__ import annotations

import json
import shutil
import sqlite3

import numpy as np
import ppi_py
import pytest
from scipy import stats as sp

from tests.stats.simulated import likert_study
from tests.stats.test_ppi_recal import stratified_by_hand
from tests.support import digest, run_cli_process
from tui_rater.store.allocations import load_allocation
from tui_rater.store.study import Study

RATED_NEW = 30  # of the 40 drawn, people rate the first 30 (with a gap: below)


@pytest.fixture(scope="module")
def drawn(tmp_path_factory):
    """The pilot study with a draw of 40, the first 30 drawn items rated by a new person (but one, skipped: the
    items of its stratum after it are rated yet not part of the sample), and one item outside the draw rated too."""
    path = tmp_path_factory.mktemp("allocated") / "s.db"
    sim = likert_study(path, humans=3, prompts=150, seed=11, rated_share=0.2, attributes=("likability",))
    done = run_cli_process("assign", "--db", path, "--task", "story", "--allocate", "40", "--judge", "close")
    assert done.returncode == 0, done.stderr
    study = Study.open(path)
    stored = load_allocation(study, "story")
    person = study.human("newcomer")
    rng = np.random.default_rng(3)
    gap = stored.drawn[5]
    for key in stored.drawn[:RATED_NEW]:
        if key != gap:
            study.add_rating(key, "likability", person.id, float(rng.integers(1, 6)))
    outside = next(k for k in stored.stratum_of if k not in stored.pilot and k not in stored.drawn)
    study.add_rating(outside, "likability", person.id, 5.0)
    study.close()
    return sim, path, gap, outside


def report(path):
    out = run_cli_process("report", "--db", path, "--task", "story", "--format", "json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)["tasks"]["story"]


def get(records, table, statistic, system="all", judge="close"):
    found = [
        r
        for r in records
        if (r["table"], r["attribute"], r["system"], r["evaluator"], r["statistic"])
        == (table, "likability", system, judge, statistic)
    ]
    assert len(found) == 1, (table, statistic, len(found))
    return found[0]


def by_hand(path, gap):
    """Every item's judge value, people's mean, stratum, and whether it is in the stratified sample -- from the
    file's rows, with the sample's rule written here: the pilot, and each stratum's drawn items up to its first gap."""
    study = Study.open(path)
    stored = load_allocation(study, "story")
    conn = sqlite3.connect(path)
    rows = conn.execute(
        "SELECT r.item_key, ra.kind, ra.name, r.value FROM ratings r JOIN raters ra ON ra.id = r.rater_id "
        "WHERE r.attribute = 'likability' AND r.retracted = 0"
    ).fetchall()
    people: dict[int, list[float]] = {}
    judge: dict[int, float] = {}
    for key, kind, name, value in rows:
        if kind == "human":
            people.setdefault(key, []).append(value)
        elif name == "close":
            judge[key] = value
    keys = sorted(stored.stratum_of)
    sample = {k for k in stored.pilot if k in people}
    stopped = set()
    for key in stored.drawn:
        s = stored.stratum_of[key]
        if s not in stopped and key in people:
            sample.add(key)
        else:
            stopped.add(s)
    assert gap not in sample
    f = np.array([judge[k] for k in keys])
    y = np.array([np.mean(people[k]) if k in sample else np.nan for k in keys])
    strata = np.array([stored.stratum_of[k] for k in keys])
    return f, y, strata, len(set(people) - sample)


def test_the_stratified_estimates_weight_each_stratum_by_its_share_of_the_frame(drawn):
    _, path, gap, _ = drawn
    records = report(path)
    f, y, strata, left_out = by_hand(path, gap)
    rated = ~np.isnan(y)
    n = int(rated.sum())
    share = {s: (strata == s).mean() for s in set(strata)}
    per = {s: int((rated & (strata == s)).sum()) for s in set(strata)}
    w = np.array([n * share[s] / per[s] for s in strata[rated]])  # ppi_py normalises weights to mean 1
    # stratified PPI++: the paper's estimate and variance (one tuned λ), and ppi_py's weighted PPI at that λ
    estimate, variance, _, ppi_df = stratified_by_hand(f, y, strata)
    found = get(records, "ppi_distribution", "allocated")
    assert found["n"] == n and found["value"] == pytest.approx(estimate, abs=1e-12)
    note = found["note"]
    lam = float(note.split("one λ = ")[1].split(";")[0])
    reference = ppi_py.ppi_mean_pointestimate(y[rated], f[rated], f, lam=lam, w=w)
    assert found["value"] == pytest.approx(float(np.squeeze(reference)), abs=0.01)  # λ as printed, 2 decimals
    reference = ppi_py.ppi_mean_pointestimate(y[rated], f[rated], f, lam=_lam(f, y, strata), w=w)
    assert found["value"] == pytest.approx(float(np.squeeze(reference)), abs=1e-12)
    # its interval: Student's t on the stratified variance, Satterthwaite's degrees of freedom
    ppi_width = get(records, "ppi_distribution", "allocated_width")["value"]
    assert ppi_width == pytest.approx(2 * sp.t.ppf(0.975, ppi_df) * np.sqrt(variance), rel=1e-9)
    assert left_out > 1  # the item outside the draw, and those of its stratum rated past the gap
    assert f"{left_out} rated items outside the pilot and the draw's rated prefix left out" in note
    assert "N_h / n_h" in note
    # humans only, stratified: Σ W_h ȳ_h = ppi_py's weighted classical mean, variance Σ W_h² s_h² / n_h
    classical = get(records, "ppi_distribution", "allocated_classical")
    weighted_mean = np.mean(w * y[rated])
    assert classical["value"] == pytest.approx(weighted_mean, abs=1e-12)
    lo, hi = ppi_py.classical_mean_ci(y[rated], w=w, alpha=0.05)
    assert lo < classical["value"] < hi
    cochran = sum(share[s] ** 2 * np.var(y[rated & (strata == s)], ddof=1) / per[s] for s in share)
    width = get(records, "ppi_distribution", "allocated_classical_width")["value"]
    df = cochran**2 / sum(
        (share[s] ** 2 * np.var(y[rated & (strata == s)], ddof=1) / per[s]) ** 2 / (per[s] - 2) for s in share
    )
    assert width == pytest.approx(2 * sp.t.ppf(0.975, df) * np.sqrt(cochran), rel=1e-9)
    assert ppi_width < width  # the judge carries signal here
    # the methods that assume a uniform sample are not shown at all
    assert not [
        r for r in records if r["table"] == "ppi_distribution" and r["statistic"] in ("classical", "ppi_plus_plus")
    ]


def _lam(f, y, strata):
    """The stratified PPI++'s λ (Fisch et al. 2024): Σ a_k C_k / Σ a_k V_k, a_k = w_k² (1/n_k − 1/N_k)."""
    a, c, v = [], [], []
    for s in sorted(set(strata)):
        mine = strata == s
        rated = mine & ~np.isnan(y)
        a.append(mine.mean() ** 2 * (1 / rated.sum() - 1 / mine.sum()))
        c.append(np.cov(y[rated], f[rated])[0, 1])
        v.append(np.var(f[mine], ddof=1))
    return float(np.dot(a, c) / np.dot(a, v))


def test_each_systems_mean_is_ppi_on_its_own_stratum_with_weights_from_the_draw(drawn):
    _, path, gap, _ = drawn
    records = report(path)
    f, y, strata, _ = by_hand(path, gap)
    for system in ("gpt2", "human"):
        mine = strata == system
        rated = mine & ~np.isnan(y)
        found = get(records, "ppi", "ppi_mean", system=system)
        # π = n_h / N_h for every sampled item of the system: 1/N Σ [f + ξ (y − f) / π] is PPI with λ = 1
        expected = ppi_py.ppi_mean_pointestimate(y[rated], f[rated], f[mine], lam=1)
        assert found["value"] == pytest.approx(float(np.squeeze(expected)), abs=1e-12)
        assert found["n"] == int(rated.sum()) and "N_h / n_h" in found["note"]


def test_a_design_that_cannot_be_weighted_gives_no_number_and_a_tampered_file_is_refused(drawn, tmp_path):
    _, path, _, _ = drawn
    # the judge's rating of a frame item withdrawn: the stratified estimate says so rather than drop the item
    copy = tmp_path / "missing.db"
    shutil.copy(path, copy)
    conn = sqlite3.connect(copy)
    conn.execute(
        "UPDATE ratings SET retracted = 1 WHERE id = (SELECT r.id FROM ratings r JOIN raters ra ON ra.id = r.rater_id "
        "WHERE ra.name = 'close' LIMIT 1)"
    )
    conn.commit()
    conn.close()
    found = get(report(copy), "ppi_distribution", "allocated")
    assert found["value"] is None and "the judge did not rate 1 items of the stored draw's frame" in found["note"]
    # a frame item moved to the other stratum by hand: one sentence, exit 2, the file untouched
    copy = tmp_path / "moved.db"
    shutil.copy(path, copy)
    conn = sqlite3.connect(copy)
    conn.execute("UPDATE allocation_items SET stratum = 'gpt2' WHERE rowid = (SELECT min(rowid) FROM allocation_items "
                 "WHERE stratum = 'human')")  # fmt: skip
    conn.commit()
    conn.close()
    before = digest(copy)
    out = run_cli_process("report", "--db", copy, "--task", "story", "--format", "json")
    assert out.returncode == 2 and "the file was altered" in out.stderr and out.stderr.count("\n") == 1
    assert digest(copy) == before

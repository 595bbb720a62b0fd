"""The reliability model (``stats/rater_model.py``) against crowd-kit's Dawid-Skene on crowd-kit's own test data, and
on synthetic studies with known rater abilities: the abilities ranked (Spearman ρ ≥ 0.9, scipy), each rater's κ
against the truth close to scikit-learn's κ of their answers against the planted true answers."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import scipy.stats as sp
from sklearn.metrics import cohen_kappa_score

from tui_rater.domain.protocols import Level
from tui_rater.domain.questions import Scale
from tui_rater.stats import rater_model as rm
from tui_rater.stats.rater_fit import fit_question

pd = pytest.importorskip("pandas")
crowdkit = pytest.importorskip("crowdkit.aggregation")

# crowd-kit's tests/conftest.py: toy_answers_df (the toy YSDA dataset), reproduced (its datasets are downloads)
TOY = [
    ("w1", "t1", "no"), ("w1", "t2", "yes"), ("w1", "t3", "yes"), ("w1", "t4", "yes"), ("w1", "t5", "yes"),
    ("w2", "t1", "yes"), ("w2", "t2", "yes"), ("w2", "t3", "no"), ("w2", "t4", "yes"), ("w2", "t5", "no"),
    ("w3", "t2", "yes"), ("w3", "t3", "no"), ("w3", "t4", "yes"), ("w3", "t5", "no"),
    ("w4", "t1", "yes"), ("w4", "t2", "no"), ("w4", "t3", "yes"), ("w4", "t4", "yes"), ("w4", "t5", "no"),
    ("w5", "t1", "no"), ("w5", "t2", "no"), ("w5", "t3", "no"), ("w5", "t4", "yes"), ("w5", "t5", "no"),
]  # fmt: skip
# crowd-kit's simple_answers_df (good workers, a fraudster always answering "parrot", a careless one), the ids cut
_W = ["bde3", "b17c", "a452", "0f65", "0c3e", "e563"]
SIMPLE = [
    (_W[0], "eec", "goose"), (_W[0], "efb", "parrot"), (_W[0], "f03", "goose"), (_W[0], "f05", "goose"),
    (_W[0], "f02", "parrot"), (_W[0], "f08", "parrot"),
    (_W[1], "efb", "parrot"), (_W[1], "ee8", "chicken"), (_W[1], "f07", "parrot"), (_W[1], "efd", "chicken"),
    (_W[1], "ee4", "chicken"), (_W[1], "f03", "goose"),
    (_W[2], "ee8", "chicken"), (_W[2], "eec", "goose"), (_W[2], "f05", "goose"), (_W[2], "f02", "parrot"),
    (_W[2], "f08", "parrot"),
    (_W[3], "eec", "goose"), (_W[3], "ee8", "chicken"), (_W[3], "f03", "goose"), (_W[3], "ee4", "chicken"),
    (_W[4], "eec", "parrot"), (_W[4], "efb", "parrot"), (_W[4], "f07", "parrot"), (_W[4], "efd", "parrot"),
    (_W[4], "ee4", "parrot"), (_W[4], "f05", "parrot"),
    (_W[5], "efb", "parrot"), (_W[5], "ee8", "goose"), (_W[5], "f02", "parrot"), (_W[5], "f08", "parrot"),
    (_W[5], "f07", "parrot"), (_W[5], "efd", "goose"),
]  # fmt: skip


def _ours(frame: Any, n_iter: int, tol: float) -> tuple[Any, Any, Any, rm.Fit]:
    tasks, item = np.unique(frame["task"], return_inverse=True)
    workers, rater = np.unique(frame["worker"], return_inverse=True)
    answers, label = np.unique(frame["label"], return_inverse=True)
    labels = rm.Labels(item, rater, label, len(tasks), len(workers), len(answers))
    return tasks, workers, answers, rm.dawid_skene(labels, n_iter=n_iter, tol=tol)


@pytest.mark.parametrize("rows", [TOY, SIMPLE], ids=["toy_ysda", "simple"])
@pytest.mark.parametrize(("n_iter", "tol"), [(0, 0.0), (1, 0.0), (10, 0.0), (100500, 1e-5)])
def test_dawid_skene_matches_crowd_kit_on_its_test_data(
    rows: list[tuple[str, str, str]], n_iter: int, tol: float
) -> None:
    frame = pd.DataFrame(rows, columns=["worker", "task", "label"])
    reference = crowdkit.DawidSkene(n_iter=n_iter, tol=tol).fit(frame)
    tasks, workers, answers, fit = _ours(frame, n_iter, tol)
    np.testing.assert_allclose(fit.posterior, reference.probas_.loc[tasks, answers].to_numpy(), atol=1e-6)
    np.testing.assert_allclose(fit.prior, reference.priors_.loc[answers].to_numpy(), atol=1e-6)
    for (worker, answered), row in reference.errors_.iterrows():
        ours = fit.confusion[list(workers).index(worker), list(answers).index(answered)]
        np.testing.assert_allclose(ours, row.loc[answers].to_numpy(), atol=1e-6)
    assert fit.iterations == (len(reference.loss_history_) if n_iter else 0)


def _nominal_study(rng: np.random.Generator, accuracies: list[float], items: int, k: int = 3) -> tuple[Any, Any]:
    truth = rng.integers(0, k, items)
    columns = np.empty((len(accuracies), items))
    for r, accuracy in enumerate(accuracies):
        right = rng.random(items) < accuracy
        columns[r] = np.where(right, truth, rng.integers(0, k, items))
    return truth, columns


def test_dawid_skene_matches_crowd_kit_on_a_synthetic_study() -> None:
    rng = np.random.default_rng(5)
    _truth, columns = _nominal_study(rng, [0.9, 0.8, 0.7, 0.5, 0.35], 300, k=4)
    rows = [(f"w{r}", f"t{i:03d}", int(columns[r, i])) for r in range(5) for i in range(300) if rng.random() < 0.8]
    frame = pd.DataFrame(rows, columns=["worker", "task", "label"])
    reference = crowdkit.DawidSkene().fit(frame)
    tasks, _workers, answers, fit = _ours(frame, rm.N_ITER, rm.TOL)
    np.testing.assert_allclose(fit.posterior, reference.probas_.loc[tasks, answers].to_numpy(), atol=1e-6)


def test_nominal_abilities_rank_the_raters() -> None:
    rng = np.random.default_rng(11)
    accuracies = [0.95, 0.85, 0.75, 0.65, 0.55, 0.45, 0.35]
    truth, columns = _nominal_study(rng, accuracies, 400)
    scale = Scale(kind="choice", low=0, high=2)
    fitted = fit_question([f"r{i}" for i in range(7)], columns, Level.NOMINAL, scale, resamples=20)
    assert not isinstance(fitted, str)
    rho = sp.spearmanr(fitted.model.reliability, accuracies).statistic
    assert rho >= 0.9
    # the model's κ against the latent truth is the κ of the rater's answers against the planted truth
    for r in range(7):
        assert fitted.model.reliability[r] == pytest.approx(cohen_kappa_score(columns[r], truth), abs=0.06)
    assert np.all(fitted.model.std_error > 0) and np.all(fitted.model.std_error < 0.1)
    assert np.mean(fitted.consensus(400) == truth) > 0.9


def _likert_study(rng: np.random.Generator, spreads: list[float], items: int) -> tuple[Any, Any]:
    truth = rng.integers(1, 6, items).astype(float)
    columns = np.vstack([np.clip(np.rint(truth + rng.normal(0, s, items)), 1, 5) for s in spreads])
    return truth, columns


def test_ordinal_abilities_rank_the_raters_and_match_weighted_kappa() -> None:
    rng = np.random.default_rng(3)
    spreads = [0.3, 0.5, 0.7, 0.9, 1.2, 1.6, 2.5]
    truth, columns = _likert_study(rng, spreads, 400)
    fitted = fit_question([f"r{i}" for i in range(7)], columns, Level.ORDINAL, Scale(), resamples=20)
    assert not isinstance(fitted, str)
    rho = sp.spearmanr(fitted.model.reliability, [-s for s in spreads]).statistic
    assert rho >= 0.9
    for r in range(7):
        expected = cohen_kappa_score(columns[r].astype(int), truth.astype(int), weights="quadratic")
        assert fitted.model.reliability[r] == pytest.approx(expected, abs=0.06)
    assert np.corrcoef(fitted.consensus(400), truth)[0, 1] > 0.9


def test_a_continuous_score_is_binned_in_tenths() -> None:
    index, values = rm.to_ordered(np.array([0.0, 9.99, 10.0, 55.0, 100.0]), 0, 100, [])
    assert index.tolist() == [0, 0, 1, 5, 9]
    assert values.tolist() == [5.0 + 10 * i for i in range(10)]


def test_too_few_raters_is_said() -> None:
    columns = np.array([[1.0, 2, 3, 4, 5, 1], [1, 2, 3, 4, 5, 2]])
    assert fit_question(["a", "b"], columns, Level.ORDINAL, Scale()) == "fewer than 3 raters"

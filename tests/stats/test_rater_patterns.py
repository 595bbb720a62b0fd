"""The reliability model is fitted on the distinct rating patterns weighted by their counts (issue 35): its work does
not grow with the items, and the fit is the fit of the items -- checked against crowd-kit's Dawid-Skene, against an
ordered-probit posterior and scikit-learn's κ written here from the model's definition, and against the item
bootstrap run item by item."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from scipy.stats import norm
from sklearn.metrics import cohen_kappa_score

from tui_rater.domain.protocols import Level
from tui_rater.domain.questions import Scale
from tui_rater.stats import rater_model as rm
from tui_rater.stats.rater_fit import fit_question

SPREADS = [0.4, 0.7, 1.1, 0.3]  # three people and a judge, in scale points


def _study(items: int, seed: int = 7) -> Any:
    """raters x items on a 1-5 scale: the judge (last) rates every item, each person about half of them."""
    rng = np.random.default_rng(seed)
    truth = rng.integers(1, 6, items).astype(float)
    columns = np.vstack([np.clip(np.rint(truth + rng.normal(0, s, items)), 1, 5) for s in SPREADS])
    columns[:-1][rng.random((len(SPREADS) - 1, items)) < 0.5] = np.nan
    return columns


def _patterns(columns: Any) -> int:
    return len({tuple(np.nan_to_num(column, nan=0.0).tolist()) for column in columns.T})


def _names() -> list[str]:
    return [f"r{r}" for r in range(len(SPREADS))]


def test_the_fit_sees_each_rating_pattern_once_not_each_item(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every E-step, of the fit and of each bootstrap refit, computes one posterior row per distinct pattern: a study
    ten times longer (each item ten times) costs the same E-steps (before: one row per item, ten times as many)."""
    rows: list[int] = []
    e_step = rm._e_step

    def counting(labels: rm.Labels, prior: Any, confusion: Any) -> Any:
        posterior = e_step(labels, prior, confusion)
        rows.append(posterior.shape[0])
        return posterior

    monkeypatch.setattr(rm, "_e_step", counting)
    columns = _study(400)
    seen = []
    for copies in (1, 10):
        rows.clear()
        fitted = fit_question(_names(), np.tile(columns, copies), Level.ORDINAL, Scale(), resamples=5)
        assert not isinstance(fitted, str)
        assert fitted.model.fit.posterior.shape == (400 * copies, 5)  # the posterior is still one row per item
        seen.append((len(rows), max(rows)))
    assert seen[0][1] == seen[1][1] == _patterns(columns) < 400
    assert seen[0][0] > 5  # the fit and five refits ran


def _item_labels(columns: Any) -> rm.Labels:
    rater, item = np.nonzero(~np.isnan(columns))
    label = columns[rater, item].astype(np.int64) - 1
    return rm.Labels(item.astype(np.int64), rater.astype(np.int64), label, columns.shape[1], len(columns), 5)


def test_the_ordinal_fit_is_the_ordered_probit_posterior_and_sklearns_kappa_of_every_item() -> None:
    """Written here from the model's definition (module docstring of rater_model), item by item: each item's
    posterior from the fitted prior, biases and spreads (scipy's normal CDF); each rater's κ against the latent truth
    is scikit-learn's quadratic-weighted κ of (answer, true point) pairs weighted by the posterior."""
    columns = np.tile(_study(300, seed=11), 4)
    fitted = fit_question(_names(), columns, Level.ORDINAL, Scale(), resamples=0)
    assert not isinstance(fitted, str)
    fit = fitted.model.fit
    assert fit.bias is not None and fit.spread is not None
    points = np.arange(5.0)
    expected = np.empty_like(fit.posterior)
    for i in range(columns.shape[1]):
        log_joint = np.log(fit.prior)
        for r in range(len(SPREADS)):
            if np.isnan(columns[r, i]):
                continue
            k = columns[r, i] - 1
            upper = np.inf if k == 4 else k + 0.5
            lower = -np.inf if k == 0 else k - 0.5
            centre, spread = points + fit.bias[r], fit.spread[r]
            log_joint = log_joint + np.log(norm.cdf((upper - centre) / spread) - norm.cdf((lower - centre) / spread))
        expected[i] = np.exp(log_joint - log_joint.max()) / np.exp(log_joint - log_joint.max()).sum()
    # the fit's posterior is its last E-step's, one M-step before the prior, biases and spreads it returns (the EM
    # stops when the likelihood per rating gains under 1e-5): close, not equal
    np.testing.assert_allclose(fit.posterior, expected, atol=5e-3)
    assert np.mean(np.abs(fit.posterior - expected)) < 1e-4
    for r in range(len(SPREADS)):
        rated = np.nonzero(~np.isnan(columns[r]))[0]
        answers = np.repeat(columns[r, rated] - 1, 5).astype(int)
        truths = np.tile(np.arange(5), len(rated))
        weight = fit.posterior[rated].ravel()
        kappa = cohen_kappa_score(answers, truths, labels=list(range(5)), weights="quadratic", sample_weight=weight)
        assert fitted.model.reliability[r] == pytest.approx(kappa, abs=1e-9)
        assert fitted.model.items_rated[r] == len(rated)


def test_the_nominal_fit_is_crowd_kits_dawid_skene_on_every_item() -> None:
    pd = pytest.importorskip("pandas")
    crowdkit = pytest.importorskip("crowdkit.aggregation")
    columns = np.tile(_study(150, seed=5), 3)  # 450 items, many of them alike
    fitted = fit_question(_names(), columns, Level.NOMINAL, Scale(kind="choice", low=1, high=5), resamples=0)
    assert not isinstance(fitted, str)
    rater, item = np.nonzero(~np.isnan(columns))
    rows = [(f"w{r}", f"t{i:04d}", float(columns[r, i])) for r, i in zip(rater.tolist(), item.tolist(), strict=True)]
    reference = crowdkit.DawidSkene().fit(pd.DataFrame(rows, columns=["worker", "task", "label"]))
    tasks = [f"t{i:04d}" for i in range(columns.shape[1])]
    probas = reference.probas_.loc[tasks, list(fitted.values)].to_numpy()
    np.testing.assert_allclose(fitted.model.fit.posterior, probas, atol=1e-6)
    np.testing.assert_allclose(fitted.model.fit.prior, reference.priors_.loc[list(fitted.values)].to_numpy(), atol=1e-6)


def test_the_bootstrap_on_patterns_is_the_item_bootstrap() -> None:
    """A resample of the pattern counts is a resample of the items: each pattern's count drawn (multinomial over
    the patterns, their shares of the items; the same seeded draws) given to one of its items, the model refitted
    on every item with those weights (the model's item-level fitter and κ) gives the same κs and SE."""
    columns = np.tile(_study(200, seed=3), 3)
    resamples = 8
    fitted = fit_question(_names(), columns, Level.ORDINAL, Scale(), resamples=resamples)
    assert not isinstance(fitted, str)
    labels = _item_labels(columns)
    n = labels.n_items
    first: dict[tuple[float, ...], int] = {}  # each pattern's first item, in the order the items come
    count: dict[tuple[float, ...], int] = {}
    for i, column in enumerate(np.nan_to_num(columns, nan=0.0).T.tolist()):
        first.setdefault(tuple(column), i)
        count[tuple(column)] = count.get(tuple(column), 0) + 1
    firsts = np.array(list(first.values()))
    share = np.array([count[pattern] for pattern in first]) / n
    rng = np.random.default_rng([rm.SEED, n])
    kappas = np.empty((resamples, labels.n_raters))
    for b in range(resamples):
        weights = np.zeros(n)
        weights[firsts] = rng.multinomial(n, share)
        refit = rm.ordinal_model(labels, weights, start=fitted.model.fit.posterior, n_iter=rm.BOOT_ITER)
        kappas[b] = rm.reliability(refit, labels, weights)
    np.testing.assert_allclose(fitted.model.std_error, kappas.std(axis=0, ddof=1), rtol=1e-6)
    np.testing.assert_allclose(fitted.model.reliability, rm.reliability(rm.ordinal_model(labels), labels), rtol=1e-7)

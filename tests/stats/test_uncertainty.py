"""The judge's uncertainty per item, and the order it gives."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sp

from tui_rater.stats import uncertainty as un

LIKERT = [1.0, 2.0, 3.0, 4.0, 5.0]


def test_entropy_is_scipys_divided_by_log_k():
    rng = np.random.default_rng(0)
    for _ in range(50):
        p = rng.dirichlet(np.ones(5) * rng.uniform(0.1, 3))
        result = un.distribution_uncertainty(dict(zip(LIKERT, p)))
        assert result.score == pytest.approx(sp.entropy(p) / math.log(5)) and result.source == "entropy"
    assert un.distribution_uncertainty({1: 1.0, 2: 0.0, 3: 0.0}).score == 0.0
    assert un.distribution_uncertainty(dict.fromkeys(LIKERT, 0.2)).score == pytest.approx(1.0)


def test_a_truncated_distribution_is_renormalised_over_the_whole_answer_space():
    # only two of the five answers came back in the top log-probabilities
    result = un.distribution_uncertainty({4.0: 0.3, 5.0: 0.3}, answers=5)
    assert result.score == pytest.approx(math.log(2) / math.log(5))
    assert "0.600" in result.note
    assert un.distribution_uncertainty({}, answers=5).score is None
    assert un.distribution_uncertainty({3.0: 0.0}, answers=5).score is None


def test_sample_disagreement():
    assert un.sample_uncertainty([3, 3, 3], level="ordinal", points=LIKERT).score == 0.0
    assert un.sample_uncertainty([1, 5], level="ordinal", points=LIKERT).score == pytest.approx(1.0)
    # ordered scales see distance: 1 and 5 disagree more than 2 and 4
    wide = un.sample_uncertainty([1, 5, 3], level="ordinal", points=LIKERT).score
    narrow = un.sample_uncertainty([2, 4, 3], level="ordinal", points=LIKERT).score
    assert wide == pytest.approx(np.std([1, 5, 3]) / 2) and narrow < wide
    assert un.sample_uncertainty([0, 100], level="interval", low=0, high=100).score == pytest.approx(1.0)
    # nominal: entropy of the sampled answers over log K
    assert un.sample_uncertainty([0, 1, 2], level="nominal", points=[0, 1, 2]).score == pytest.approx(1.0)
    mixed = un.sample_uncertainty([0, 0, 1], level="nominal", points=[0, 1, 2]).score
    assert mixed == pytest.approx(sp.entropy([2 / 3, 1 / 3]) / math.log(3))
    assert un.sample_uncertainty([4], level="ordinal", points=LIKERT).score is None
    assert un.sample_uncertainty([1, 2], level="interval").score is None  # no range


def test_item_uncertainty_prefers_the_distribution():
    from_distribution = un.item_uncertainty(
        level="ordinal", distribution={3: 0.5, 4: 0.5}, samples=[3, 3], points=LIKERT
    )
    assert from_distribution.source == "entropy"
    from_samples = un.item_uncertainty(level="ordinal", distribution=None, samples=[3, 5], points=LIKERT)
    assert from_samples.source == "samples"
    nothing = un.item_uncertainty(level="ordinal", samples=[3], points=LIKERT)
    assert nothing.score is None and "fewer than two samples" in nothing.note


def test_order_puts_the_most_uncertain_first_and_unknown_last():
    scores = {
        "a": un.ItemUncertainty(0.2),
        "b": un.ItemUncertainty(None),
        "c": un.ItemUncertainty(0.9),
        "d": un.ItemUncertainty(0.2),
        "e": un.ItemUncertainty(0.5),
    }
    assert un.order_by_uncertainty(scores) == ["c", "e", "a", "d", "b"]


def test_uncertain_items_are_where_the_judge_is_wrong():
    """A judge that is confident on easy items and spread on hard ones: the items it is least sure
    of carry most of its errors, so a person rating them first corrects the most."""
    rng = np.random.default_rng(1)
    items = 400
    truth = rng.integers(1, 6, items)
    hardness = rng.random(items)
    scores, wrong = {}, {}
    for i in range(items):
        logits = -((np.arange(1, 6) - truth[i]) ** 2) / (0.1 + 2 * hardness[i])
        p = np.exp(logits) / np.exp(logits).sum()
        scores[i] = un.distribution_uncertainty(dict(zip(LIKERT, p)))
        wrong[i] = rng.choice(LIKERT, p=p) != truth[i]
    order = un.order_by_uncertainty(scores)
    error_rate = {
        name: np.mean([wrong[i] for i in part]) for name, part in (("first", order[:80]), ("last", order[-80:]))
    }
    overall = np.mean(list(wrong.values()))
    assert error_rate["first"] > 1.5 * overall and error_rate["last"] < 0.25 * overall

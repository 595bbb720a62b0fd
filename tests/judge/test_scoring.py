from __future__ import annotations

import numpy as np
import pytest

from tui_rater.domain.tasks import STORY, STORY_PAIRWISE, Scale
from tui_rater.judge.scoring import _tempered, gbnf_for, json_schema_for, score_distribution

LIKERT = STORY.attributes[0].scale


def test_expected_score_and_samples():
    scored = score_distribution(
        {"1": 0.1, "2": 0.1, "3": 0.2, "4": 0.4, "5": 0.0}, LIKERT, n_samples=2000, temperature=1.0, top_p=1.0, seed=0
    )
    assert scored.mass == pytest.approx(0.8)
    assert scored.probabilities["4"] == pytest.approx(0.5)
    assert scored.expected == pytest.approx((1 * 0.1 + 2 * 0.1 + 3 * 0.2 + 4 * 0.4) / 0.8)
    assert 5.0 not in scored.samples
    assert np.mean(scored.samples) == pytest.approx(scored.expected, abs=0.08)


def test_temperature_and_nucleus():
    p = np.array([0.5, 0.3, 0.15, 0.05])
    assert list(_tempered(p, 0, 1.0)) == [1, 0, 0, 0]  # greedy
    q = _tempered(p, 1.0, 0.9)  # nucleus keeps {0.5, 0.3, 0.15}
    assert q[3] == 0 and q.sum() == pytest.approx(1) and q[0] == pytest.approx(0.5 / 0.95)
    hot = _tempered(p, 2.0, 1.0)
    assert hot[0] < 0.5 and hot[3] > 0.05  # flatter


def test_no_mass_on_the_scale_is_an_error():
    with pytest.raises(ValueError):
        score_distribution({}, LIKERT, n_samples=3, temperature=1, top_p=0.9, seed=0)


def test_grammars_and_schemas():
    assert gbnf_for(LIKERT) == 'root ::= "1" | "2" | "3" | "4" | "5"'
    assert '"A" | "B" | "C"' in gbnf_for(STORY_PAIRWISE.attributes[0].scale)
    assert "[1-9] [0-9]" in gbnf_for(Scale("continuous", 0, 100))
    assert json_schema_for(LIKERT)["properties"]["score"]["enum"] == [1, 2, 3, 4, 5]

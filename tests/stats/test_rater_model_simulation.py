"""Seeded simulation (slow tier) behind docs/VERDICT.md §10: on synthetic studies with known rater abilities, how
often the reliability model ranks the raters with Spearman ρ ≥ 0.9 (scipy), and how often ``progress``'s model
criterion (``service/rater_marks.py``) marks a planted careless rater (uniform random answers) and marks a careful
one. Run with ``-s`` to print the figures."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.stats as sp

from tui_rater.domain.protocols import Level
from tui_rater.domain.questions import Scale
from tui_rater.domain.tasks import BUILTIN_TASKS
from tui_rater.service.rater_marks import model_marks
from tui_rater.stats.rater_fit import fit_question

STUDIES = 100
ITEMS = 100
SPREADS = [0.3, 0.5, 0.8, 1.2, 1.7, 2.5]  # scale points of noise: the known abilities, a ladder
ACCURACIES = [0.95, 0.85, 0.75, 0.6, 0.45, 0.35]  # shares answered right (else at random)
TASK = BUILTIN_TASKS["title-fluency"]  # one Likert 1-5 question: fluency


def _ordinal(rng: np.random.Generator) -> tuple[np.ndarray, list[float]]:
    spreads = SPREADS
    truth = rng.integers(1, 6, ITEMS)
    columns = np.vstack([np.clip(np.rint(truth + rng.normal(0, s, ITEMS)), 1, 5) for s in spreads])
    return columns, [-s for s in spreads]


def _nominal(rng: np.random.Generator) -> tuple[np.ndarray, list[float]]:
    accuracies = ACCURACIES
    truth = rng.integers(0, 3, ITEMS)
    columns = np.vstack([np.where(rng.random(ITEMS) < a, truth, rng.integers(0, 3, ITEMS)) for a in accuracies])
    return columns.astype(float), accuracies


@pytest.mark.slow
def test_abilities_are_ranked_and_a_careless_rater_is_marked() -> None:
    rng = np.random.default_rng(20_260_001)
    fluency = TASK.attribute("fluency")
    ranked = {"ordinal": 0, "nominal": 0}
    marked = careful_marked = 0
    rhos: dict[str, list[float]] = {"ordinal": [], "nominal": []}
    for _ in range(STUDIES):
        for kind, make in (("ordinal", _ordinal), ("nominal", _nominal)):
            columns, ability = make(rng)
            fitted = fit_question(
                [f"r{i}" for i in range(6)],
                columns,
                Level.ORDINAL if kind == "ordinal" else Level.NOMINAL,
                fluency.scale if kind == "ordinal" else Scale(kind="choice", low=0, high=2),
                resamples=0,
            )
            assert not isinstance(fitted, str)
            rho = sp.spearmanr(fitted.model.reliability, ability).statistic
            rhos[kind].append(rho)
            ranked[kind] += rho >= 0.9
        # four careful people and one careless (uniform random), on the real task, through progress's criterion
        truth = rng.integers(1, 6, ITEMS)
        people = {}
        for name, spread in (("a", 0.5), ("b", 0.6), ("c", 0.7), ("d", 0.8), ("e", None)):
            answers = (
                rng.integers(1, 6, ITEMS)
                if spread is None
                else np.clip(np.rint(truth + rng.normal(0, spread, ITEMS)), 1, 5)
            )
            for key, value in enumerate(answers.tolist()):
                people.setdefault((key, "fluency"), {})[name] = [float(value)]
        marks = model_marks(TASK, people, {}, set())
        marked += "e" in marks
        careful_marked += sum(name in marks for name in "abcd")
    shares = {kind: count / STUDIES for kind, count in ranked.items()}
    mean_rho = {kind: round(float(np.mean(found)), 3) for kind, found in rhos.items()}
    careful = careful_marked / (4 * STUDIES)
    print(f"ρ ≥ 0.9: {shares}; mean ρ {mean_rho}; careless marked {marked / STUDIES:.2f}; careful marked {careful:.3f}")
    assert shares["ordinal"] >= 0.9 and shares["nominal"] >= 0.9
    assert marked / STUDIES >= 0.95
    assert careful_marked / (4 * STUDIES) <= 0.02


@pytest.mark.slow
def test_the_bootstrap_se_is_the_spread_of_kappa_over_studies() -> None:
    """The item-bootstrap SE (50 resamples, at most 5 EM iterations each) against the standard deviation of κ over
    60 independent studies of the same raters: within a factor 0.7-1.4 for every rater."""
    rng = np.random.default_rng(1)
    names = [f"r{i}" for i in range(6)]
    for kind, make in (("ordinal", _ordinal), ("nominal", _nominal)):
        kappas, errors = [], []
        for _ in range(60):
            columns, _ability = make(rng)
            level = Level.ORDINAL if kind == "ordinal" else Level.NOMINAL
            scale = TASK.attribute("fluency").scale if kind == "ordinal" else Scale(kind="choice", low=0, high=2)
            fitted = fit_question(names, columns, level, scale)
            assert not isinstance(fitted, str)
            kappas.append(fitted.model.reliability)
            errors.append(fitted.model.std_error)
        spread, mean_se = np.std(kappas, axis=0, ddof=1), np.mean(errors, axis=0)
        print(kind, "SD of κ over studies", np.round(spread, 3), "mean bootstrap SE", np.round(mean_se, 3))
        assert np.all(mean_se / spread > 0.7) and np.all(mean_se / spread < 1.4)

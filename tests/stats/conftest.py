from __future__ import annotations

import pytest

from tests.stats.hanna import build_study
from tui_rater.stats.report import build_report
from tui_rater.store.study import Study


@pytest.fixture(scope="package")
def hanna(tmp_path_factory):
    """(HANNA's values, the report's records by key, the study file): built once for tests/stats."""
    data, db = build_study(tmp_path_factory.mktemp("hanna"))
    study = Study.open(db)
    records = build_report(study, "hanna")
    study.close()
    index = {(r.table, r.attribute, r.system, r.evaluator, r.evaluator_b, r.statistic): r for r in records}
    return data, index, db


@pytest.fixture
def item_draws(monkeypatch):
    """Every bootstrap figure drawn from the item-level resamples (``intervals.BY_PATTERN`` off): the tests that
    expand each resample into its repeated items and recompute the statistic there with krippendorff, scipy or
    scikit-learn read those resamples from their definition (numpy's multinomial over the items, seeded [SEED, n]).
    The draw by pattern, the report's, is checked against that one in tests/stats/test_pattern_draws.py."""
    from tui_rater.stats import intervals as iv

    monkeypatch.setattr(iv, "BY_PATTERN", False)

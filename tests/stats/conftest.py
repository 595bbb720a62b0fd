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

"""Test-retest: each person who rated items twice (``annotate --retest``), against themselves and each judge.

Per person and question: intra-rater α (at the question's level), κ, % identical, the mean shift
(retest − first) with its interval, α without the items first rated among the person's first
``CALIBRATION_ITEMS`` (Chiang & Lee App. C.3.1), the drift of the shift over the session, and the same
person's first ratings against each judge -- the ceiling a judge can be held to when there is one rater.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

from tui_rater.domain.tasks import Attribute
from tui_rater.stats.records import ALL
from tui_rater.stats.sections import cells
from tui_rater.stats.sections.base import Found, Layout, Section, Table, Who
from tui_rater.stats.sections.data import ReportData
from tui_rater.stats.self_agreement import retest_summary


def retest(data: ReportData, attributes: Sequence[Attribute]) -> None:
    names = {a.name for a in attributes}
    for person in data.humans:
        summary = retest_summary(data.study, data.task.name, person, only_retested=True)
        for found in summary.attributes:
            if found.attribute not in names or found.reliability.pairs == 0:
                continue
            reliability = found.reliability
            add = partial(data.add, "retest", found.attribute, ALL, person)
            add("retest_alpha", reliability.overall.alpha, evaluator_b=person, note=f"α {reliability.level}")
            add(
                "retest_kappa",
                reliability.overall.kappa,
                evaluator_b=person,
                note=f"{reliability.overall.kappa_weights}",
            )
            add("retest_exact", reliability.overall.exact, evaluator_b=person)
            if reliability.level != "nominal":  # a choice's codes have no mean (stats/retest.py)
                add("retest_shift", reliability.shift, evaluator_b=person, note="mean retest − first")
            add(
                "retest_alpha_calibrated",
                reliability.calibrated.alpha,
                evaluator_b=person,
                note=f"without the first {reliability.calibration_items} items",
            )
            for drift in reliability.drift:
                add(
                    f"retest_drift_{drift.against}",
                    value=drift.slope,
                    n=drift.n,
                    p=drift.p,
                    evaluator_b=person,
                    note=drift.note or "slope of retest − first",
                )
            for judge in found.judges:
                add("first_vs_judge_alpha", judge.agreement.alpha, evaluator_b=judge.judge)
                add("first_vs_judge_exact", judge.agreement.exact, evaluator_b=judge.judge)


def _lay_out(found: Found, who: Who) -> Table | None:
    keys = list(dict.fromkeys((r.attribute, r.evaluator) for r in found.of("retest")))
    if not keys:
        return None
    rows = []
    for attribute, person in keys:
        mine = [r for r in found.of("retest") if (r.attribute, r.evaluator) == (attribute, person)]
        self_ = {r.statistic: r for r in mine if r.evaluator_b == person}
        pairs = self_["retest_alpha"].n if "retest_alpha" in self_ else 0
        judges = "; ".join(
            f"{r.evaluator_b} α {cells.value(r)} (n {r.n})" for r in mine if r.statistic == "first_vs_judge_alpha"
        )
        rows.append(
            [
                person,
                attribute,
                str(pairs),
                cells.value(self_.get("retest_alpha")),
                cells.value(self_.get("retest_kappa")),
                cells.value(self_.get("retest_exact"), 0, "%"),
                cells.value(self_.get("retest_shift")),
                cells.value(self_.get("retest_alpha_calibrated")),
                judges or "no judge",
            ]
        )
    header = [
        "rater",
        "attribute",
        "rated twice",
        "α self",
        "κ self",
        "identical",
        "shift",
        "α after calib.",
        "vs judges",
    ]
    return TABLE.title, header, rows


TABLE = Layout(
    "retest",
    "Test–retest — each rater against themselves (annotate --retest); their first ratings vs each judge",
    ("retest",),
    _lay_out,
)
SECTION = Section("retest", retest, ("retest",), (TABLE,))  # a person against themselves, and each judge

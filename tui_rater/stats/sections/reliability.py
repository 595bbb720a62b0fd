"""Every person and every judge on one scale of reliability (``stats/rater_model.py``): per question, each rater's κ
against the true answer a latent-class model infers from all of them (Dawid-Skene for nominal answers, an ordinal
model for Likert and 0-100 scores), with its bootstrap standard error; the model's accuracy (and, ordered, each
rater's bias and spread in scale points); and how hard the items were.

Records (table ``reliability``): per rater ``reliability`` (with ``ci_low`` / ``ci_high``: ± 1.96 SE),
``reliability_se``, ``accuracy``, and for ordered questions ``bias`` and ``spread``; per question (evaluator
``model``) ``mean_item_difficulty`` and ``hard_items`` (items whose most likely answer has a posterior under ½).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

from tui_rater.domain.tasks import Attribute
from tui_rater.stats import rater_model as rm
from tui_rater.stats.agreement import Stat
from tui_rater.stats.rater_fit import fit_question
from tui_rater.stats.records import ALL
from tui_rater.stats.sections import cells
from tui_rater.stats.sections.base import Found, Layout, Section, Table, Who
from tui_rater.stats.sections.data import ReportData
from tui_rater.store.juries import list_juries

MODEL = "model"  # the evaluator of the question-level records
HARD = 0.5  # an item is hard where its most likely true answer has a posterior under this
Z95 = 1.959963984540054


def reliability(data: ReportData, attributes: Sequence[Attribute]) -> None:
    keys = data.keys(ALL)
    # a jury is its members' ratings combined: in the fit it would be one more rater agreeing with them, counting
    # their votes twice (the model assumes raters err independently given the truth), so it is left out and says why
    juries = {jury.label for jury in list_juries(data.study) if jury.applies_to(data.task.name)}
    for attribute in attributes:
        protocol = data.protocol(attribute)
        names = data.humans + [name for name in data.judges if name not in juries]
        for name in sorted(juries & set(data.judges)):
            why = "jury; its members' ratings combined, not an independent rater of the model (see its members)"
            data.add("reliability", attribute.name, ALL, name, "reliability", value=None, note=why)
        columns = np.vstack([data.rater_values(name, attribute, ALL) for name in names]) if names else np.empty((0, 0))
        fitted = fit_question(names, columns, protocol.level, attribute.scale) if len(keys) else "no items"
        if isinstance(fitted, str):
            data.add("reliability", attribute.name, ALL, MODEL, "reliability", value=None, note=fitted)
            continue
        model = fitted.model
        how = "Dawid-Skene" if fitted.kind == rm.NOMINAL else "ordinal model"
        if fitted.kind == rm.ORDINAL and not attribute.scale.points:
            how += f", the scale in {rm.CONTINUOUS_BINS} bins"
        for r, name in enumerate(fitted.names):
            kappa, se, n = float(model.reliability[r]), float(model.std_error[r]), int(model.items_rated[r])
            who = "judge" if name in data.judges else "person"
            extra: dict[str, float | str] = {"ci": f"± 1.96 SE; {rm.METHOD}"}
            if math.isfinite(kappa) and math.isfinite(se):
                # κ is at most 1: the normal interval's upper end is cut there (it named values κ cannot take)
                high = kappa + Z95 * se
                extra.update(ci_low=kappa - Z95 * se, ci_high=min(high, 1.0))
                if high > 1.0:
                    extra["ci"] = f"± 1.96 SE, cut at 1 (κ's largest value); {rm.METHOD}"
            else:
                extra["ci"] = "no SE: the rater rated too few of the resampled items"
            stat = Stat(kappa, n, note=f"{who}; {how}", extra=extra)
            data.add("reliability", attribute.name, ALL, name, "reliability", stat)
            data.add("reliability", attribute.name, ALL, name, "reliability_se", value=se, n=n, note=rm.METHOD)
            data.add("reliability", attribute.name, ALL, name, "accuracy", value=float(model.accuracy[r]), n=n)
            if model.fit.bias is not None and model.fit.spread is not None:
                data.add("reliability", attribute.name, ALL, name, "bias", value=float(model.fit.bias[r]), n=n)
                data.add("reliability", attribute.name, ALL, name, "spread", value=float(model.fit.spread[r]), n=n)
        difficulty, n_items = model.difficulty, len(fitted.items)
        for statistic, value in (
            ("mean_item_difficulty", difficulty.mean()),
            ("hard_items", np.sum(difficulty > HARD)),
        ):
            data.add("reliability", attribute.name, ALL, MODEL, statistic, value=float(value), n=n_items, note=how)


def _lay_out(found: Found, who: Who) -> Table | None:
    rows = []
    for r in found.of("reliability"):
        if r.statistic == "reliability" and r.evaluator == MODEL:
            rows.append([r.attribute, f"no model: {r.note}", "n/a", "", "", ""])
        if r.statistic != "reliability" or r.evaluator == MODEL:
            continue
        se = found.get("reliability", r.attribute, r.system, r.evaluator, None, "reliability_se")
        accuracy = found.get("reliability", r.attribute, r.system, r.evaluator, None, "accuracy")
        kind = r.note.split(";")[0]
        rows.append(
            [
                r.attribute,
                f"{who(r.evaluator, r.attribute)} ({kind})",
                cells.value(r),
                cells.value(se),
                cells.value(accuracy),
                str(r.n),
            ]
        )
    for r in found.of("reliability"):
        if r.statistic == "mean_item_difficulty":
            hard = found.get("reliability", r.attribute, r.system, MODEL, None, "hard_items")
            rows.append([r.attribute, f"items: {cells.value(hard, 0)} hard", "", "", "", str(r.n)])
    header = ["attribute", "rater", "κ", "SE", "accuracy", "items"]
    return (TABLE.title, header, rows) if rows else None


TABLE = Layout(
    "reliability",
    "Rater reliability — κ of each person and judge against the true answers a Dawid-Skene or ordinal model "
    f"infers from all of them; SE: {rm.METHOD}; items: hard where the model's best answer has p < ½",
    ("reliability",),
    _lay_out,
)
SECTION = Section("reliability", reliability, ("reliability",), (TABLE,))

"""Chen et al.'s meta-evaluation of a judge's scores against the human scores (§3.3, App. C).

Sample-level (per input, then averaged) and dataset-level Spearman and Pearson, and Kendall's τ-b
over the pairs of texts written for one input, split into hard / medium / easy by the human score gap.
The input of an item is its ``prompt`` field.
"""

from __future__ import annotations

from collections.abc import Sequence

from tui_rater.domain.tasks import Attribute
from tui_rater.stats import systems as st
from tui_rater.stats.records import ALL, HUMANS
from tui_rater.stats.sections import cells
from tui_rater.stats.sections.base import Found, Layout, Section, Table, Who
from tui_rater.stats.sections.data import ReportData


def meta(data: ReportData, attributes: Sequence[Attribute]) -> None:
    if not data.humans or not data.judges:
        return
    prompt_of = {item.key: item.fields.get("prompt", "") for item in data.study.items(data.task.name)}
    inputs = [prompt_of.get(k, "") for k in data.keys(ALL)]
    for attribute in attributes:
        human = data.item_values(HUMANS, attribute, ALL)
        for judge in data.judges:
            result = st.meta_evaluation(inputs, list(human), list(data.item_values(judge, attribute, ALL)))
            for statistic, value in (
                ("sample_spearman", result.sample_spearman),
                ("sample_pearson", result.sample_pearson),
                ("dataset_spearman", result.dataset_spearman),
                ("dataset_pearson", result.dataset_pearson),
            ):
                data.add(
                    "meta",
                    attribute.name,
                    ALL,
                    HUMANS,
                    statistic,
                    value=value,
                    n=result.inputs if statistic.startswith("sample") else result.texts,
                    evaluator_b=judge,
                    note="" if value is not None else "too few texts per input or no variation",
                )
            for difficulty, (tau, n) in result.kendall_pairs.items():
                data.add(
                    "meta",
                    attribute.name,
                    ALL,
                    HUMANS,
                    f"pair_tau_b_{difficulty}",
                    value=tau,
                    n=n,
                    evaluator_b=judge,
                    note="" if tau is not None else "no pairs",
                )


def _lay_out(found: Found, who: Who) -> Table | None:
    rows = [
        [r.attribute, who(r.evaluator_b, r.attribute), r.statistic, cells.value(r, 3), str(r.n)]
        for r in found.of("meta")
    ]
    return (TABLE.title, ["attribute", "judge", "statistic", "value", "n"], rows) if rows else None


TABLE = Layout(
    "meta",
    "Meta-evaluation against human scores (Chen et al.): sample- and dataset-level, τ-b over pairs",
    ("meta",),
    _lay_out,
)
SECTION = Section("meta", meta, ("meta",), (TABLE,))

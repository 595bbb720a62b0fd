"""Sections for scores on a scale (Likert 1-5, 0-100): Chiang & Lee's Tables 1, 2 and 3, pooled rater pairs.

- ``table1``: mean ± std, Krippendorff's α (ordinal, interval) and % of items all annotators agree on,
  per evaluator x system, and Welch's t-test of each system against the reference (§3.3, Table 1);
- ``table2``: Kendall's τ between the humans' per-item score and each judge's, per system (§3.3.1),
  with Spearman, Pearson, quadratic-weighted κ, exact agreement and the mean bias;
- ``pairs``: Kendall's τ of every human with every other and with each judge, systems pooled;
- ``table3``: judge runs of one model that differ only in instruction (variant) or temperature:
  each run's mean ± std per writer (system), as Table 3, and the spread of the runs' means.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from itertools import combinations
from typing import Any

import numpy as np

from tui_rater.domain.tasks import Attribute
from tui_rater.stats import agreement as ag
from tui_rater.stats.records import ALL, HUMANS
from tui_rater.stats.sections.data import ReportData, reference_system


def table1(data: ReportData, attributes: Sequence[Attribute]) -> None:
    for attribute in attributes:
        domain = attribute.scale.points or None
        for evaluator in data.evaluators():
            for system in data.systems_and_pooled():
                m = data.matrix(evaluator, attribute.name, system)
                s = ag.summary(m[~np.isnan(m)].tolist())
                name = attribute.name
                data.add("table1", name, system, evaluator, "mean", value=s.mean, n=s.n, note=_no("ratings", s.mean))
                data.add("table1", name, system, evaluator, "std", value=s.std, n=s.n, note=_no("2 ratings", s.std))
                data.add("table1", name, system, evaluator, "alpha_ordinal", ag.alpha(m, "ordinal", domain))
                data.add("table1", name, system, evaluator, "alpha_interval", ag.alpha(m, "interval"))
                data.add("table1", name, system, evaluator, "percent_exact", ag.percent_exact(m))
                if evaluator in data.judges and data.humans:
                    _shared(data, attribute, evaluator, system)
            _welch(data, attribute, evaluator)


def _shared(data: ReportData, attribute: Attribute, judge: str, system: str) -> None:
    """When the judge and the humans rated different items, both means again on the items both rated (n =
    those items): a judge's mean over the 32 items it rated beside the humans' over 96 compares unlike."""
    mine = data.matrix(judge, attribute.name, system)
    theirs = data.matrix(HUMANS, attribute.name, system)
    if not mine.size or not theirs.size:
        return
    judged, rated = ~np.isnan(mine).all(axis=0), ~np.isnan(theirs).all(axis=0)
    if np.array_equal(judged, rated):
        return  # the same items: the means above already compare like with like
    both = judged & rated
    n = int(both.sum())
    for evaluator, m, statistic in (
        (judge, mine, "mean_on_shared_items"),
        (judge, theirs, "humans_mean_on_shared_items"),
    ):
        values = m[:, both]
        s = ag.summary(values[~np.isnan(values)].tolist())
        note = f"on the {n} items the judge and the humans both rated" if n else "no item rated by both"
        data.add("table1", attribute.name, system, evaluator, statistic, value=s.mean, n=n, note=note)


def _no(what: str, value: float | None) -> str:
    return "" if value is not None else ("fewer than 2 ratings" if what.startswith("2") else f"no {what}")


def _welch(data: ReportData, attribute: Attribute, evaluator: str) -> None:
    reference = reference_system(data.systems)
    for system in data.systems:
        if system == reference or reference is None:
            continue
        a = data.ratings(evaluator, attribute.name, reference)
        b = data.ratings(evaluator, attribute.name, system)
        w = ag.welch(a, b)
        data.add("welch", attribute.name, system, evaluator, "welch_t", w, note=f"vs {reference}")
        if w.ok:
            data.add(
                "welch",
                attribute.name,
                system,
                evaluator,
                "welch_df",
                value=w.extra["df"],
                n=w.n,
                note=f"vs {reference}",
            )


def table2(data: ReportData, attributes: Sequence[Attribute]) -> None:
    """Human (per-item score of the humans) vs each LLM (per-item score of its samples)."""
    if not data.humans:
        return
    for attribute in attributes:
        labels = attribute.scale.points
        for judge in data.judges:
            for system in data.systems_and_pooled():
                h = data.item_values(HUMANS, attribute, system)
                j = data.item_values(judge, attribute, system)

                add = partial(_add_table2, data, attribute.name, system, judge)

                add("kendall_tau", ag.kendall_tau(h, j))
                if system != data.overall:
                    continue
                add("spearman", ag.spearman(h, j))
                add("pearson", ag.pearson(h, j))
                b = ag.bias(j, h)
                add("bias_llm_minus_human", b)
                if b.ok:
                    add("bias_ci_low", value=b.extra["ci_low"], n=b.n)
                    add("bias_ci_high", value=b.extra["ci_high"], n=b.n)
                if labels:
                    add("qw_kappa", ag.weighted_kappa(h, j, labels))
                    add("exact_agreement", ag.exact_agreement(h, j, labels))


def _add_table2(
    data: ReportData, attribute: str, system: str, judge: str, statistic: str, stat: ag.Stat | None = None, **kw: Any
) -> None:
    data.add("table2", attribute, system, HUMANS, statistic, stat, evaluator_b=judge, **kw)


def pairs(data: ReportData, attributes: Sequence[Attribute]) -> None:
    """Every human vs every other and vs each LLM: Kendall's τ on per-item ratings, systems pooled.

    Table 6 of Chiang & Lee is per writer and averaged over the teacher pairs (section ``raters``);
    this view pools every system and keeps one τ per pair of raters.
    """
    raters = data.humans + data.judges
    for attribute in attributes:
        for a, b in combinations(raters, 2):
            if a in data.judges and b in data.judges:
                continue
            x = data.rater_values(a, attribute, ALL)
            y = data.rater_values(b, attribute, ALL)
            data.add(
                "pairs",
                attribute.name,
                data.overall,
                a,
                "kendall_tau",
                ag.kendall_tau(x, y),
                evaluator_b=b,
                note="systems pooled",
            )


# what may differ between the runs of one Table 3 block (§3.3.2 instructions, §3.3.3 temperature) --
# and what follows from them (a reason-first variant's token budget and samples, the seed of a run)
_SETUP_KEYS = {
    "variant",
    "temperature",
    "seed",
    "samples",
    "max_tokens",
    "max_retries",
    "min_mass",
    "extra",
    "judge_name",
}


def _setup_groups(data: ReportData) -> list[list[str]]:
    """Judge runs with ratings that differ only in instruction or temperature (two or more each)."""
    groups: dict[str, list[str]] = {}
    for rater in data.study.raters("llm"):
        if rater.label not in data.judges or not rater.config:
            continue
        config = rater.config
        if not (config.get("model_sha256") or config.get("api_model")) or "mode" not in config:
            continue  # imported ratings: nothing says what produced them
        identity = {k: v for k, v in config.items() if k not in _SETUP_KEYS and not k.endswith("_version")}
        groups.setdefault(repr(sorted(identity.items())), []).append(rater.label)
    return [names for names in groups.values() if len(names) > 1]


def _setup(config: dict[str, Any]) -> str:
    return f"variant={config.get('variant')} T={config.get('temperature')}"


def table3(data: ReportData, attributes: Sequence[Attribute]) -> None:
    """Table 3: for each run of one model, mean ± std per writer (as Table 1) and the spread of the runs' means."""
    configs = {r.label: r.config or {} for r in data.study.raters("llm")}
    for names in _setup_groups(data):
        block = " | ".join(names)
        for attribute in attributes:
            for system in data.systems_and_pooled():
                means = []
                pooled = "; systems pooled" if system == ALL else ""
                for name in names:
                    s = ag.summary(data.ratings(name, attribute.name, system))
                    means.append(s.mean)
                    note = _setup(configs[name]) + pooled
                    data.add("table3", attribute.name, system, name, "mean", value=s.mean, n=s.n, note=note)
                    data.add("table3", attribute.name, system, name, "std", value=s.std, n=s.n, note=note)
                valid = [m for m in means if m is not None]
                data.add(
                    "table3",
                    attribute.name,
                    system,
                    block,
                    "std_of_means",
                    value=float(np.std(valid, ddof=1)) if len(valid) > 1 else None,
                    n=len(valid),
                    note=("" if len(valid) > 1 else "fewer than 2 runs with ratings") + pooled,
                )

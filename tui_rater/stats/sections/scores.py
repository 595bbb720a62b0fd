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
from tui_rater.stats import gwet
from tui_rater.stats import intervals as iv
from tui_rater.stats.records import ALL, HUMANS
from tui_rater.stats.sections import cells
from tui_rater.stats.sections.base import Found, Layout, Section, Table, Who
from tui_rater.stats.sections.data import ReportData, reference_system


def table1(data: ReportData, attributes: Sequence[Attribute]) -> None:
    for attribute in attributes:
        domain = attribute.scale.points or None
        for evaluator in data.evaluators():
            for system in data.systems_and_pooled():
                m = data.matrix(evaluator, attribute.name, system)
                s = ag.summary(m[~np.isnan(m)])
                name = attribute.name
                mean = ag.Stat(s.mean, s.n, _no("ratings", s.mean))
                data.add("table1", name, system, evaluator, "mean", iv.with_interval(mean, partial(iv.mean, m)))
                data.add("table1", name, system, evaluator, "std", value=s.std, n=s.n, note=_no("2 ratings", s.std))
                ordinal = ag.alpha(m, "ordinal", domain)
                for level, figure in (("ordinal", ordinal), ("interval", ag.alpha(m, "interval"))):
                    figure = iv.with_interval(figure, partial(iv.alpha, m, level))
                    data.add("table1", name, system, evaluator, f"alpha_{level}", figure)
                exact = iv.with_interval(ag.percent_exact(m), partial(iv.percent_exact, m))
                data.add("table1", name, system, evaluator, "percent_exact", exact)
                if domain:
                    ac2 = gwet.with_skew_note(gwet.ac(m, domain, "ordinal"), ordinal, m, "AC2", "ordinal α")
                    data.add("table1", name, system, evaluator, "ac2_quadratic", ac2)
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
        s = ag.summary(values[~np.isnan(values)])
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

                add("kendall_tau", iv.with_interval(ag.kendall_tau(h, j), partial(iv.kendall_tau, h, j)))
                if system != data.overall:
                    continue
                add("spearman", iv.with_interval(ag.spearman(h, j), partial(iv.spearman, h, j)))
                add("pearson", iv.with_interval(ag.pearson(h, j), partial(iv.pearson, h, j)))
                b = ag.bias(j, h)
                add("bias_llm_minus_human", b)
                if b.ok:
                    add("bias_ci_low", value=b.extra["ci_low"], n=b.n)
                    add("bias_ci_high", value=b.extra["ci_high"], n=b.n)
                if labels:
                    kappa = ag.weighted_kappa(h, j, labels)
                    add("qw_kappa", iv.with_interval(kappa, partial(iv.weighted_kappa, h, j, labels)))
                    exact = ag.exact_agreement(h, j, labels)
                    add("exact_agreement", iv.with_interval(exact, partial(iv.exact_agreement, h, j, labels)))


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
                iv.with_interval(ag.kendall_tau(x, y), partial(iv.kendall_tau, x, y)),
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


# --- layouts -------------------------------------------------------------------------------


def _lay_out_table1(found: Found, who: Who) -> Table | None:
    systems = cells.systems(found, "table1")
    if not systems:
        return None
    attributes = list(dict.fromkeys(r.attribute for r in found.of("table1")))
    evaluators = list(dict.fromkeys(r.evaluator for r in found.of("table1")))
    v = cells.value
    rows = []
    skewed = False
    for attribute in attributes:
        for evaluator in evaluators:
            row = [attribute, who(evaluator, attribute)]
            for system in systems:
                get = partial(found.get, "table1", attribute, system, evaluator, None)
                mean = get("mean")
                if mean is None or mean.value is None:
                    row.append("n/a")
                    continue
                welch = found.get("welch", attribute, system, evaluator, None, "welch_t")
                cell = f"{v(mean)}±{v(get('std'))}{cells.stars(welch.p if welch else None)}"
                cell += f" α {v(get('alpha_ordinal'))}/{v(get('alpha_interval'))} {v(get('percent_exact'), 0)}%"
                ac2 = get("ac2_quadratic")
                if ac2 is not None and ac2.value is not None:
                    cell += f" AC2 {cells.gwet_value(ac2)}"
                    skewed = skewed or cells.SKEW_MARK in cell
                shared, humans = get("mean_on_shared_items"), get("humans_mean_on_shared_items")
                if shared is not None and humans is not None:  # the judge rated other items than the humans
                    cell += f"; on the {shared.n} items both rated: {v(shared)} vs humans {v(humans)}"
                row.append(cell)
            rows.append(row)
    title = TABLE1.title + " (* Welch p<.05 vs the reference system" + (f"; {cells.SKEW_LEGEND})" if skewed else ")")
    return title, ["attribute", "evaluator", *map(cells.column, systems)], rows


def _lay_out_table2(found: Found, who: Who) -> Table | None:
    pairs = list(dict.fromkeys((r.attribute, r.evaluator_b) for r in found.of("table2")))
    if not pairs:
        return None
    systems = cells.systems(found, "table2")
    overall = systems[-1]
    rows = []
    for attribute, judge in pairs:
        row = [attribute, who(judge, attribute)]
        for system in systems:
            tau = found.get("table2", attribute, system, HUMANS, judge, "kendall_tau")
            row.append("n/a" if tau is None or tau.value is None else f"{tau.value:.3f}{cells.stars(tau.p)}")
        get = partial(found.get, "table2", attribute, overall, HUMANS, judge)
        row.append(cells.interval(get("kendall_tau")))
        row.append(cells.value(get("bias_llm_minus_human")))
        row.append(cells.value(get("qw_kappa")))
        row.append(cells.value(get("exact_agreement"), 0, "%"))
        rows.append(row)
    header = ["attribute", "LLM", *[f"τ {cells.column(s)}" for s in systems], "τ 95% CI", "bias", "qw κ", "exact"]
    return TABLE2.title, header, rows


def _lay_out_pairs(found: Found, who: Who) -> Table | None:
    rows = [
        [
            r.attribute,
            who(r.evaluator, r.attribute),
            who(r.evaluator_b, r.attribute),
            "n/a" if r.value is None else f"{r.value:.3f}{cells.stars(r.p)}",
            cells.interval(r),
            str(r.n),
        ]
        for r in found.of("pairs")
    ]
    return (PAIRS.title, ["attribute", "rater", "rater", "τ", "95% CI", "n"], rows) if rows else None


def _lay_out_table3(found: Found, who: Who) -> Table | None:
    systems = cells.systems(found, "table3")
    if not systems:
        return None
    rows = []
    for attribute, run in dict.fromkeys((r.attribute, r.evaluator) for r in found.of("table3")):
        get = partial(found.get, "table3", attribute)
        if get(systems[0], run, None, "std_of_means") is not None:
            spreads = [cells.value(get(s, run, None, "std_of_means")) for s in systems]
            rows.append([attribute, "spread: std of the runs' means", *spreads, ""])
            continue
        shown, setup = [], ""
        for system in systems:
            mean, std = get(system, run, None, "mean"), get(system, run, None, "std")
            shown.append(f"{cells.value(mean)}±{cells.value(std)}")
            setup = setup or (mean.note.split(";")[0] if mean else "")
        rows.append([attribute, who(run, attribute), *shown, setup])
    return TABLE3.title, ["attribute", "run", *map(cells.column, systems), "setup"], rows


TABLE1 = Layout(
    "table1",
    "Table 1 — mean ± std, Krippendorff's α (ordinal / interval), % items all raters agree, Gwet's AC2",
    ("table1", "welch"),
    _lay_out_table1,
)
TABLE2 = Layout(
    "table2", "Table 2 — Kendall's τ between the humans' and each LLM's per-item score", ("table2",), _lay_out_table2
)
PAIRS = Layout(
    "pairs",
    "Rater pairs — Kendall's τ, every human vs every other and vs each LLM, systems pooled",
    ("pairs",),
    _lay_out_pairs,
)
TABLE3 = Layout(
    "table3",
    "Table 3 — judge runs differing only in instruction / temperature: mean ± std per writer",
    ("table3",),
    _lay_out_table3,
)
SECTIONS = (
    Section("table1", table1, ("table1", "welch"), (TABLE1,)),  # with Welch's t-test
    Section("table2", table2, ("table2",), (TABLE2,)),
    Section("pairs", pairs, ("pairs",), (PAIRS,)),
    Section("table3", table3, ("table3",), (TABLE3,)),
)

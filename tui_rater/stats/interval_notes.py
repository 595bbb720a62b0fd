"""Every record with a figure carries its 95 % interval or says why it has none (issue 33 item 1).

The sections put intervals on the estimates they compute (``intervals.py``, ``bias.py``, ``alt_intervals.py``).
This pass, run once over a report's records, fills the rest: a mean whose interval some section wrote as two
sibling records (PPI's ``ppi_mean`` beside ``ppi_ci_low`` / ``ppi_ci_high``) gets them as its ``ci_low`` /
``ci_high``; every other figure without an interval gets the reason in ``ci`` (a count, a setting, a test
statistic, an end of an interval, a point of a convergence curve ...). A figure none of these rules names says
so plainly ("no interval computed"), so the audit (tests/stats/test_interval_notes.py) lists it.
"""

from __future__ import annotations

from dataclasses import replace

from tui_rater.stats.records import Record

SIBLINGS = "the {prefix}_ci_low / {prefix}_ci_high records (their method: the ppi table's note)"
NOT_ESTIMATES: dict[str, str] = {  # statistic -> why it has no interval, whatever its table
    "epsilon": "a setting (the alt-test's margin ε), not an estimate",
    "t": "a test statistic (its p-value is the record's p)",
    "p_adjusted": "a p-value (Benjamini-Yekutieli adjusted)",
    "rank": "a rank by ρ (ρ carries its interval)",
    "verdict": "a decision (ω ≥ 0.5), not an estimate; ω carries its interval",
    "wins": "a decision of one test (H0_j rejected or not)",
    "verdict_settled": "a yes / no about the convergence curve",
    "caveat_human_agreement": "the humans' α, repeated for the caveat (Table 1 carries its interval)",
    "rater_id": "an identifier",
    "rectifier": "an input of PPI (the PPI mean carries the interval)",
    "judge_mean": "an input of PPI: the judge's mean over every item (the PPI mean carries the interval)",
}
BY_TABLE: dict[str, str] = {  # table -> why its figures have none
    "readings": "a count or share of the judge's readings, not an estimate of agreement",
    "verdict_across": "the across-questions test pools every question's p-values (no bootstrap of that "
    "pooling); each question's own ω and ρ carry their intervals",
    "verdict_convergence": "a point of a convergence curve: fixed-n intervals do not hold while the curve is "
    "watched; the final figures carry theirs",
}


def _reason(record: Record) -> str:
    statistic = record.statistic
    if statistic.endswith(("_ci_low", "_ci_high")):
        return "an end of an interval"
    if statistic.endswith(("_cs_low", "_cs_high")):
        return "an end of a confidence sequence (valid at every point of the curve)"
    if statistic.endswith(("_people_low", "_people_median", "_people_high")):
        return "the spread over held-out persons (lowest, median, highest), a range of figures, not an estimate"
    if statistic.endswith(("_width", "_saved", "_pilot")):
        return "read off an interval (its width, or the human ratings it saves at equal width)"
    if record.table == "reliability" and statistic != "reliability":
        return "a figure of the fitted model (each rater's κ carries the interval; reliability_se is its SE)"
    if statistic.endswith("_std_error"):
        return "a standard error (the interval is in the _ci_low / _ci_high records)"
    if statistic.startswith("final_") or statistic.startswith("failures_"):
        return "a count, not an estimate"
    if statistic in NOT_ESTIMATES:
        return NOT_ESTIMATES[statistic]
    if record.table in BY_TABLE:
        return BY_TABLE[record.table]
    return "no interval computed for this figure"


def explain(records: list[Record]) -> list[Record]:
    """The records, each figure with its interval or the reason it has none in ``ci``."""
    index = {(r.table, r.attribute, r.system, r.evaluator, r.evaluator_b, r.statistic): r for r in records}
    out = []
    for record in records:
        if record.value is None or record.ci:
            out.append(record)
            continue
        prefix = record.statistic.removesuffix("_mean")
        key = (record.table, record.attribute, record.system, record.evaluator, record.evaluator_b)
        low, high = index.get((*key, f"{prefix}_ci_low")), index.get((*key, f"{prefix}_ci_high"))
        if record.statistic.endswith("_mean") and low is not None and high is not None:
            out.append(replace(record, ci_low=low.value, ci_high=high.value, ci=SIBLINGS.format(prefix=prefix)))
        else:
            out.append(replace(record, ci=_reason(record)))
    return out

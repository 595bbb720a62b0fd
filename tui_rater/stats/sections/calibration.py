"""Sections ``calibration`` and ``ppi_distribution``: what a judge's whole distribution over the scale says, against
the people (``stats/calibration.py``), and the prediction-powered means that use it (``stats/ppi_recal.py``).

A judge has a distribution on an item when a distribution pass stored one (its options' labels read as scale
points through the protocol, averaged over the item's presentations), or else when it was sampled two or more
times (the share of its samples at each point: an empirical distribution). Implicit-score passes store p(yes), not
a distribution over the question's points, so they have none here. Questions with scale points and a mean (ordinal
or interval level) only.

- ``calibration`` table, per question and judge, against each person's rating of the item: ECE, Brier score, RPS
  (ordinal), the mean Jensen–Shannon distance to the people's distribution of the item beside the people's split-half
  distance (the noise ceiling), each before and after the cross-fitted recalibration; the reliability diagram's bins.
- ``ppi_distribution`` table, per question and judge, the mean human rating over every item (all systems pooled):
  humans only, PPI++, recalibrated PPI++, stratified PPI++ by system and by the judge's confidence; each with its
  interval, its width, the human ratings it saves at equal width, and the pilot projection at ``ppi_recal.PILOT``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial

import numpy as np

from tui_rater.domain.protocols import EvaluationProtocol, Level
from tui_rater.domain.tasks import Attribute
from tui_rater.stats import agreement as ag
from tui_rater.stats import calibration as cal
from tui_rater.stats import ppi_recal as pr
from tui_rater.stats.ppi import Interval
from tui_rater.stats.records import ALL, HUMANS
from tui_rater.stats.sections import bias_corrected, cells
from tui_rater.stats.sections.base import Found, Layout, Runs, Section, Table, Who
from tui_rater.stats.sections.data import ReportData
from tui_rater.store.distributions import judge_distributions
from tui_rater.store.juries import list_juries

AGAINST = (
    "against each person's rating of the item (ECE, Brier, RPS) and the people's distribution of ratings of the "
    "item (JS distance)"
)
CEILING = (
    "the people's split-half JS distance: each item's ratings in a seeded random order (numpy default_rng, seed "
    f"{cal.SEED}), the first half against the rest; items with 2 or more ratings"
)
AFTER = (
    f"after recalibration: one-vs-rest isotonic maps fitted on {cal.FOLDS} folds of items (seed {cal.SEED}), "
    "no item scored by a map fitted on it; fitted for this judge and these people only"
)
METHODS = (
    ("classical", "humans only"),
    ("ppi_plus_plus", "PPI++"),
    ("recalibrated", "recalibrated PPI++"),
    ("stratified_system", "stratified PPI++ (by system)"),
    ("stratified_confidence", "stratified PPI++ (by confidence)"),
    ("allocated_classical", "humans only, stratified (the stored draw)"),
    ("allocated", "stratified PPI++ (the stored draw)"),
)


def questions(data: ReportData, attributes: Sequence[Attribute]) -> list[Attribute]:
    return [a for a in attributes if a.scale.points and data.protocol(a).level is not Level.NOMINAL]


def distributions(data: ReportData, attribute: Attribute, judge: str) -> tuple[np.ndarray, str] | None:
    """Items (``data.keys(ALL)``) x the scale's points: the judge's distribution (NaN rows where it has none), and
    where it comes from; None when it has none on any item."""
    jury = _distribution_juries(data).get(judge)
    if jury is not None:
        return _jury_distribution(data, attribute, jury)
    if _stored(data).get((judge, attribute.name)):  # (else it has no pass: no items x points of zeros to add up)
        total, passes = _passes(data, attribute, judge, normalise=True)
        if np.any(passes > 0):
            found = np.where(passes[:, None] > 0, total / np.maximum(passes, 1)[:, None], np.nan)
            return found, "its next-token distribution over the scale (distribution pass)"
    points = [float(p) for p in attribute.scale.points]
    m = data.matrix(judge, attribute.name, ALL)
    if m.size == 0:
        return None
    enough = (~np.isnan(m)).sum(axis=0) >= 2
    if not enough.any():  # (asked before the counts: a judge of one sample an item has none, at any size)
        return None
    counts = _counts(m, points)
    found = np.where(enough[:, None], counts / np.maximum(counts.sum(axis=1, keepdims=True), 1), np.nan)
    return found, "the share of its samples at each point (2 or more samples an item)"


def _passes(data: ReportData, attribute: Attribute, judge: str, normalise: bool) -> tuple[np.ndarray, np.ndarray]:
    """Items x points: the sum of the judge's stored distribution passes over the scale's points (each pass scaled
    to sum to 1 when ``normalise``), and the number of passes an item (0: none)."""
    points = [float(p) for p in attribute.scale.points]
    keys = data.keys(ALL)
    protocol = data.protocol(attribute)
    total = np.zeros((len(keys), len(points)))
    passes = np.zeros(len(keys))
    stored = _stored(data).get((judge, attribute.name), [])
    # each pass's item's position among the keys (sorted), -1 for an item not among them: no dict of every item's
    asked = np.array([item_key for item_key, _, _, _ in stored], dtype=np.int64)
    at = np.minimum(np.searchsorted(keys, asked), max(len(keys) - 1, 0))
    found = (keys[at] == asked) if len(keys) else np.zeros(len(asked), dtype=bool)
    positions = np.where(found, at, -1).tolist()
    for (_, presentation, variant, distribution), where in zip(stored, positions, strict=True):
        if where < 0:
            continue
        row = np.zeros(len(points))
        for label, p in distribution.items():
            value = _value(protocol, attribute, label, variant, presentation)
            if value is not None and value in points:
                row[points.index(value)] += p
        if row.sum() > 0:
            total[where] += row / row.sum() if normalise else row
            passes[where] += 1
    return total, passes


def _distribution_juries(data: ReportData) -> dict[str, list[str]]:
    """Each ``distribution`` jury of the task that the report shows: its label -> its members' labels."""
    if "distribution_juries" not in data.extra:
        data.extra["distribution_juries"] = {
            jury.label: [member.label for member in jury.members]
            for jury in list_juries(data.study)
            if jury.aggregate == "distribution" and jury.applies_to(data.task.name) and jury.label in data.judges
        }
    juries: dict[str, list[str]] = data.extra["distribution_juries"]
    return juries


def _jury_distribution(data: ReportData, attribute: Attribute, members: list[str]) -> tuple[np.ndarray, str] | None:
    """A ``distribution`` jury's distribution: its members' stored distributions (each the mean of its passes, as
    ``stats/jury.py`` averages them: unscaled, so its expected value is the jury's value) averaged with equal weight
    and scaled to sum to 1; only on items where every member has one (as the jury has a value only there)."""
    per_member = []
    for member in members:
        total, passes = _passes(data, attribute, member, normalise=False)
        per_member.append(np.where(passes[:, None] > 0, total / np.maximum(passes, 1)[:, None], np.nan))
    if not per_member:
        return None
    averaged = np.mean(per_member, axis=0)  # NaN where any member has none
    mass = averaged.sum(axis=1, keepdims=True)
    found = np.where(mass > 0, averaged / np.where(mass > 0, mass, 1), np.nan)
    if not np.any(~np.isnan(found).any(axis=1)):
        return None
    return found, "its members' next-token distributions over the scale averaged (a distribution jury)"


def _value(
    protocol: EvaluationProtocol, attribute: Attribute, label: str, variant: str, presentation: str
) -> float | None:
    try:
        number = float(label)
    except ValueError:
        return None
    value, _ = protocol.canonical(number, attribute, variant, presentation)
    return float(value)


def _stored(data: ReportData) -> dict[tuple[str, str], list[tuple[int, str, str, dict[str, float]]]]:
    if "distributions" not in data.extra:
        found: dict[tuple[str, str], list[tuple[int, str, str, dict[str, float]]]] = {}
        for judge, attribute, item_key, presentation, variant, distribution in judge_distributions(
            data.study, data.task.name
        ):
            found.setdefault((judge, attribute), []).append((item_key, presentation, variant, distribution))
        data.extra["distributions"] = found
    stored: dict[tuple[str, str], list[tuple[int, str, str, dict[str, float]]]] = data.extra["distributions"]
    return stored


def _counts(m: np.ndarray, points: list[float]) -> np.ndarray:
    """Items x points: how many of the annotators' ratings (rows of ``m``) of each item fall on each point."""
    index = _indices(m, points)
    counts = np.zeros((m.shape[1], len(points)))
    for row in index:
        given = row >= 0
        counts[np.nonzero(given)[0], row[given]] += 1
    return counts


def _indices(m: np.ndarray, points: list[float]) -> np.ndarray:
    """Annotators x items of point indices (the nearest point), −1 where unrated."""
    out = np.full(m.shape, -1, dtype=int)
    given = ~np.isnan(m)
    if given.any():
        rounded = ag.to_labels(m[given], points)
        out[given] = np.searchsorted(np.asarray(sorted(points)), rounded)
    return out


# --- calibration ---------------------------------------------------------------------------------------


def calibration(data: ReportData, attributes: Sequence[Attribute]) -> None:
    if not data.humans:
        return
    for attribute in questions(data, attributes):
        points = [float(p) for p in attribute.scale.points]
        people = data.matrix(HUMANS, attribute.name, ALL)
        if people.size == 0:
            continue
        counts, ratings = _counts(people, points), _indices(people, points)
        ordinal = data.protocol(attribute).level is Level.ORDINAL
        for judge in data.judges:
            found = distributions(data, attribute, judge)
            if found is None:
                continue
            judge_p, source = found
            result = cal.calibration(judge_p, counts, ratings, ordinal)
            add = partial(data.add, "calibration", attribute.name, ALL, judge)
            _scores(data, add, result.before, "", f"the judge's distribution: {source}; {AGAINST}")
            add("js_ceiling", value=result.ceiling.value, n=result.ceiling.n, note=CEILING)
            _last_ci(data, result.ceiling)
            if result.after is not None:
                _scores(data, add, result.after, "_after", AFTER)
            else:
                add("ece_after", value=None, n=0, note=result.note)


def _scores(data: ReportData, add: partial[None], found: cal.Scores, suffix: str, note: str) -> None:
    add(
        f"ece{suffix}",
        value=found.ece,
        n=found.ratings,
        note=f"{note}; top-label, {cal.BINS} equal-width bins; no interval (binned, biased upward at small n)",
    )
    for name, mean in (("brier", found.brier), ("rps", found.rps), ("js_distance", found.js)):
        if mean is None:
            continue
        add(f"{name}{suffix}", value=mean.value, n=mean.n, note=note)
        _last_ci(data, mean)
    for b, (conf, share, count) in enumerate(
        zip(found.reliability.confidence, found.reliability.accuracy, found.reliability.counts)
    ):
        # the reliability diagram's bin b: the judge's mean confidence and the share of ratings at its point
        add(f"reliability_confidence{suffix}_{b}", value=conf, n=count)
        add(f"reliability_share{suffix}_{b}", value=share, n=count)
    add(f"items{suffix}", value=float(found.items), n=found.items)


def _last_ci(data: ReportData, mean: cal.Mean) -> None:
    """The record just added gets its interval (``ReportData.add`` takes one from an agreement ``Stat`` only)."""
    last = data.records[-1]
    if mean.ci_low is not None and mean.ci_high is not None:
        data.records[-1] = type(last)(
            **{
                **last.__dict__,
                "ci_low": mean.ci_low,
                "ci_high": mean.ci_high,
                "ci": "normal, standard error clustered by item, 95%",
            }
        )


def _lay_out_calibration(found: Found, who: Who) -> Table | None:
    keys = found.keys("calibration", "attribute", "evaluator")
    if not keys:
        return None
    rows = []
    for attribute, judge in keys:
        get = partial(found.get, "calibration", attribute, ALL, judge, None)
        rows.append(
            [
                attribute,
                who(judge, attribute),
                _with_ci(get("brier")) + _after(get("brier_after")),
                _with_ci(get("rps")) + _after(get("rps_after")) if get("rps") else "n/a",
                cells.value(get("ece"), 3) + _after(get("ece_after")),
                _with_ci(get("js_distance")) + _after(get("js_distance_after")),
                _with_ci(get("js_ceiling")),
                f"{int(r.value)}" if (r := get("items")) is not None and r.value is not None else "0",
            ]
        )
    header = [
        "attribute",
        "judge",
        "Brier (→ after)",
        "RPS (→ after)",
        "ECE (→ after)",
        "JS distance to people (→ after)",
        "people's split-half JS (ceiling)",
        "items",
    ]
    return CALIBRATION.title, header, rows


def _with_ci(record: object) -> str:
    from tui_rater.stats.records import Record

    if not isinstance(record, Record):
        return "n/a"
    shown = cells.interval(record, 3)
    return cells.value(record, 3) + (f" {shown}" if shown else "")


def _after(record: object) -> str:
    from tui_rater.stats.records import Record

    return f" → {record.value:.3f}" if isinstance(record, Record) and record.value is not None else ""


# --- distribution-powered means ---------------------------------------------------------------------------


def ppi_distribution(data: ReportData, attributes: Sequence[Attribute]) -> None:
    if not data.humans:
        return
    for attribute in questions(data, attributes):
        human = data.item_values(HUMANS, attribute, ALL)
        for judge in data.judges:
            f = data.item_values(judge, attribute, ALL)
            if np.all(np.isnan(f)):
                continue
            add = partial(data.add, "ppi_distribution", attribute.name, ALL, judge)
            if data.settings.verdict.design is not None:
                for estimate in design_estimates(data, attribute, f, human):
                    _estimate(data, add, estimate, bias_corrected.STRATIFIED)
                continue
            if bias_corrected.inclusion(data, attribute) is not None:
                add("classical", value=None, note="not computed: the items were drawn by active sampling")
                continue
            for estimate in estimates(data, attribute, judge, f, human):
                _estimate(data, add, estimate)


def estimates(
    data: ReportData, attribute: Attribute, judge: str, f: np.ndarray, human: np.ndarray
) -> list[tuple[str, pr.Estimate]]:
    """Every estimate over the items the judge rated (the humans-only mean too, so that all have one target)."""
    features, _ = _features(data, attribute, judge, f)
    judged = ~np.isnan(f)
    by_system, by_confidence = (strata(data, attribute, judge, f, by) for by in STRATA)
    f, human, features = f[judged], human[judged], features[judged]
    out = [
        ("classical", pr.classical(human)),
        ("ppi_plus_plus", pr.ppi_plus_plus(f, human)),
        ("recalibrated", pr.recalibrated_ppi(features, human)),
    ]
    if by_system is not None:
        out.append(("stratified_system", pr.stratified_ppi(f, human, by_system[judged], STRATA["system"])))
    if by_confidence is not None:
        found = pr.stratified_ppi(f, human, by_confidence[judged], STRATA["confidence"])
        out.append(("stratified_confidence", found))
    left_out = int((~judged).sum())
    if left_out:
        said = f"over the {int(judged.sum())} items the judge rated ({left_out} it did not rate left out)"
        out = [
            (name, pr.Estimate(**{**e.__dict__, "note": "; ".join(x for x in (e.note, said) if x)})) for name, e in out
        ]
    return out


STRATA = {"system": "system", "confidence": "the judge's confidence"}  # how items are stratified -> in words


def _features(data: ReportData, attribute: Attribute, judge: str, f: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(items x features for the recalibration map, each item's confidence): the judge's distribution and its
    largest probability where it gave one on every item it rated; else its score and NaN."""
    found = distributions(data, attribute, judge)
    judged = ~np.isnan(f)
    if found is not None and not np.isnan(found[0][judged]).any():
        return found[0], np.nanmax(np.where(np.isnan(found[0]), -1.0, found[0]), axis=1)
    return f[:, None], np.full(f.shape, np.nan)


def strata(data: ReportData, attribute: Attribute, judge: str, f: np.ndarray, by: str) -> np.ndarray | None:
    """Each item's stratum (``data.keys(ALL)``'s order; '' where the judge did not rate it): its system, or the
    judge's confidence cut at its terciles over the items it rated; None with one system, or no confidence."""
    judged = ~np.isnan(f)
    labels = np.full(f.shape, "", dtype=object)
    if by == "system":
        systems = data.systems_of(data.keys(ALL))
        labels[judged] = systems[judged]
        return labels if len(set(labels[judged].tolist())) > 1 else None
    if by != "confidence":
        raise ValueError(f"unknown strata {by!r}")
    _, confidence = _features(data, attribute, judge, f)
    if np.isnan(confidence[judged]).all():
        return None
    labels[judged] = pr.confidence_strata(confidence[judged])
    return labels


def design_estimates(
    data: ReportData, attribute: Attribute, f: np.ndarray, human: np.ndarray
) -> list[tuple[str, pr.Estimate]]:
    """With a stored stratified draw (``assign --allocate``): the humans-only stratified mean and stratified PPI++
    over the draw's frame, each stratum weighted by its share N_h / N of the frame as stored with the draw, on the
    question's stratified sample (the pilot and each stratum's rated prefix of the draw). The methods that assume a
    uniform sample are not computed: the draw is not one."""
    design = data.settings.verdict.design
    assert design is not None
    names = (("allocated_classical", "humans only, stratified"), ("allocated", "stratified PPI++"))
    by = f"{design.by} (the stored draw's strata)"
    pi, problem = bias_corrected.design_inclusion(data, attribute)
    keys = data.keys(ALL)
    frame = np.array([int(k) in design.stratum_of for k in keys], dtype=bool)
    if problem is None and np.isnan(f[frame]).any():
        problem = f"the judge did not rate {int(np.isnan(f[frame]).sum())} items of the stored draw's frame"
    if problem is not None:
        return [
            (name, pr.Estimate(f"{shown} ({by})", Interval(None, note=problem), note=problem)) for name, shown in names
        ]
    labels = np.array([design.stratum_of[int(k)] for k in keys[frame]], dtype=object)
    sampled = np.array([int(k) in pi for k in keys], dtype=bool)
    y = np.where(sampled, human, np.nan)[frame]
    left_out = int((~np.isnan(human) & ~sampled).sum())
    said = f"{left_out} rated items outside the pilot and the draw's rated prefix left out" if left_out else ""
    out = []
    for (name, shown), lam in zip(names, (0.0, None)):
        found = pr.stratified_ppi(f[frame], y, labels, by, lam=lam, method=f"{shown} (by {by})")
        note = "; ".join(x for x in (found.note, said) if x)
        out.append((name, pr.Estimate(**{**found.__dict__, "note": note})))
    return out


def _estimate(
    data: ReportData, add: partial[None], found: tuple[str, pr.Estimate], sampling: str = bias_corrected.UNIFORM
) -> None:
    name, estimate = found
    i = estimate.interval
    note = "; ".join(x for x in (estimate.note or i.note, sampling) if x)
    add(name, value=i.estimate, n=i.n, note=note)
    _last_ci(data, cal.Mean(i.estimate, i.ci_low, i.ci_high, i.n))
    add(f"{name}_width", value=estimate.width, n=i.n)
    add(f"{name}_saved", value=None if estimate.saved is None else float(estimate.saved), n=i.n)
    add(f"{name}_pilot", value=None if estimate.pilot is None else float(estimate.pilot), n=pr.PILOT)
    if estimate.allocation:
        shares = ", ".join(f"{s} {v:.2f}" for s, v in estimate.allocation.items())
        add(f"{name}_allocation", value=None, n=i.n, note=f"Neyman allocation of ratings: {shares}")


def _lay_out_ppi(found: Found, who: Who) -> Table | None:
    keys = found.keys("ppi_distribution", "attribute", "evaluator")
    if not keys:
        return None
    rows = []
    for attribute, judge in keys:
        get = partial(found.get, "ppi_distribution", attribute, ALL, judge, None)
        for name, shown in METHODS:
            record = get(name)
            if record is None:
                continue
            saved, pilot, allocation = get(f"{name}_saved"), get(f"{name}_pilot"), get(f"{name}_allocation")
            why = record.note.split("; ")[0] if record.value is None else ""
            rows.append(
                [
                    attribute,
                    who(judge, attribute),
                    shown,
                    _with_ci(record),
                    cells.value(get(f"{name}_width"), 3),
                    f"{saved.value:+g}" if saved is not None and saved.value is not None else "n/a",
                    f"{pilot.value:+g}" if pilot is not None and pilot.value is not None else "n/a",
                    why or (allocation.note if allocation is not None else ""),
                ]
            )
    header = [
        "attribute",
        "judge",
        "method",
        "mean human rating [95%]",
        "width",
        "ratings saved at equal width",
        f"… had {pr.PILOT} items been rated",
        "note",
    ]
    return PPI.title, header, rows


CALIBRATION = Layout(
    "calibration",
    "Calibration of the judges' distributions over the scale, " + AGAINST + "; → the same after a cross-fitted "
    "recalibration; the JS distance beside the people's own split-half distance (the noise ceiling); "
    "Brier and RPS 0 = best; 95% intervals clustered by item",
    ("calibration",),
    _lay_out_calibration,
)
PPI = Layout(
    "ppi_distribution",
    "Mean human rating over all items from the judge's distribution: humans only, PPI++, recalibrated PPI++ "
    "(Ji et al. 2025) and stratified PPI++ (Fisch et al. 2024), 95% intervals; ratings saved = human ratings the "
    "humans-only mean would need for the same width, minus those rated (and the same had "
    f"{pr.PILOT} items been rated: a pilot's projection); assumes the rated items are a uniform random sample",
    ("ppi_distribution",),
    _lay_out_ppi,
)
CALIBRATION_SECTION = Section("calibration", calibration, ("calibration",), (CALIBRATION,), Runs.JUDGED)
PPI_SECTION = Section("ppi_distribution", ppi_distribution, ("ppi_distribution",), (PPI,), Runs.JUDGED)

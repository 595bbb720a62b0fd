"""Section ``ppi``: each system's mean human score, bias-corrected from a judge on every item and humans
on a sample -- prediction-powered inference (Angelopoulos et al. 2023; ``stats/ppi.py``, docs/VERDICT.md §3).

Per question (ordinal or interval level: a mean of nominal codes means nothing), judge and system:

- ``ppi`` table: the prediction-powered mean with its 95% interval, the human-only mean and interval on
  the rated items beside it, the judge's mean, the rectifier (the judge's average error where humans
  rated), and how many more human ratings would halve the interval;
- ``ppi_diff`` table: every pair of systems, ``system`` minus ``evaluator_b`` (the other system, as in
  SPA's records), with its interval; paired by prompt when both systems wrote for the same prompts.

The human-rated items must be a random sample. When the items were drawn with recorded inclusion
probabilities (``VerdictSettings.inclusion``, active sampling), each human rating is weighted by 1/π
(``stats/active.py``); otherwise a uniform draw is assumed, and every record says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import partial
from itertools import combinations

import numpy as np
import polars as pl

from tui_rater.domain.protocols import Level
from tui_rater.domain.tasks import Attribute
from tui_rater.stats import active
from tui_rater.stats import ppi as pp
from tui_rater.stats.records import ALL, HUMANS
from tui_rater.stats.sections import cells
from tui_rater.stats.sections.base import Found, Layout, Section, Table, Who
from tui_rater.stats.sections.data import ReportData
from tui_rater.store import rating_columns

CONFIDENCE = 0.95
UNIFORM = (
    "assumes the human-rated items are a uniform random sample of the system's items (no inclusion "
    "probabilities recorded); items chosen otherwise, e.g. the judge's least sure first, bias it"
)
WEIGHTED = "each human rating weighted by 1/π, the probability its item was drawn with (active sampling)"
STRATIFIED = (
    "each human rating weighted by 1/π = N_h / n_h of its stratum in the stored stratified draw (assign --allocate); "
    "over the items of the draw's frame; ratings outside the pilot and the draw's rated prefix left out"
)


def scored(data: ReportData, attributes: Sequence[Attribute]) -> list[Attribute]:
    """The questions whose values have a mean (ordinal or interval level)."""
    return [a for a in attributes if data.protocol(a).level is not Level.NOMINAL]


def inclusion(data: ReportData, attribute: Attribute) -> Mapping[int, float] | None:
    if data.settings.verdict.design is not None:
        return design_inclusion(data, attribute)[0]
    found = data.settings.verdict.inclusion
    return None if found is None else found.get(attribute.name)


def design_inclusion(data: ReportData, attribute: Attribute) -> tuple[dict[int, float], str | None]:
    """A stratified draw's π for this question's sampled items (n_h / N_h), and a sentence when it cannot weight
    them (``neyman.StratifiedDesign.inclusion``); ({}, None) without a draw."""
    design = data.settings.verdict.design
    if design is None:
        return {}, None
    cache = data.extra.setdefault("design_inclusion", {})
    if attribute.name not in cache:
        keys = data.keys(ALL)
        rated = ~np.isnan(data.item_values(HUMANS, attribute, ALL)) if data.humans else np.zeros(keys.size, bool)
        cache[attribute.name] = design.inclusion(keys, rated)
    found: tuple[dict[int, float], str | None] = cache[attribute.name]
    return found


def in_frame(data: ReportData, system: str) -> np.ndarray | None:
    """Which of the system's items are in the stored draw's frame (None without a draw)."""
    design = data.settings.verdict.design
    if design is None:
        return None
    return np.array([int(k) in design.stratum_of for k in data.keys(system)], dtype=bool)


def sampling_note(data: ReportData, attribute: Attribute) -> str:
    if data.settings.verdict.design is not None:
        return STRATIFIED
    return UNIFORM if inclusion(data, attribute) is None else WEIGHTED


def prompts(data: ReportData) -> pl.DataFrame:
    """item_key, prompt: each item's prompt field ('' where none; what the systems wrote for, Chen et al.'s
    input), by key, as columns (not a dict of a million items' prompts)."""
    if "prompt_frame" not in data.extra:
        data.extra["prompt_frame"] = rating_columns.task_prompts(data.study, data.task.name)
    found: pl.DataFrame = data.extra["prompt_frame"]
    return found


def ppi(data: ReportData, attributes: Sequence[Attribute]) -> None:
    for attribute in scored(data, attributes):
        for judge in data.judges:
            arrays = {s: _arrays(data, judge, attribute, s) for s in data.systems}
            if all(np.all(np.isnan(f)) for f, _, _ in arrays.values()):
                continue  # the judge did not rate this question
            if (problem := design_inclusion(data, attribute)[1]) is not None:
                for system in data.systems:  # never an estimate that weights a stratum it has no rating of
                    data.add("ppi", attribute.name, system, judge, "ppi_mean", value=None, note=problem)
                continue
            rated = [s for s, (f, _, _) in arrays.items() if not np.all(np.isnan(f))]
            for system, (f, y, pi) in arrays.items():
                if system in rated:
                    _mean(data, attribute, judge, system, f, y, pi)
                else:
                    note = "the judge rated none of this system's items"
                    data.add("ppi", attribute.name, system, judge, "ppi_mean", value=None, note=note)
            for a, b in combinations(rated, 2):
                _difference(data, attribute, judge, (a, b), arrays)


def _arrays(
    data: ReportData, judge: str, attribute: Attribute, system: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray | None]:
    """(the judge's value of each item, the humans' mean or NaN, each item's π or None), in key order."""
    f = data.item_values(judge, attribute, system)
    y = data.item_values(HUMANS, attribute, system) if data.humans else np.full(f.shape, np.nan)
    drawn = inclusion(data, attribute)
    pi = None if drawn is None else np.array([drawn.get(int(k), 0.0) for k in data.keys(system)], dtype=float)
    if pi is not None:  # a rating of an item outside the recorded draw is not part of the sample
        y = np.where(pi > 0, y, np.nan)
    frame = in_frame(data, system)
    if frame is not None and pi is not None:  # a stratified draw speaks of its frame's items only
        f, y, pi = f[frame], y[frame], pi[frame]
    return f, y, pi


def _mean(
    data: ReportData, attribute: Attribute, judge: str, system: str, f: np.ndarray, y: np.ndarray, pi: np.ndarray | None
) -> None:
    add = partial(data.add, "ppi", attribute.name, system, judge)
    if pi is not None:
        _active_mean(add, f, y, pi, sampling_note(data, attribute))
        return
    result = pp.ppi_mean(f, y, confidence=CONFIDENCE)
    _interval(add, "ppi", result.estimate, UNIFORM, mean="ppi_mean")
    _interval(add, "classical", result.classical, "humans only, on the rated items", mean="classical_mean")
    add("judge_mean", value=result.judge_mean, n=result.items, note=result.note)
    add("rectifier", value=result.rectifier, n=result.rated, note="mean (human − judge) on the rated items")
    add("extra_ratings_to_halve", value=_count(result.halving), n=result.rated, note=result.halving.note)


def _active_mean(add: partial[None], f: np.ndarray, y: np.ndarray, pi: np.ndarray, how: str = WEIGHTED) -> None:
    estimate, horvitz_thompson = active.active_mean(f, y, pi, confidence=CONFIDENCE)
    _interval(add, "ppi", estimate, how, mean="ppi_mean")
    _interval(add, "classical", horvitz_thompson, "humans only, weighted by 1/π", mean="classical_mean")
    present = f[~np.isnan(f)]
    add("judge_mean", value=float(present.mean()) if present.size else None, n=int(present.size))
    add("extra_ratings_to_halve", value=None, n=estimate.n, note="not computed for weighted (active) samples")


def _count(halving: pp.Halving) -> float | None:
    return None if halving.extra_ratings is None else float(halving.extra_ratings)


def _interval(add: partial[None], prefix: str, interval: pp.Interval, note: str, *, mean: str) -> None:
    note = "; ".join(x for x in (interval.note, note) if x)
    add(mean, value=interval.estimate, n=interval.n, note=note)
    add(f"{prefix}_ci_low", value=interval.ci_low, n=interval.n, note=note)
    add(f"{prefix}_ci_high", value=interval.ci_high, n=interval.n, note=note)
    add(f"{prefix}_std_error", value=interval.std_error, n=interval.n, note=note)


# --- differences between systems -------------------------------------------------------------------


def paired_units(data: ReportData, a: str, b: str) -> tuple[list[int], list[int]] | None:
    """The two systems' items aligned by prompt, when both wrote exactly once for the same prompts; else None."""
    cache: dict[tuple[str, str], tuple[list[int], list[int]] | None] = data.extra.setdefault("paired_units", {})
    if (a, b) not in cache:  # asked once per question and judge: the same pairs each time
        cache[a, b] = _paired_units(data, a, b)
    return cache[a, b]


def _paired_units(data: ReportData, a: str, b: str) -> tuple[list[int], list[int]] | None:
    """(``paired_units``) over columns: each system's items with their prompts; a pairing needs no item without one,
    each prompt once in each system, the same prompts in both, and two of them; the pairs in the prompts' order
    (polars sorts strings by their UTF-8 bytes: the code points' order, as Python's ``sorted``)."""
    prompt_of = prompts(data)

    def of(system: str) -> pl.DataFrame:
        keys = pl.DataFrame({"item_key": data.keys(system)}, schema={"item_key": pl.Int64})
        return keys.join(prompt_of, on="item_key", how="left").with_columns(pl.col("prompt").fill_null(""))

    by_a, by_b = of(a), of(b)
    for by in (by_a, by_b):
        if (by["prompt"] == "").any() or by["prompt"].n_unique() != by.height:
            return None
    by_a, by_b = by_a.sort("prompt"), by_b.sort("prompt")
    if not by_a["prompt"].equals(by_b["prompt"]) or by_a.height < 2:  # (each prompt once: the same set, sorted)
        return None
    keys_a: list[int] = by_a["item_key"].to_list()
    keys_b: list[int] = by_b["item_key"].to_list()
    return keys_a, keys_b


def _difference(
    data: ReportData,
    attribute: Attribute,
    judge: str,
    pair: tuple[str, str],
    arrays: Mapping[str, tuple[np.ndarray, np.ndarray, np.ndarray | None]],
) -> None:
    a, b = pair
    add = partial(data.add, "ppi_diff", attribute.name, a, judge, evaluator_b=b)
    (fa, ya, pia), (fb, yb, pib) = arrays[a], arrays[b]
    units = paired_units(data, a, b)
    if pia is not None and pib is not None:
        _active_difference(add, (fa, ya, pia), (fb, yb, pib), units is not None, sampling_note(data, attribute))
        return
    how = "paired by prompt" if units is not None else "unpaired (the systems did not write for the same prompts)"
    if units is not None:
        # each unit's position among its system's (sorted) keys
        ia, ib = (np.searchsorted(data.keys(s), np.asarray(u, dtype=np.int64)) for s, u in zip(pair, units))
        fa, ya, fb, yb = fa[ia], ya[ia], fb[ib], yb[ib]
    result = pp.ppi_difference(fa, ya, fb, yb, paired=units is not None, names=pair, confidence=CONFIDENCE)
    note = "; ".join(x for x in (how, UNIFORM) if x)
    _interval(add, "difference", result.estimate, note, mean="difference")
    _interval(add, "classical", result.classical, f"humans only; {how}", mean="classical_difference")
    add("extra_ratings_to_halve", value=_count(result.halving), n=result.estimate.n, note=result.halving.note)


def _active_difference(
    add: partial[None],
    arm_a: tuple[np.ndarray, np.ndarray, np.ndarray],
    arm_b: tuple[np.ndarray, np.ndarray, np.ndarray],
    paired: bool,
    weighted: str = WEIGHTED,
) -> None:
    """Two weighted (active) estimates as independent samples: their variances add. Systems that wrote for
    the same prompts usually covary positively, so leaving the covariance out widens the interval."""
    (ea, ha), (eb, hb) = active.active_mean(*arm_a), active.active_mean(*arm_b)
    how = "the systems treated as independent samples" + (" (conservative when paired by prompt)" if paired else "")
    for name, prefix, x, y, note in (
        ("difference", "difference", ea, eb, f"{weighted}; {how}"),
        ("classical_difference", "classical", ha, hb, f"humans only, weighted by 1/π; {how}"),
    ):
        _interval(add, prefix, _sum_of_independent(x, y), note, mean=name)
    add("extra_ratings_to_halve", value=None, note="not computed for weighted (active) samples")


def _sum_of_independent(x: pp.Interval, y: pp.Interval) -> pp.Interval:
    if x.estimate is None or y.estimate is None or x.std_error is None or y.std_error is None:
        return pp.Interval(None, note="; ".join(n for n in (x.note, y.note) if n) or "a system has no estimate")
    variance = x.std_error**2 + y.std_error**2
    return pp.normal_interval(x.estimate - y.estimate, variance, min(x.n, y.n), CONFIDENCE)


# --- layouts -------------------------------------------------------------------------------


def _shown_interval(found: Found, key: tuple[str, str, str, str, str | None], mean: str, prefix: str) -> str:
    estimate = found.get(*key, mean)
    if estimate is None or estimate.value is None:
        return "n/a"
    low, high = found.get(*key, f"{prefix}_ci_low"), found.get(*key, f"{prefix}_ci_high")
    return f"{estimate.value:.2f} [{cells.value(low)}, {cells.value(high)}]"


def _assumption(found: Found, table: str) -> str:
    notes = {r.note for r in found.of(table) if r.statistic in ("ppi_mean", "difference")}
    said = [text for text in (UNIFORM, WEIGHTED, STRATIFIED) if any(text in note for note in notes)]
    return "; ".join(said)


def _lay_out_means(found: Found, who: Who) -> Table | None:
    keys = found.keys("ppi", "attribute", "evaluator", "system")
    if not keys:
        return None
    rows = []
    for attribute, judge, system in keys:
        key = ("ppi", attribute, system, judge, None)
        judge_mean = found.get(*key, "judge_mean")
        halve = found.get(*key, "extra_ratings_to_halve")
        estimate = found.get(*key, "ppi_mean")
        rated = f"{estimate.n}/{judge_mean.n}" if estimate and judge_mean else "n/a"
        why = estimate.note.split("; ")[0] if estimate and estimate.value is None else ""
        rows.append(
            [
                attribute,
                who(judge, attribute),
                system,
                _shown_interval(found, key, "ppi_mean", "ppi"),
                _shown_interval(found, key, "classical_mean", "classical"),
                cells.value(judge_mean),
                rated,
                f"+{halve.value:g}" if halve and halve.value is not None else "n/a",
                why or (halve.note if halve and halve.value is None else ""),
            ]
        )
    title = MEANS.title + "; " + _assumption(found, "ppi")
    header = [
        "attribute",
        "judge",
        "system",
        "PPI mean [95%]",
        "humans only",
        "judge mean",
        "rated/items",
        "ratings to halve",
        "note",
    ]
    return title, header, rows


def _lay_out_differences(found: Found, who: Who) -> Table | None:
    keys = found.keys("ppi_diff", "attribute", "evaluator", "system", "evaluator_b")
    if not keys:
        return None
    rows = []
    for attribute, judge, a, b in keys:
        key = ("ppi_diff", attribute, a, judge, b)
        estimate = found.get(*key, "difference")
        paired = "paired" if estimate and "paired by prompt" in estimate.note else "unpaired"
        rows.append(
            [
                attribute,
                who(judge, attribute),
                f"{a} − {b}",
                _shown_interval(found, key, "difference", "difference"),
                _shown_interval(found, key, "classical_difference", "classical"),
                paired,
            ]
        )
    title = DIFFERENCES.title + "; " + _assumption(found, "ppi_diff")
    return title, ["attribute", "judge", "systems", "PPI difference [95%]", "humans only", "design"], rows


MEANS = Layout(
    "ppi",
    "Bias-corrected system means (prediction-powered inference, Angelopoulos et al. 2023): judge on every "
    "item + mean (human − judge) on the rated ones, 95% intervals, the humans-only mean beside it",
    ("ppi",),
    _lay_out_means,
)
DIFFERENCES = Layout(
    "ppi_diff",
    "Differences between systems, prediction-powered (95% intervals), the humans-only difference beside",
    ("ppi_diff",),
    _lay_out_differences,
)
# bias-corrected system means (ordinal and interval questions)
SECTION = Section("ppi", ppi, ("ppi", "ppi_diff"), (MEANS, DIFFERENCES))

"""Prediction-powered means that use the judge's whole distribution, not one number per item.

- **Recalibrated PPI++** ("Predictions as surrogates", Ji, Lei & Zrnic 2025, arXiv 2501.09731): the judge's
  features (its probability at each scale point, or its score when it gave no distribution) are mapped to the
  people's mean rating of the item by a ridge regression fitted on the rated items (closed form, as scikit-learn's
  ``Ridge``: a test dependency only), *cross-fitted*: the rated items are split into ``FOLDS`` folds
  (``calibration.folds``, seeded); a rated item's prediction comes from
  the map fitted on the other folds, an unrated item's is the average of the folds' maps (cross-prediction, Zrnic &
  Candès 2024). The predictions then go through PPI++ (``ppi.ppi_mean(power_tuned=True)``): λ̂ keeps it at least as
  narrow as the humans-only mean, asymptotically, however poor the map. For a mean, the paper's optimal imputed
  loss is E[human | judge's output], which is what the map estimates. A linear map over the probabilities gives each
  scale point its own learned score (a judge that says "4" when people say 3 is re-scored), which a single λ cannot.
- **Stratified PPI++** (Fisch et al., "Stratified Prediction-Powered Inference for Hybrid Language Model
  Evaluation", NeurIPS 2024): the items split into strata (by system, or by the judge's confidence -- its largest
  probability, cut at its terciles); PPI within each with one λ̂ tuned for the whole (``stratified_ppi``); the
  estimate Σ_s w_s θ̂_s with w_s = N_s / N and variance Σ_s w_s² Var θ̂_s; a Student t interval. The allocation
  it implies (Neyman: rate stratum s in proportion to w_s · sd_s of the rectifier) is reported as shares; the
  human-rated items must still be a uniform random sample *within* each stratum.

Each comes with the number of human ratings it saves at equal width: the humans-only mean would need
Var(human) / Var θ̂ ratings for the same interval (the effective sample size); minus the n rated. A pilot statement
projects the same to a planned number of ratings from the variances measured so far.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy import stats as sp

from tui_rater.stats import ppi as pp
from tui_rater.stats.calibration import folds
from tui_rater.stats.neyman import StratumFigures
from tui_rater.stats.ppi import Interval

FOLDS = 5
SEED = 0
MIN_PER_STRATUM = 5  # rated items a stratum needs for its own λ̂ and variance
PILOT = 60  # the planned ratings the pilot statement speaks of
RIDGE = 1.0  # sklearn Ridge's alpha: a little shrinkage for strata of few rated items


@dataclass(frozen=True)
class Estimate:
    """One estimate of the mean human rating, with what it saves against the humans-only mean."""

    method: str
    interval: Interval
    saved: int | None = None  # human ratings saved at equal width (negative: it needs more)
    pilot: int | None = None  # ... at PILOT ratings, projected from the variances so far
    allocation: dict[str, float] = field(default_factory=dict)  # stratum -> share of ratings (stratified)
    note: str = ""
    # the variance had n items been rated, drawn as the rated ones were: fixed + spread / n (``variance_at``);
    # ``spread`` is a variance of the human-side term, estimated with ``spread_df`` degrees of freedom
    fixed: float | None = None
    spread: float | None = None
    spread_df: float | None = None
    # stratified: each stratum's size, pilot and SD of the rectifier y − λ·f, and the λ (``neyman`` allocates from them)
    strata: tuple[StratumFigures, ...] = ()
    lam: float | None = None

    def variance_at(self, planned: int | float) -> float | None:
        """The estimate's variance with ``planned`` human-rated items, the judge's term and λ held as measured (the
        pilot statement here and ``ppi_plan``'s sample sizes both read it)."""
        if self.fixed is None or self.spread is None or planned <= 0:
            return None
        # at PPI++'s optimal λ the judge's term is λ²Var(f)/N ≥ 0 (Cov(f, human − λf) = 0 there); a negative
        # estimate is the pilot's noise (cross-fitted predictions of a judge without signal make it so), and kept
        # it would promise a variance that more ratings drive below zero
        return max(self.fixed, 0.0) + self.spread / planned

    @property
    def width(self) -> float | None:
        i = self.interval
        return None if i.ci_low is None or i.ci_high is None else i.ci_high - i.ci_low


def ridge(x: np.ndarray, y: np.ndarray, alpha: float = RIDGE) -> tuple[np.ndarray, float]:
    """Ridge regression with an unpenalised intercept: (weights, intercept)."""
    mx, my = x.mean(axis=0), float(y.mean())
    xc = x - mx
    weights = np.linalg.solve(xc.T @ xc + alpha * np.eye(x.shape[1]), xc.T @ (y - my))
    return weights, my - float(mx @ weights)


def cross_fitted(features: np.ndarray, human: np.ndarray, k: int = FOLDS, seed: int = SEED) -> np.ndarray | None:
    """The map's prediction of each item's human mean: out of fold where rated, the folds' average elsewhere."""
    rated = np.nonzero(~np.isnan(human))[0]
    if rated.size < 2 * k:
        return None
    unrated = np.nonzero(np.isnan(human))[0]
    out = np.full(human.shape, np.nan)
    elsewhere = np.zeros(unrated.size)
    for held in folds(rated.size, k, seed):
        fit = np.delete(rated, held)
        weights, intercept = ridge(features[fit], human[fit])
        out[rated[held]] = features[rated[held]] @ weights + intercept
        if unrated.size:
            elsewhere += (features[unrated] @ weights + intercept) / k
    out[unrated] = elsewhere
    return out


def equal_width_saving(variance: float | None, var_human: float, rated: int) -> int | None:
    """Human ratings saved at equal width: Var(human) / variance (the humans-only ratings for the same interval)
    minus those rated."""
    if variance is None or variance <= 0 or not math.isfinite(variance):
        return None
    if not var_human > 0:  # the people's ratings do not vary: their own interval is a point, nothing to save
        return None
    return round(var_human / variance - rated)


def _var_human(human: np.ndarray) -> float:
    y = human[~np.isnan(human)]
    return float(np.var(y, ddof=1)) if y.size > 1 else math.nan


def _from_ppi(method: str, found: pp.PpiMean, human: np.ndarray, note: str = "") -> Estimate:
    var_y = _var_human(human)
    se = found.estimate.std_error
    saved = equal_width_saving(se**2 if se is not None else None, var_y, found.rated)
    said = "; ".join(x for x in (found.estimate.note, note) if x)
    # PPI's variance had n items been rated: the judge's term stays, the human term scales as 1/n; the human term
    # is the variance of human − λ·judge, with the mean and λ estimated from the rated items
    spread = None if found.human_term is None or not found.rated else found.human_term * found.rated
    estimate = Estimate(
        method,
        Interval(**{**found.estimate.__dict__, "note": said}),
        saved,
        note=said,
        fixed=found.judge_term,
        spread=spread,
        spread_df=float(found.rated - 2),
    )
    return _with_pilot(estimate, found.items, var_y)


def _with_pilot(estimate: Estimate, items: int, var_y: float) -> Estimate:
    """The ratings saved at equal width had ``PILOT`` items been rated (where the judge rated more)."""
    if items <= PILOT or (at := estimate.variance_at(PILOT)) is None:
        return estimate
    return Estimate(**{**estimate.__dict__, "pilot": equal_width_saving(at, var_y, PILOT)})


def classical(human: np.ndarray) -> Estimate:
    found = pp.ppi_mean(np.zeros_like(human), human)  # only its ``classical`` part is read
    n = found.classical.n
    var_y = _var_human(human) if n > 1 else None
    return Estimate(
        "humans only",
        found.classical,
        0,
        0 if human.size > PILOT else None,
        note=found.classical.note,
        fixed=0.0 if var_y is not None else None,
        spread=var_y,
        spread_df=float(n - 1),
    )


def ppi_plus_plus(judge: np.ndarray, human: np.ndarray) -> Estimate:
    return _from_ppi("PPI++", pp.ppi_mean(judge, human, power_tuned=True), human)


def recalibrated_ppi(features: np.ndarray, human: np.ndarray, folds: int = FOLDS, seed: int = SEED) -> Estimate:
    """PPI++ on the cross-fitted map from the judge's features (items x d; rows of NaN: no judge output) to the
    people's mean."""
    has = ~np.isnan(features).any(axis=1)
    fitted = cross_fitted(features[has], human[has], folds, seed)
    if fitted is None:
        note = f"needs at least {2 * folds} human-rated items to cross-fit the map over {folds} folds"
        return Estimate("recalibrated PPI++", Interval(None, n=int((~np.isnan(human)).sum()), note=note), note=note)
    dropped = int((~has).sum())
    note = f"{dropped} items without a judge output left out" if dropped else ""
    note = "; ".join(x for x in (note, f"ridge map cross-fitted over {folds} folds of rated items, seed {seed}") if x)
    return _from_ppi("recalibrated PPI++", pp.ppi_mean(fitted, human[has], power_tuned=True), human[has], note)


def confidence_strata(confidence: np.ndarray) -> np.ndarray:
    """The judge's confidence (its largest probability) cut at its terciles: 'low', 'middle', 'high'."""
    known = confidence[~np.isnan(confidence)]
    if known.size == 0:
        return np.full(confidence.shape, "", dtype=object)
    low, high = np.quantile(known, [1 / 3, 2 / 3])
    labels = np.where(confidence <= low, "low", np.where(confidence <= high, "middle", "high"))
    return np.where(np.isnan(confidence), "", labels).astype(object)


def stratified_ppi(
    judge: np.ndarray,
    human: np.ndarray,
    strata: Sequence[str] | np.ndarray,
    by: str,
    lam: float | None = None,
    method: str | None = None,
) -> Estimate:
    """Σ_s w_s · PPI_s(λ) (Fisch et al. 2024), with the Neyman allocation it implies. ``lam``: a fixed λ instead
    of the tuned one (0: the humans-only stratified mean Σ_s w_s ȳ_s).

    One λ for every stratum, the one that minimises the stratified variance: with a_s = w_s² (1/n_s − 1/N_s),
    λ̂ = Σ a_s Cov_s(human, judge) / Σ a_s Var_s(judge) (PPI++'s λ̂ when there is one stratum). A λ per stratum, fitted
    on ~30 rated items each, made the interval too narrow (92-93 % coverage in the HANNA simulation). The interval
    uses Student's t with Satterthwaite's effective degrees of freedom over the strata's human terms (n_s − 2 each:
    the mean and λ), as stratified sampling does with few ratings a stratum (Cochran 1977, §5.4)."""
    method = method or f"stratified PPI++ (by {by})"
    labels = np.asarray(strata, dtype=object)
    keep = ~np.isnan(judge) & (labels != "")
    judge, human, labels = judge[keep], human[keep], labels[keep]
    names = sorted(set(labels.tolist()))
    total = judge.size
    rated_in = {s: int((~np.isnan(human[labels == s])).sum()) for s in names}
    short = [s for s in names if rated_in[s] < MIN_PER_STRATUM]
    n = int((~np.isnan(human)).sum())
    if len(names) < 2 or short:
        why = (
            "fewer than two strata"
            if len(names) < 2
            else f"strata with fewer than {MIN_PER_STRATUM} rated items: " + ", ".join(short)
        )
        return Estimate(method, Interval(None, n=n, note=why), note=why)
    strata_found = [_Stratum.of(judge[labels == s], human[labels == s], total) for s in names]
    a = np.array([st.w**2 * (1 / st.n - 1 / st.big_n) for st in strata_found])
    var_f = np.array([st.var_f for st in strata_found])
    if lam is None:
        lam = float(a @ [st.cov_yf for st in strata_found] / (a @ var_f)) if a @ var_f > 0 else 1.0
    estimate = sum(st.w * st.estimate(lam) for st in strata_found)
    fixed = sum(st.w**2 * st.fixed(lam) / st.big_n for st in strata_found)
    human_terms = np.array([st.w**2 * st.var_g(lam) / st.n for st in strata_found])
    human_sum = float(human_terms.sum())
    variance = fixed + human_sum
    if abs(variance) <= 1e-9 * (abs(fixed) + human_sum):
        # the judge's term and the people's cancel (every item rated by people, the people's ratings all alike): the
        # sum is round-off (1e-17), whose square root made an interval 2e-8 wide and "-30 ratings saved"
        variance = 0.0
    # where the people's terms do not vary in any stratum there is no estimated human variance for Student's t to
    # widen: the normal quantile (Satterthwaite's formula is 0/0 there, and NaN made the JSON invalid)
    df = float(human_sum**2 / np.sum(human_terms**2 / [st.n - 2 for st in strata_found])) if human_sum > 0 else math.inf
    se = math.sqrt(max(variance, 0.0))
    half = float(sp.t.ppf(0.975, df)) * se if df > 0 else math.nan
    spread = {s: st.w * math.sqrt(st.var_g(lam)) for s, st in zip(names, strata_found)}
    total_spread = sum(spread.values())
    allocation = {s: v / total_spread for s, v in spread.items()} if total_spread > 0 else {}
    var_y = _var_human(human)
    # the planned ratings drawn uniformly, so each stratum gets its share w_s of them: Σ w_s² Var_s / (n w_s)
    per_rating = float(sum(st.w * st.var_g(lam) for st in strata_found))
    note = (
        f"{len(names)} strata by {by}, one λ = {lam:.2f}; {_quantile_words(df)}; "
        "the rated items must be a uniform sample within each stratum"
    )
    if n < pp.SMALL_SAMPLE:
        note += f"; only {n} human ratings: the interval may under-cover"
    interval = Interval(estimate, se, estimate - half, estimate + half, n, note)
    figures = tuple(
        StratumFigures(s, st.big_n, st.n, math.sqrt(max(st.var_g(lam), 0.0))) for s, st in zip(names, strata_found)
    )
    found = Estimate(
        method,
        interval,
        equal_width_saving(variance, var_y, n),
        None,
        allocation,
        note,
        fixed,
        per_rating,
        df,
        figures,
        lam,
    )
    return _with_pilot(found, total, var_y)


def _quantile_words(df: float) -> str:
    if math.isinf(df):
        return "the normal quantile (the people's ratings do not vary within the strata)"
    return f"Student's t, {df:.0f} degrees of freedom (Satterthwaite)"


@dataclass(frozen=True)
class _Stratum:
    w: float  # N_s / N
    big_n: int  # N_s: items the judge rated
    n: int  # n_s: of those, rated by people
    mean_f: float  # the judge's mean over the N_s items
    var_f: float
    y: np.ndarray  # the people's mean on the rated items
    f: np.ndarray  # the judge on the rated items
    cov_yf: float

    @classmethod
    def of(cls, judge: np.ndarray, human: np.ndarray, total: int) -> _Stratum:
        rated = ~np.isnan(human)
        y, f = human[rated], judge[rated]
        var_f = float(np.var(judge, ddof=1)) if judge.size > 1 else 0.0
        cov = float(np.cov(y, f, ddof=1)[0, 1])
        return cls(judge.size / total, judge.size, int(rated.sum()), float(judge.mean()), var_f, y, f, cov)

    def estimate(self, lam: float) -> float:
        return lam * self.mean_f + float(np.mean(self.y - lam * self.f))

    def var_g(self, lam: float) -> float:
        return float(np.var(self.y - lam * self.f, ddof=1))

    def fixed(self, lam: float) -> float:
        """λ² Var(f) + 2λ Cov(f, g) (``ppi.py``'s term that more human ratings do not reduce)."""
        return lam**2 * self.var_f + 2 * lam * float(np.cov(self.f, self.y - lam * self.f, ddof=1)[0, 1])

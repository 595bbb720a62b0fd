"""One reliability model for people and judges: every rater of a question on one scale, with a standard error.

Each question's ratings (people's and judges', each judge one rater) are explained by a latent true answer per
item and a per-rater way of answering it:

- **nominal** answers (a choice, a pairwise A / B / tie): Dawid & Skene (1979), a full confusion matrix per
  rater, fitted by EM from the majority vote. It is written here, not taken from crowd-kit: crowd-kit's
  ``DawidSkene`` is the reference it is tested against (same initialisation, E-step, M-step, clipping and
  stopping rule, to 1e-6 on crowd-kit's own test data), but it runs on pandas and pulls transformers, nltk and
  pyarrow, and a weighted EM over numpy arrays is what the item bootstrap below needs (each resample is the same
  arrays with item weights, warm-started, not a new DataFrame).
- **ordered** answers (Likert; 0-100 binned into ``CONTINUOUS_BINS`` ordered bins): an ordinal Dawid-Skene
  model after Lakshminarayanan & Teh (2013, "Inferring ground truth from multi-annotator ordinal data: a
  probabilistic approach", arXiv:1305.0015): the true answer is a scale point c; a rater reads it with a bias
  β and a spread σ (scale points) and answers the point its reading falls nearest to, an ordered probit with
  the thresholds half-way between points: P(y = k | c) = Φ((k + ½ - c - β)/σ) - Φ((k - ½ - c - β)/σ), the
  ends open. Two numbers a rater, so it is identifiable with few items (a full 5x5 confusion matrix needs 20).
  The M-step starts from the weighted mean and standard deviation of the rater's errors (y - c) -- exact for an
  uncensored Gaussian error, but the scale's ends censor it, which understates a noisy rater's σ -- and then
  takes Newton steps on the exact expected log-likelihood, every rater at once (a generalised EM: each step
  raises the likelihood; the first fit takes three, each later iteration one, warm from the last).

**Reliability** (the one scale): each rater's Cohen's κ against the latent truth: 1 - Σ w P(y, c) / Σ w a(y) t(c),
with P(y, c) the share of the rater's items on which they answered y and the truth is c (the truth weighted by its
posterior), a and t its margins, w = [y ≠ c] for nominal answers and (y - c)² for ordered ones (quadratic weights:
one point off is nearly right). It is read from the rater's own answers against the inferred truth, not from the
model's parametric P(y | c): a rater who answers at random fits the ordered probit badly (uniform answers are no
Gaussian reading), and the κ of their answers is still near 0. 1 is a rater who always gives the true answer, 0
one who answers at random (whatever the
number of options), below 0 one who answers against it. Its **standard error** is an item
bootstrap: ``RESAMPLES`` resamples of the items (each with all of its raters), seeded by the number of items, the
model refitted on each (warm-started from the full fit), the standard deviation of the κs.

**Item difficulty**: 1 - the posterior probability of the item's most likely true answer (0: the raters leave
no doubt). The **consensus** an item gets: the most likely answer (nominal), or the posterior mean of the scale
points (ordered; of the bins' midpoints for 0-100).

**Cost**: both models see an item only through its rating pattern (which rater gave which answer), so
``fit_model`` fits the distinct patterns weighted by how many items have each (``rating_patterns``) -- the same
sums in another order -- and its work grows with the patterns (154 in a study of 100,000 stories rated by 3 people
and a judge on 5 points), not the items; a bootstrap resample is the patterns' counts among the items drawn.

When not to trust it (docs/VERDICT.md): the raters must err independently given the true answer (two judges
of one model family, or people who talk, share errors and are rated too high); a rater's answers must not
depend on the item beyond its true answer (no item difficulty in the likelihood: DS treats every item alike);
with few items a rater's κ and its SE are rough, and the bootstrap SE says so.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from functools import cache, cached_property

import numpy as np
import numpy.typing as npt
from scipy import sparse
from scipy.special import ndtr

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

NOMINAL = "dawid-skene"
ORDINAL = "ordinal"
EPS = 1e-10  # crowd-kit's _EPS: probabilities are clipped here before their logarithm
N_ITER = 100  # crowd-kit's DawidSkene defaults
TOL = 1e-5
RESAMPLES = 50  # of the items, with replacement, for the standard error
BOOT_ITER = 5  # a warm-started refit converges in a few iterations; this bounds a slow one
SEED = 20_071_001  # fixed, as stats/intervals.py: the same study gives the same SE every time
CONTINUOUS_BINS = 10  # a 0-100 score in tenths of its scale (progress counts a gold answer right within a tenth)
MIN_SPREAD = 0.05  # scale points: a rater who always answers the truth has σ -> 0; kept off 0 for the logs
METHOD = f"item bootstrap, {RESAMPLES} resamples, seeded"


@dataclass(frozen=True)
class Labels:
    """Ratings in long format: rating j is rater ``rater[j]``'s answer ``label[j]`` (0 .. n_labels-1) to item
    ``item[j]`` (0 .. n_items-1)."""

    item: IntArray
    rater: IntArray
    label: IntArray
    n_items: int
    n_raters: int
    n_labels: int

    @cached_property
    def incidence(self) -> sparse.csr_matrix:
        """items x cells (a cell: a rater's answer, rater * n_labels + label): how often each item got each. Every
        sum over ratings is a product with it -- column work at a million ratings, not a Python or ``add.at`` loop."""
        cell = self.rater * self.n_labels + self.label
        ones = np.ones(len(cell))
        shape = (self.n_items, self.n_raters * self.n_labels)
        return sparse.csr_matrix((ones, (self.item, cell)), shape=shape)

    @cached_property
    def by_cell(self) -> sparse.csr_matrix:
        return self.incidence.T.tocsr()


@dataclass(frozen=True)
class Patterns:
    """The distinct rating patterns of some ``Labels`` (which rater gave which answer to an item) as the items of a
    smaller ``Labels``, in the order of their first item; ``of_item[i]`` is item i's pattern and ``count[p]`` how many
    items have pattern p. Every step of both models sees an item only through its row of ``incidence``, that is its
    pattern, and sums over items weighted by their multiplicity: the patterns weighted by their counts are the same
    sums (up to the order of floating-point additions), over at most (answers + 1) ** raters rows -- a few hundred to a
    few thousand for 3 people and a judge, at any number of items -- instead of one per item."""

    labels: Labels
    of_item: IntArray
    count: FloatArray


def rating_patterns(labels: Labels) -> Patterns:
    """The distinct patterns of ``labels``; every item its own pattern where a rater answered an item twice (the
    pattern table below has one answer per rater; no study of ours has such labels, crowd-kit's data may)."""
    table = np.zeros((labels.n_items, labels.n_raters), dtype=np.int64)  # answer + 1; 0: not rated
    table[labels.item, labels.rater] = labels.label + 1
    if np.count_nonzero(table) < len(labels.item):  # a rater's second answer to an item overwrote the first
        each = np.arange(labels.n_items, dtype=np.int64)
        return Patterns(labels, each, np.ones(labels.n_items))
    # each row as one integer, a digit per rater (``np.unique(axis=0)`` sorts the rows as bytes, ten times slower);
    # renumbered densely before a digit more would overflow, which keeps distinct rows distinct
    code = np.zeros(labels.n_items, dtype=np.int64)
    for r in range(labels.n_raters):
        if code.max(initial=0) >= np.iinfo(np.int64).max // (labels.n_labels + 1) - labels.n_labels:
            code = np.unique(code, return_inverse=True)[1].ravel().astype(np.int64)
        code = code * (labels.n_labels + 1) + table[:, r]
    _, first, inverse, count = np.unique(code, return_index=True, return_inverse=True, return_counts=True)
    # in the order of their first item: where no two items share a pattern the patterns are the items, in order,
    # each weight 1, and every sum is added in the order it always was
    order = np.argsort(first, kind="stable")
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    shapes = table[first[order]]
    pattern, rater = np.nonzero(shapes)
    label = shapes[pattern, rater] - 1
    compact = Labels(
        pattern.astype(np.int64), rater.astype(np.int64), label, len(order), labels.n_raters, labels.n_labels
    )
    return Patterns(compact, np.asarray(rank[inverse.ravel()], dtype=np.int64), np.asarray(count[order], dtype=float))


@dataclass(frozen=True)
class Fit:
    """A fitted model: the posterior of each item's true answer, the prior, and each rater's confusion
    ``confusion[r, k, c]`` = P(rater r answers k | the true answer is c); the ordinal model's β and σ."""

    kind: str
    posterior: FloatArray  # items x labels
    prior: FloatArray
    confusion: FloatArray  # raters x labels (answered) x labels (true)
    iterations: int
    bias: FloatArray | None = None
    spread: FloatArray | None = None


@dataclass(frozen=True)
class RaterModel:
    """What the report and ``progress`` show: per rater the reliability (κ against the latent truth) and its SE,
    per item its difficulty and consensus posterior."""

    fit: Fit
    reliability: FloatArray  # per rater
    std_error: FloatArray  # per rater (NaN: too few resamples where the rater rated anything)
    accuracy: FloatArray  # per rater: P(answer = true answer) under the model
    items_rated: IntArray  # per rater
    difficulty: FloatArray  # per item
    resamples: int


# --- Dawid & Skene, as crowd-kit fits it ----------------------------------------------------------------------


def _majority_posterior(labels: Labels, weights: FloatArray) -> FloatArray:
    """Each item's share of answers per label (crowd-kit's ``MajorityVote.fit_predict_proba``)."""
    label_of_cell = sparse.csr_matrix(np.tile(np.eye(labels.n_labels), (labels.n_raters, 1)))
    counts = np.asarray((labels.incidence @ label_of_cell).todense(), dtype=np.float64)
    total = counts.sum(axis=1, keepdims=True)
    return np.asarray(np.divide(counts, total, out=np.zeros_like(counts), where=total > 0), dtype=np.float64)


def _used(labels: Labels) -> npt.NDArray[np.bool_]:
    """raters x labels: the answers a rater ever gave (crowd-kit's error matrix has rows for these only)."""
    used = np.zeros((labels.n_raters, labels.n_labels), dtype=bool)
    used[labels.rater, labels.label] = True
    return used


def _ds_m_step(labels: Labels, posterior: FloatArray, weights: FloatArray, used: npt.NDArray[np.bool_]) -> FloatArray:
    errors = _expected_counts(labels, posterior, weights)
    errors = np.where(used[:, :, None], np.maximum(errors, EPS), 0.0)
    total = errors.sum(axis=1, keepdims=True)
    return np.asarray(np.divide(errors, total, out=np.zeros_like(errors), where=total > 0), dtype=np.float64)


def _log_joint(labels: Labels, prior: FloatArray, log_confusion: FloatArray) -> FloatArray:
    """items x labels: log prior + Σ over the item's ratings of log P(answer | true answer)."""
    flat = np.where(np.isfinite(log_confusion), log_confusion, -1e300).reshape(-1, labels.n_labels)
    joint = np.asarray(labels.incidence @ flat, dtype=np.float64)
    return joint + np.log(np.maximum(prior, EPS))


def _e_step(labels: Labels, prior: FloatArray, confusion: FloatArray) -> FloatArray:
    with np.errstate(divide="ignore"):
        joint = _log_joint(labels, prior, np.log(confusion))
    joint -= joint.max(axis=1, keepdims=True)
    scaled = np.exp(joint)
    return np.asarray(scaled / scaled.sum(axis=1, keepdims=True), dtype=np.float64)


def _elbo(
    labels: Labels, posterior: FloatArray, prior: FloatArray, confusion: FloatArray, weights: FloatArray
) -> float:
    """crowd-kit's ``_evidence_lower_bound``: the expected joint log-likelihood plus the posterior's entropy."""
    counts = _expected_counts(labels, posterior, weights)
    with np.errstate(divide="ignore", invalid="ignore"):
        per_cell = np.log(confusion) + np.log(np.maximum(prior, EPS))
        # 0 x log 0 (an answer no one gave) is NaN before np.where drops it: silenced, else numpy's warning reached
        # the user's terminal
        expectation = float(np.sum(np.where(counts > 0, counts * per_cell, 0.0)))
    clipped = np.maximum(posterior, EPS)
    entropy = -float(np.sum(weights[:, None] * np.log(clipped) * clipped))
    return expectation + entropy


def dawid_skene(
    labels: Labels,
    weights: FloatArray | None = None,
    start: FloatArray | None = None,
    n_iter: int = N_ITER,
    tol: float = TOL,
) -> Fit:
    """Dawid & Skene's EM as crowd-kit runs it: start from the majority vote (or ``start``, a posterior),
    prior = the mean posterior, stop when the ELBO per rating gains less than ``tol``. ``weights``: each item's
    multiplicity (a bootstrap resample)."""
    w = np.ones(labels.n_items) if weights is None else weights
    used = _used(labels)
    posterior = _majority_posterior(labels, w) if start is None else start
    prior = _weighted_prior(posterior, w)
    confusion = _ds_m_step(labels, posterior, w, used)
    loss, done = -math.inf, 0
    n_ratings = float(w @ np.asarray(labels.incidence.sum(axis=1)).ravel())
    for _ in range(n_iter):
        done += 1
        posterior = _e_step(labels, prior, confusion)
        prior = _weighted_prior(posterior, w)
        confusion = _ds_m_step(labels, posterior, w, used)
        new_loss = _elbo(labels, posterior, prior, confusion, w) / n_ratings
        if new_loss - loss < tol:
            break
        loss = new_loss
    return Fit(NOMINAL, posterior, np.maximum(prior, EPS), confusion, done)


def _weighted_prior(posterior: FloatArray, weights: FloatArray) -> FloatArray:
    return np.asarray(weights @ posterior / weights.sum(), dtype=np.float64)


# --- the ordinal model ----------------------------------------------------------------------------------------


@cache
def _thresholds(n_labels: int) -> tuple[FloatArray, FloatArray, FloatArray]:
    """(the points, each point's upper and lower threshold: half-way to the next, the ends open)."""
    points = np.arange(n_labels, dtype=float)
    return points, np.append(points[:-1] + 0.5, np.inf), np.insert(points[1:] - 0.5, 0, -np.inf)


def ordinal_confusion(bias: FloatArray, spread: FloatArray, n_labels: int) -> FloatArray:
    """raters x answered x true: the ordered probit with thresholds half-way between the points."""
    points, upper, lower = _thresholds(n_labels)
    shift = points[None, None, :] + bias[:, None, None]  # the true point c, read with the rater's bias
    s = spread[:, None, None]
    confusion = ndtr((upper[None, :, None] - shift) / s) - ndtr((lower[None, :, None] - shift) / s)
    return np.asarray(np.maximum(confusion, EPS), dtype=np.float64)


def _ordinal_m_step(labels: Labels, posterior: FloatArray, weights: FloatArray) -> tuple[FloatArray, FloatArray]:
    """β and σ: the weighted mean and standard deviation of each rater's errors (answer - true point)."""
    points = np.arange(labels.n_labels, dtype=float)
    counts = _expected_counts(labels, posterior, weights)  # raters x answered x true
    error = points[:, None] - points[None, :]
    mass = counts.sum(axis=(1, 2))
    first = np.einsum("rkc,kc->r", counts, error)
    bias = np.divide(first, mass, out=np.zeros(labels.n_raters), where=mass > 0)
    second = np.einsum("rkc,rkc->r", counts, (error[None, :, :] - bias[:, None, None]) ** 2)
    variance = np.divide(second, mass, out=np.ones(labels.n_raters), where=mass > 0)
    return bias, np.maximum(np.sqrt(variance), MIN_SPREAD)


def _expected_counts(labels: Labels, posterior: FloatArray, weights: FloatArray) -> FloatArray:
    """raters x answered x true: the expected number of times each rater answered k to an item whose truth is c."""
    counts = np.asarray(labels.by_cell @ (posterior * weights[:, None]), dtype=np.float64)
    return counts.reshape(labels.n_raters, labels.n_labels, labels.n_labels)


def _probit_newton(
    counts: FloatArray, bias: FloatArray, spread: FloatArray, steps: int = 3
) -> tuple[FloatArray, FloatArray]:
    """The exact M-step from the moments' start: Newton steps on (β, log σ) per rater, every rater at once, with
    central-difference derivatives of Σ counts · log P (two parameters a rater: nine evaluations of a tiny array); a
    step that does not raise a rater's expected log-likelihood is not taken."""
    n_labels = counts.shape[1]

    def values(b: FloatArray, log_s: FloatArray) -> FloatArray:
        """Σ counts · log P at each row of (β, log σ) points (points x raters), in one call."""
        confusion = ordinal_confusion(b.ravel(), np.maximum(np.exp(log_s.ravel()), MIN_SPREAD), n_labels)
        tiled = np.broadcast_to(counts, (b.shape[0], *counts.shape)).reshape(-1, n_labels, n_labels)
        return np.asarray(np.einsum("rkc,rkc->r", tiled, np.log(confusion)), dtype=np.float64).reshape(b.shape)

    h = 1e-4
    b, ls = bias.copy(), np.log(spread)
    db = np.array([0, h, -h, 0, 0, h, h, -h, -h])[:, None]
    ds = np.array([0, 0, 0, h, -h, h, -h, h, -h])[:, None]
    for _ in range(steps):
        f0, fb1, fb0, fs1, fs0, fpp, fpm, fmp, fmm = values(b[None, :] + db, ls[None, :] + ds)
        fbs = fpp - fpm - fmp + fmm
        g = np.stack([(fb1 - fb0) / (2 * h), (fs1 - fs0) / (2 * h)], 1)
        hbb, hss, hbs = (fb1 - 2 * f0 + fb0) / h**2, (fs1 - 2 * f0 + fs0) / h**2, fbs / (4 * h * h)
        det = hbb * hss - hbs**2
        concave = (hbb < 0) & (det > 0)
        safe = np.where(concave, det, 1.0)
        step_b = np.where(concave, -(hss * g[:, 0] - hbs * g[:, 1]) / safe, 0.0)
        step_s = np.where(concave, -(hbb * g[:, 1] - hbs * g[:, 0]) / safe, 0.0)
        new_b, new_ls = b + np.clip(step_b, -1, 1), ls + np.clip(step_s, -1, 1)
        better = values(new_b[None, :], new_ls[None, :])[0] > f0
        b, ls = np.where(better, new_b, b), np.where(better, new_ls, ls)
    return b, np.maximum(np.exp(ls), MIN_SPREAD)


def _log_likelihood(labels: Labels, prior: FloatArray, confusion: FloatArray, weights: FloatArray) -> float:
    joint = _log_joint(labels, prior, np.log(confusion))
    top = joint.max(axis=1)
    per_item = top + np.log(np.exp(joint - top[:, None]).sum(axis=1))
    return float(weights @ per_item)


def ordinal_model(
    labels: Labels,
    weights: FloatArray | None = None,
    start: FloatArray | None = None,
    n_iter: int = N_ITER,
    tol: float = TOL,
) -> Fit:
    """The ordinal model's EM: from each item's answer shares (as Dawid-Skene starts), until the log-likelihood
    per rating gains less than ``tol``."""
    w = np.ones(labels.n_items) if weights is None else weights
    posterior = _majority_posterior(labels, w) if start is None else start
    prior = _weighted_prior(posterior, w)
    bias, spread = _ordinal_m_step(labels, posterior, w)
    bias, spread = _probit_newton(_expected_counts(labels, posterior, w), bias, spread)
    confusion = ordinal_confusion(bias, spread, labels.n_labels)
    loss, done = -math.inf, 0
    n_ratings = float(w @ np.asarray(labels.incidence.sum(axis=1)).ravel())
    for _ in range(n_iter):
        done += 1
        posterior = _e_step(labels, prior, confusion)
        prior = _weighted_prior(posterior, w)
        bias, spread = _probit_newton(_expected_counts(labels, posterior, w), bias, spread, steps=1)
        confusion = ordinal_confusion(bias, spread, labels.n_labels)
        new_loss = _log_likelihood(labels, prior, confusion, w) / n_ratings
        if abs(new_loss - loss) < tol:
            break
        loss = new_loss
    return Fit(ORDINAL, posterior, np.maximum(prior, EPS), confusion, done, bias, spread)


# --- on one scale ---------------------------------------------------------------------------------------------


def _joint(fit: Fit, labels: Labels, weights: FloatArray | None) -> FloatArray:
    """raters x answered x true: each rater's answers against the true answers the model infers (the posterior),
    over the items they rated, as shares."""
    w = np.ones(labels.n_items) if weights is None else weights
    counts = _expected_counts(labels, fit.posterior, w)
    total = counts.sum(axis=(1, 2), keepdims=True)
    return np.asarray(np.divide(counts, total, out=np.zeros_like(counts), where=total > 0), dtype=np.float64)


def reliability(fit: Fit, labels: Labels, weights: FloatArray | None = None) -> FloatArray:
    """Each rater's Cohen's κ against the latent truth (module docstring): unweighted for nominal answers,
    quadratic-weighted for ordered ones (an answer one point off is nearly right)."""
    joint = _joint(fit, labels, weights)
    k = np.arange(labels.n_labels, dtype=float)
    disagree = (k[:, None] - k[None, :]) ** 2 if fit.kind == ORDINAL else 1.0 - np.eye(labels.n_labels)
    answers, truth = joint.sum(axis=2), joint.sum(axis=1)
    observed = np.einsum("rkc,kc->r", joint, disagree)
    expected = np.einsum("rk,rc,kc->r", answers, truth, disagree)
    with np.errstate(divide="ignore", invalid="ignore"):
        kappa = 1.0 - observed / expected
    return np.asarray(np.where(expected > 0, kappa, np.nan), dtype=np.float64)


def accuracy(fit: Fit, labels: Labels, weights: FloatArray | None = None) -> FloatArray:
    """Each rater's share of answers equal to the true answer, under the posterior."""
    return np.asarray(np.einsum("rcc->r", _joint(fit, labels, weights)), dtype=np.float64)


def item_difficulty(fit: Fit) -> FloatArray:
    return np.asarray(1.0 - fit.posterior.max(axis=1), dtype=np.float64)


def fit_model(labels: Labels, kind: str, resamples: int = RESAMPLES) -> RaterModel:
    """The model of ``kind`` (``NOMINAL`` or ``ORDINAL``) on every rating, and each rater's reliability with its
    bootstrap SE (module docstring). Fitted on the distinct rating patterns (``rating_patterns``) weighted by their
    counts: the same fit, and the same resamples, at a cost that grows with the patterns, not the items."""
    fitter = dawid_skene if kind == NOMINAL else ordinal_model
    patterns = rating_patterns(labels)
    shapes, count = patterns.labels, patterns.count
    fit = fitter(shapes, count)
    rated = np.zeros((labels.n_raters, shapes.n_items), dtype=bool)  # raters x patterns
    rated[shapes.rater, shapes.item] = True
    items_rated = np.asarray(np.rint(rated @ count), dtype=np.int64)
    on_items = replace(fit, posterior=fit.posterior[patterns.of_item])
    rng = np.random.default_rng([SEED, labels.n_items])
    kappas = np.full((resamples, labels.n_raters), np.nan)
    if resamples == 0:  # the consensus alone (``report --reference model``): no SE asked for
        return RaterModel(
            on_items,
            reliability(fit, shapes, count),
            np.full(labels.n_raters, np.nan),
            accuracy(fit, shapes, count),
            items_rated,
            item_difficulty(on_items),
            0,
        )
    share = count / labels.n_items
    for b in range(resamples):
        # an item resample counted by pattern: the counts of a multinomial's cells summed in groups are multinomial
        # over the groups, with the groups' shares -- drawn directly, one cell a pattern (a draw over every item was
        # 15 ms at 100k items, 2.4 s of the report's 50 resamples x 4 questions)
        weights = rng.multinomial(labels.n_items, share).astype(float)
        refit = fitter(shapes, weights, start=fit.posterior, n_iter=BOOT_ITER)
        seen = rated @ (weights > 0) > 0  # a rater with no item in the resample has no κ there
        kappas[b] = np.where(seen, reliability(refit, shapes, weights), np.nan)
    counted = np.sum(~np.isnan(kappas), axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        spread = np.nanstd(np.where(counted[None, :] >= 2, kappas, 0.0), axis=0, ddof=1)
    std_error = np.where(counted >= max(2, resamples // 2), spread, np.nan)
    return RaterModel(
        fit=on_items,
        reliability=reliability(fit, shapes, count),
        std_error=np.asarray(std_error, dtype=np.float64),
        accuracy=accuracy(fit, shapes, count),
        items_rated=items_rated,
        difficulty=item_difficulty(on_items),
        resamples=resamples,
    )


def to_ordered(values: FloatArray, low: float, high: float, points: list[float]) -> tuple[IntArray, FloatArray]:
    """(each value's index on the ordered scale, the scale's values): a Likert value rounded to the nearest point
    (a half up, as κ rounds an averaged score), a 0-100 score to its bin of ``CONTINUOUS_BINS``."""
    if points:
        grid = np.asarray(points, dtype=float)
        # each distinct value placed once (a study's ratings take a handful): a values x points matrix of a
        # million ratings was most of the model's set-up at 100k items
        distinct, of_value = np.unique(values, return_inverse=True)
        distance = np.abs(distinct[:, None] - grid[None, :])
        nearest = distance <= distance.min(axis=1, keepdims=True) + 1e-9
        index = (len(grid) - 1 - np.argmax(nearest[:, ::-1], axis=1))[of_value.ravel()]
        return np.asarray(index, dtype=np.int64), np.asarray(grid, dtype=np.float64)
    width = (high - low) / CONTINUOUS_BINS
    index = np.clip(np.floor((values - low) / width), 0, CONTINUOUS_BINS - 1).astype(np.int64)
    return np.asarray(index, dtype=np.int64), np.asarray(
        low + width * (np.arange(CONTINUOUS_BINS) + 0.5), dtype=np.float64
    )

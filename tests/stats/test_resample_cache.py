"""A report's figures over the same n items share one draw of the bootstrap's resamples (issue 35): the draw is
kept and handed out again (a report made 300 draws of 1000 x n counts), and it is the draw made each time before
(the seed is n's)."""

from __future__ import annotations

import numpy as np
import pytest

from tui_rater.stats import intervals as iv

pytestmark = pytest.mark.usefixtures("item_draws")  # the statistics checked on each resample's items


def test_figures_over_the_same_items_draw_once():
    iv._cached.clear()
    drawn: list[np.ndarray] = []
    for _ in range(6):
        drawn.append(np.concatenate(list(iv.resamples(777, 64))))
    assert list(iv._cached) == [777]
    kept = iv._cached[777]
    list(iv.resamples(777, 100))
    assert iv._cached[777] is kept  # drawn once, not once per figure
    fresh = np.random.default_rng([iv.SEED, 777]).multinomial(777, np.full(777, 1 / 777), size=iv.RESAMPLES)
    for counts in drawn:
        assert np.array_equal(counts, fresh)


def test_a_100k_item_study_keeps_its_draw_in_bytes_and_draws_the_same_counts():
    """At 100,000 items the draw (1000 x 100k counts) was made again for every figure: nearly all of a 100k
    report's time. It is kept now, one byte a count (100 MB), and the counts are the ones drawn before."""
    n = 100_000
    iv._cached.clear()
    first = next(iv.resamples(n, 16))
    kept = iv._cached[n]
    assert kept.dtype == np.uint8 and kept.nbytes == iv.RESAMPLES * n
    assert next(iv.resamples(n, 16)) is not kept and iv._cached[n] is kept  # the second figure draws nothing
    rng = np.random.default_rng([iv.SEED, n])
    assert np.array_equal(first, rng.multinomial(n, np.full(n, 1 / n), size=16))  # the draw made before
    iv._cached.clear()

"""The report's bootstrap intervals made faster (issue 35 item 2) give the same numbers to the bit: each new
computation is compared here with the code it replaced, kept in this file as the reference, on random inputs
(the golden reports check the same on the bundled studies)."""

from __future__ import annotations

import numpy as np
import pytest

from tui_rater.stats import intervals as iv


def _tables_before(cell: np.ndarray, kx: int, ky: int, n: int):
    """``_Joint.tables`` before: a float64 ``bincount`` of each block's float copy of the counts."""
    cells = kx * ky
    for w in iv.resamples(n, iv._block(max(n, cells))):
        rows = w.shape[0]
        flat = (np.arange(rows)[:, None] * cells + cell[None, :]).ravel()
        yield np.bincount(flat, weights=w.ravel(), minlength=rows * cells).astype(float).reshape(rows, kx, ky)


@pytest.mark.parametrize("cached", [True, False])
@pytest.mark.parametrize(("n", "kx", "ky"), [(3, 1, 2), (57, 5, 5), (1200, 7, 3), (9001, 2, 11)])
def test_the_joint_tables_are_the_bincounts_of_before_block_for_block(monkeypatch, cached, n, kx, ky):
    if not cached:  # the counts drawn again for each figure (n above the cache), as at 250,000 items
        monkeypatch.setattr(iv, "CACHED_BYTES", 0)
    iv._cached.clear()
    iv._tables.clear()
    rng = np.random.default_rng(n + kx)
    cell = rng.integers(0, kx * ky, n) if n > 3 else np.array([0, 0, 1])  # some cells empty, some not
    joint = iv._Joint(np.arange(kx, dtype=float), np.arange(ky, dtype=float), cell)
    before = list(_tables_before(cell, kx, ky, n))
    for _ in range(2):  # counted, then kept
        now = list(joint.tables())
        assert [t.shape for t in now] == [t.shape for t in before]
        assert all(a.tobytes() == b.tobytes() for a, b in zip(now, before, strict=True))
    assert len(iv._tables) == 1
    iv._tables.clear()

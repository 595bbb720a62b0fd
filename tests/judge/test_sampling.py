"""The nucleus (top-p, no top-k) the engine samples from, against llama.cpp's own top-p sampler."""

from __future__ import annotations

import ctypes

import llama_cpp as lc
import numpy as np
import pytest

from tui_rater.domain.decoding import Decoding
from tui_rater.judge.engine.native import TOKEN_DATA
from tui_rater.judge.engine.sampling import SORTED_NUCLEUS, SequenceSampler, nucleus


def _candidates(logits: np.ndarray):
    data = np.empty(logits.size, TOKEN_DATA)
    data["id"] = np.arange(logits.size, dtype=np.int32)
    data["logit"] = logits
    data["p"] = 0.0
    array = lc.llama_token_data_array(
        data=data.ctypes.data_as(ctypes.POINTER(lc.llama_token_data)), size=logits.size, selected=-1, sorted=False
    )
    return data, array


def llama_top_p(logits: np.ndarray, top_p: float) -> np.ndarray:
    """llama.cpp's top-p sampler on the whole vocabulary: the ids it keeps, in its order."""
    sampler = lc.llama_sampler_init_top_p(top_p, 1)
    data, array = _candidates(logits)
    lc.llama_sampler_apply(sampler, ctypes.byref(array))
    lc.llama_sampler_free(sampler)
    return data["id"][: array.size].copy()


def exact_nucleus(logits: np.ndarray, top_p: float) -> set[int]:
    """The float64 nucleus: the most probable tokens whose mass first reaches top_p."""
    p = np.exp(logits.astype(np.float64) - logits.max())
    order = np.argsort(-p, kind="stable")
    k = int(np.searchsorted(np.cumsum(p[order]), top_p * p.sum())) + 1
    return set(order[:k].tolist())


@pytest.mark.parametrize("spread", [1.0, 2.0, 3.5, 6.0])
@pytest.mark.parametrize("top_p", [0.5, 0.9, 0.95])
def test_a_small_nucleus_is_llama_cpp_s_own_in_its_order(spread, top_p):
    """Same tokens, same (descending) order as llama.cpp's top-p -- so a seed draws the same token -- except among
    tokens of exactly equal logit, which llama.cpp's unstable sort leaves in no fixed order (here: token order)."""
    rng = np.random.default_rng(int(spread * 100 + top_p * 10))
    for _ in range(5):
        logits = (rng.standard_normal(151_936) * spread).astype(np.float32)
        ids, ordered = nucleus(logits, top_p)
        if ids.size > SORTED_NUCLEUS:
            continue
        assert ordered
        theirs = llama_top_p(logits, top_p)
        assert set(ids.tolist()) == set(theirs.tolist())
        assert np.array_equal(logits[ids], logits[theirs])


@pytest.mark.parametrize("spread", [0.05, 0.32, 0.8])
def test_a_large_nucleus_is_the_exact_one_without_a_sort(spread):
    """A flat distribution (a random-weight model: 126k of 152k tokens): the float64 nucleus, found by selection."""
    rng = np.random.default_rng(int(spread * 100))
    logits = (rng.standard_normal(151_936) * spread).astype(np.float32)
    ids, ordered = nucleus(logits, 0.9)
    assert ids.size > SORTED_NUCLEUS and not ordered
    assert set(ids.tolist()) == exact_nucleus(logits, 0.9)
    # llama.cpp's float32 arithmetic cuts within a handful of tokens of it
    assert abs(len(llama_top_p(logits, 0.9)) - ids.size) < ids.size * 1e-3


def test_masked_tokens_are_never_in_the_nucleus():
    rng = np.random.default_rng(3)
    logits = (rng.standard_normal(151_936) * 0.3).astype(np.float32)
    allowed = rng.choice(151_936, 7, replace=False)
    masked = np.full_like(logits, -np.inf)
    masked[allowed] = logits[allowed]
    for top_p in (0.9, 1.0):
        ids, _ = nucleus(masked, top_p)
        assert set(ids.tolist()) <= set(allowed.tolist()) and ids.size > 0


def test_draws_equal_llama_cpp_s_chain_for_a_seed(qwen_gguf):
    """The chain llama-cpp-python builds (top-k 0, typical 1, top-p, min-p 0, temp, dist) draws the same tokens."""
    from tui_rater.judge.engine.native import Model

    model = Model(str(qwen_gguf))
    rng = np.random.default_rng(11)
    try:
        for temperature in (1.0, 0.7):
            logits = (rng.standard_normal(model.n_vocab) * 6.0).astype(np.float32)
            assert nucleus(logits, 0.9)[0].size <= SORTED_NUCLEUS  # (a larger one is drawn in another order)
            for seed in range(40):
                ours = SequenceSampler(model, Decoding(temperature=temperature, top_p=0.9, seed=seed), grammar=None)
                chain = lc.llama_sampler_chain_init(lc.llama_sampler_chain_default_params())
                for sampler in (
                    lc.llama_sampler_init_top_k(0),
                    lc.llama_sampler_init_typical(1.0, 1),
                    lc.llama_sampler_init_top_p(0.9, 1),
                    lc.llama_sampler_init_min_p(0.0, 1),
                    lc.llama_sampler_init_temp(temperature),
                    lc.llama_sampler_init_dist(seed),
                ):
                    lc.llama_sampler_chain_add(chain, sampler)
                data, array = _candidates(logits)
                lc.llama_sampler_apply(chain, ctypes.byref(array))
                assert ours.sample(logits) == int(data["id"][array.selected])
                ours.close()
                lc.llama_sampler_free(chain)
    finally:
        model.close()


def test_the_draws_follow_the_nucleus_distribution(qwen_gguf):
    """A large nucleus (drawn in token order): only its tokens are drawn, in proportion to their probability."""
    from tui_rater.judge.engine.native import Model

    model = Model(str(qwen_gguf))
    rng = np.random.default_rng(2)
    try:
        logits = np.empty(20_000, np.float32)
        logits[:40] = np.log(np.linspace(1.0, 2.0, 40))  # 40 likely tokens: 2/3 of the mass
        logits[40:] = -6.5 + 0.1 * rng.standard_normal(19_960)  # a long flat tail: the other 1/3
        ids, ordered = nucleus(logits, 0.9)
        assert ids.size > SORTED_NUCLEUS and not ordered
        sampler = SequenceSampler(model, Decoding(temperature=1.0, top_p=0.9, seed=5), grammar=None)
        draws = np.array([sampler.sample(logits) for _ in range(3000)])
        sampler.close()
    finally:
        model.close()
    assert set(draws.tolist()) <= set(ids.tolist())
    p = np.exp(logits[ids].astype(np.float64))
    assert abs((draws < 40).mean() - p[ids < 40].sum() / p.sum()) < 0.03


@pytest.mark.parametrize(
    ("top_k", "top_p", "min_p", "spread"),
    [
        (40, 0.95, 0.05, 0.3),  # llama.cpp server's defaults, on a flat distribution (a random-weight model)
        (40, 0.95, 0.05, 3.0),
        (40, 1.0, 0.0, 0.3),
        (5, 0.5, 0.0, 2.0),
        (0, 0.9, 0.05, 6.0),  # min-p alone, after a small nucleus
        (200_000, 0.9, 0.1, 6.0),  # k above the vocabulary: the whole of it
    ],
)
def test_top_k_and_min_p_draw_as_llama_cpp_s_chain(qwen_gguf, top_k, top_p, min_p, spread):
    """--top-k / --min-p (a judge set up as llama.cpp's server samples): the same tokens as llama.cpp's chain
    top-k -> top-p -> min-p -> temp -> dist for each seed."""
    from tui_rater.judge.engine.native import Model

    model = Model(str(qwen_gguf))
    rng = np.random.default_rng(int(spread * 10) + top_k)
    try:
        for temperature in (1.0, 0.8):
            logits = (rng.standard_normal(model.n_vocab) * spread).astype(np.float32)
            for seed in range(25):
                decoding = Decoding(temperature=temperature, top_p=top_p, top_k=top_k, min_p=min_p, seed=seed)
                ours = SequenceSampler(model, decoding, grammar=None)
                chain = lc.llama_sampler_chain_init(lc.llama_sampler_chain_default_params())
                for sampler in (
                    lc.llama_sampler_init_top_k(top_k),
                    lc.llama_sampler_init_typical(1.0, 1),
                    lc.llama_sampler_init_top_p(top_p, 1),
                    lc.llama_sampler_init_min_p(min_p, 1),
                    lc.llama_sampler_init_temp(temperature),
                    lc.llama_sampler_init_dist(seed),
                ):
                    lc.llama_sampler_chain_add(chain, sampler)
                data, array = _candidates(logits)
                lc.llama_sampler_apply(chain, ctypes.byref(array))
                assert ours.sample(logits) == int(data["id"][array.selected]), (temperature, seed)
                ours.close()
                lc.llama_sampler_free(chain)
    finally:
        model.close()


def test_top_k_never_keeps_a_token_the_grammar_ruled_out():
    from tui_rater.judge.engine.sampling import top_k

    logits = np.full(1000, -np.inf, np.float32)
    logits[[3, 500, 999]] = [1.0, 3.0, 2.0]
    assert top_k(logits, 40).tolist() == [500, 999, 3]
    assert top_k(logits, 2).tolist() == [500, 999]

"""One sequence's sampler: grammar, nucleus (top-p, no top-k), temperature and a seeded draw -- llama.cpp's order.

Chiang & Lee sample with temperature 1.0 and nucleus top-p 0.9 over the whole vocabulary (no top-k). llama.cpp's
``top_p`` sampler gets the nucleus by sorting the candidates; when the nucleus is large (a flat distribution: 126k of
Qwen2's 152k tokens on a random-weight model) that is a full sort of the vocabulary, 11 of the 13 ms a token costs.
Here the nucleus is found by selection in O(vocabulary) on the float64 probabilities, and llama.cpp's own samplers
do the rest in C, on the nucleus only: ``temp`` then ``dist`` (mt19937 seeded per sequence), after llama.cpp's
``grammar`` sampler in constrained mode -- the chain llama-cpp-python builds (grammar -> top-p -> temp -> dist).

A nucleus of at most ``SORTED_NUCLEUS`` tokens is cut with llama.cpp's own float32 arithmetic and handed to ``dist``
in descending order, as llama.cpp's top-p leaves it, so such steps draw the same token as llama-cpp-python for the
same seed and logits; a larger nucleus (a nearly flat distribution) is the exact float64 one, handed over in token
order: the same distribution, a different token for the same seed.
"""

from __future__ import annotations

import ctypes

import llama_cpp as lc
import numpy as np

from tui_rater.judge.engine.native import TOKEN_DATA, Model

SORTED_NUCLEUS = 4096
_WINDOW = 16  # sample positions either side of the estimated cut (see nucleus_cut)


class GrammarError(ValueError):
    """The GBNF grammar does not parse."""


def nucleus_cut(p: np.ndarray, top_p: float) -> float:
    """The smallest probability in the nucleus: the most probable tokens whose mass first reaches ``top_p``.

    ``p`` need not be normalised. Selection, not a sort: a strided sample estimates where the cut lies, one pass
    over the candidates keeps only those near it (everything above is counted as kept), and only that window is
    sorted. Expected O(n).
    """
    target = top_p * float(p.sum())
    cand, above = p, 0.0  # candidates still undecided; mass of those decided to be above the cut
    while cand.size > 4 * SORTED_NUCLEUS:
        sample = np.sort(cand[:: max(1, cand.size // 1024)])[::-1]
        scaled = above + np.cumsum(sample) * (float(cand.sum()) / float(sample.sum()))
        i = int(np.searchsorted(scaled, target))
        hi, lo = sample[max(i - _WINDOW, 0)], sample[min(i + _WINDOW, sample.size - 1)]
        over = cand > hi
        mass_over = float(cand.sum(where=over))
        if above + mass_over >= target:  # the cut is above hi
            cand = cand[over]
            continue
        window = ~over & (cand >= lo)
        mass_window = float(cand.sum(where=window))
        if above + mass_over + mass_window < target:  # the cut is below lo
            above += mass_over + mass_window
            cand = cand[cand < lo]
            continue
        if window.all():  # no progress (top_p very close to 1): sort what is left
            break
        above += mass_over
        cand = cand[window]
    ordered = np.sort(cand)[::-1]
    i = int(np.searchsorted(above + np.cumsum(ordered), target))
    return float(ordered[min(i, ordered.size - 1)])


def nucleus(logits: np.ndarray, top_p: float) -> tuple[np.ndarray, bool]:
    """Token ids of the nucleus (tokens of probability 0, e.g. masked by a grammar, never), and whether sorted."""
    top = float(logits.max())
    if not np.isfinite(top):
        return np.empty(0, np.int64), True
    p = np.exp(logits.astype(np.float64) - top)
    ids = np.flatnonzero(p > 0)
    if top_p >= 1.0:
        return ids, False
    cut = nucleus_cut(p if ids.size == p.size else p[ids], top_p)
    if np.count_nonzero(p >= cut) <= SORTED_NUCLEUS:
        return _llama_top_p(logits, p, cut, top_p), True
    return ids[p[ids] >= cut], False


def _llama_top_p(logits: np.ndarray, p: np.ndarray, cut: float, top_p: float) -> np.ndarray:
    """The nucleus exactly as llama.cpp's top-p sampler finds it, in descending order.

    llama.cpp normalises with a float32 sum taken in token order and cuts where the float32 running sum over the
    sorted probabilities first reaches top_p: that can keep a few tokens fewer or more than the exact cut. Doing the
    same float32 arithmetic on the tokens near the exact cut keeps draws equal to llama-cpp-python's for a seed.
    """
    p32 = np.exp(logits - logits.max())  # float32, as llama.cpp's expf
    total = np.cumsum(p32, dtype=np.float32)[-1]  # a running float32 sum, in token order
    near = np.flatnonzero(p >= cut / 2)
    for ids in (near, np.arange(logits.size)):  # the tokens near the cut; all of them if that is not enough
        ordered = ids[np.argsort(-logits[ids], kind="stable")]
        reached = np.flatnonzero(np.cumsum(p32[ordered] / total, dtype=np.float32) >= np.float32(top_p))
        if reached.size:
            return ordered[: reached[0] + 1]
    return ordered


def _chain(*samplers: object) -> object:
    chain = lc.llama_sampler_chain_init(lc.llama_sampler_chain_default_params())
    for sampler in samplers:
        lc.llama_sampler_chain_add(chain, sampler)
    return chain


class SequenceSampler:
    def __init__(self, model: Model, *, temperature: float, top_p: float, seed: int, grammar: str | None):
        self.model = model
        self.greedy = temperature <= 0  # llama.cpp and the APIs: T = 0 is greedy decoding
        self.top_p = top_p
        self.grammar = None
        if grammar is not None:
            self.grammar = lc.llama_sampler_init_grammar(model.vocab, grammar.encode(), b"root")
            if not self.grammar:
                raise GrammarError("the GBNF grammar does not parse")
        # LLAMA_DEFAULT_SEED (2^32 - 1) would mean "random": seeds are taken modulo 2^32 - 1
        self.chain = None if self.greedy else _chain(lc.llama_sampler_init_temp(temperature),
                                                     lc.llama_sampler_init_dist(seed % 0xFFFFFFFF))  # fmt: skip

    def sample(self, logits: np.ndarray) -> int:
        if self.grammar is not None:
            logits = self._grammar_masked(logits)
        if not np.isfinite(logits.max()):  # the grammar allows nothing: end the reply
            token = self.model.eos if self.model.eos is not None else 0
        elif self.greedy:
            token = int(np.argmax(logits))  # llama.cpp's greedy sampler: the first token of highest logit
        else:
            token = self._draw(logits)
        if self.grammar is not None:
            lc.llama_sampler_accept(self.grammar, token)
        return token

    def _draw(self, logits: np.ndarray) -> int:
        ids, ordered = nucleus(logits, self.top_p)
        candidates = np.empty(ids.size, TOKEN_DATA)  # "p" is left to dist, which computes it
        candidates["id"] = ids
        candidates["logit"] = logits[ids]
        array = lc.llama_token_data_array(
            data=candidates.ctypes.data_as(ctypes.POINTER(lc.llama_token_data)),
            size=ids.size,
            selected=-1,
            sorted=ordered,
        )
        lc.llama_sampler_apply(self.chain, ctypes.byref(array))
        token = int(ids[array.selected])
        lc.llama_sampler_accept(self.chain, token)
        return token

    def _grammar_masked(self, logits: np.ndarray) -> np.ndarray:
        candidates = np.empty(logits.size, TOKEN_DATA)
        candidates["id"] = np.arange(logits.size, dtype=np.int32)
        candidates["logit"] = logits
        candidates["p"] = 0.0
        array = lc.llama_token_data_array(
            data=candidates.ctypes.data_as(ctypes.POINTER(lc.llama_token_data)),
            size=logits.size,
            selected=-1,
            sorted=False,
        )
        lc.llama_sampler_apply(self.grammar, ctypes.byref(array))
        return candidates["logit"].copy()

    def close(self) -> None:
        for sampler in (self.chain, self.grammar):
            if sampler:
                lc.llama_sampler_free(sampler)
        self.chain = self.grammar = None

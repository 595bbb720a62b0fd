"""One sequence's sampler: grammar, nucleus (top-p, no top-k), temperature and a seeded draw -- llama.cpp's order.

Chiang & Lee sample with temperature 1.0 and nucleus top-p 0.9 over the whole vocabulary (no top-k). llama.cpp's
``top_p`` sampler gets the nucleus by sorting the candidates; when the nucleus is large (a flat distribution: 126k of
Qwen2's 152k tokens on a random-weight model) that is a full sort of the vocabulary, 11 of the 13 ms a token costs.
Here the nucleus is found by selection in O(vocabulary) (a histogram of log-probabilities); the temperature divides
the nucleus's logits as llama.cpp's ``temp`` sampler does (float32), and llama.cpp's ``dist`` sampler (C; mt19937
seeded per sequence) draws -- after llama.cpp's ``grammar`` sampler in constrained mode. That is the chain
llama-cpp-python builds: grammar -> top-p -> temp -> dist.

A nucleus of at most ``SORTED_NUCLEUS`` tokens is cut with llama.cpp's own float32 arithmetic and handed to ``dist``
in descending order, as llama.cpp's top-p leaves it, so such steps draw the same token as llama-cpp-python for the
same seed and logits. A larger nucleus (a nearly flat distribution) is cut with float64 sums and drawn in two steps
of the same ``dist`` sampler -- a block of ``DRAW_BLOCK`` candidates by its mass, then a candidate within it: the
same distribution, a different token for the same seed.

A judge may ask for llama.cpp's other two cuts (``--top-k``, ``--min-p``; its server's defaults are 40 and 0.05,
the papers use neither). The chain is then llama.cpp's: top-k -> top-p -> min-p -> temp -> dist. The top k are
found by selection (``argpartition``) and sorted; top-p and min-p on them are llama.cpp's own samplers.
"""

from __future__ import annotations

import ctypes

import llama_cpp as lc
import numpy as np

from tui_rater.domain.decoding import Decoding
from tui_rater.judge.engine.native import TOKEN_DATA, Model

SORTED_NUCLEUS = 4096
DRAW_BLOCK = 512
_BINS_PER_NAT, _BINS = 64, 64 * 64  # a histogram of log-probabilities, 1/64 nat wide, down to e^-64 of the top


class GrammarError(ValueError):
    """The GBNF grammar does not parse."""


def nucleus(logits: np.ndarray, top_p: float) -> tuple[np.ndarray, bool]:
    """Token ids of the nucleus (tokens of probability 0, e.g. masked by a grammar, never), and whether sorted.

    Selection, not a sort: a histogram of the tokens' log-probabilities (float32 probabilities, float64 masses)
    finds the bin where the running mass reaches ``top_p``; only that bin's tokens are sorted. O(vocabulary).
    """
    top = float(logits.max())
    if not np.isfinite(top):
        return np.empty(0, np.int64), True
    below = top - logits  # nats below the most probable token (inf: masked)
    p = np.exp(-below)
    if top_p >= 1.0:  # llama.cpp's top-p keeps everything, in token order
        return np.flatnonzero(p > 0), False
    bins = np.minimum(below * _BINS_PER_NAT, _BINS - 1).astype(np.int32)
    running = np.cumsum(np.bincount(bins, weights=p, minlength=_BINS))
    target = top_p * float(running[-1])
    edge = min(int(np.searchsorted(running, target)), _BINS - 1)  # the first bin whose running mass reaches it
    inside = np.flatnonzero(bins == edge)
    inside = inside[np.argsort(-p[inside], kind="stable")]
    above = float(running[edge - 1]) if edge else 0.0
    reached = int(np.searchsorted(above + np.cumsum(p[inside], dtype=np.float64), target))
    cut = p[inside[min(reached, inside.size - 1)]]
    ids = np.flatnonzero(p >= max(cut, np.finfo(np.float32).tiny))
    if ids.size <= SORTED_NUCLEUS:
        return _llama_top_p(logits, p, float(cut), top_p), True
    return ids, False


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


def _apply(sampler: object, logits: np.ndarray, ids: np.ndarray | None = None, ordered: bool = False) -> int:
    """Apply one llama.cpp sampler to candidates (ids, float32 logits); the index it selects."""
    candidates = np.empty(logits.size, TOKEN_DATA)  # "p" is left to the sampler, which computes it
    candidates["id"] = np.arange(logits.size, dtype=np.int32) if ids is None else ids
    candidates["logit"] = logits
    array = lc.llama_token_data_array(
        data=candidates.ctypes.data_as(ctypes.POINTER(lc.llama_token_data)),
        size=logits.size,
        selected=-1,
        sorted=ordered,
    )
    lc.llama_sampler_apply(sampler, ctypes.byref(array))
    return int(array.selected)


def _kept(sampler: object, logits: np.ndarray, ids: np.ndarray) -> np.ndarray:
    """The candidates (ids, in descending order of their logits) a llama.cpp cutting sampler keeps (top-p, min-p
    cut a sorted array to a prefix, in place)."""
    candidates = np.empty(ids.size, TOKEN_DATA)
    candidates["id"] = ids
    candidates["logit"] = logits[ids]
    array = lc.llama_token_data_array(
        data=candidates.ctypes.data_as(ctypes.POINTER(lc.llama_token_data)), size=ids.size, selected=-1, sorted=True
    )
    lc.llama_sampler_apply(sampler, ctypes.byref(array))
    return ids[: int(array.size)]


def top_k(logits: np.ndarray, k: int) -> np.ndarray:
    """The ids of the k highest logits, in descending order (ties: lower id first), by selection then a sort of k."""
    if k >= logits.size:
        ids = np.arange(logits.size)
    else:
        ids = np.argpartition(-logits, k - 1)[:k]
    ids = ids[np.lexsort((ids, -logits[ids]))]
    return ids[logits[ids] > -np.inf]  # never a token a grammar ruled out


class SequenceSampler:
    def __init__(self, model: Model, decoding: Decoding, *, grammar: str | None):
        self.model = model
        self.greedy = decoding.temperature <= 0  # llama.cpp and the APIs: T = 0 is greedy decoding
        self.temperature = np.float32(decoding.temperature)
        self.top_p = decoding.top_p
        self.top_k, self.min_p = decoding.top_k, decoding.min_p
        seed = decoding.seed
        # llama.cpp's own cuts, on the top k (sorted) -- made only for a judge that asks for top-k or min-p
        self.cut_top_p = lc.llama_sampler_init_top_p(self.top_p, 1) if self.top_k > 0 else None
        self.cut_min_p = lc.llama_sampler_init_min_p(self.min_p, 1) if self.min_p > 0 else None
        self.grammar = None
        if grammar is not None:
            self.grammar = lc.llama_sampler_init_grammar(model.vocab, grammar.encode(), b"root")
            if not self.grammar:
                raise GrammarError("the GBNF grammar does not parse")
        # llama.cpp's dist sampler: mt19937 seeded per sequence (LLAMA_DEFAULT_SEED, 2^32 - 1, would mean "random":
        # seeds are taken modulo 2^32 - 1)
        self.dist = None if self.greedy else lc.llama_sampler_init_dist(seed % 0xFFFFFFFF)

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
        """Temperature on the nucleus (llama.cpp's temp sampler: logit / T in float32), then dist's draw."""
        if self.top_k > 0:
            ids, ordered = _kept(self.cut_top_p, logits, top_k(logits, self.top_k)), True
        else:
            ids, ordered = nucleus(logits, self.top_p)
        if self.cut_min_p is not None:
            if ordered:
                ids = _kept(self.cut_min_p, logits, ids)
            else:  # llama.cpp's min-p on unsorted candidates: a filter that keeps their order
                ids = ids[logits[ids] >= logits[ids].max() + np.log(np.float32(self.min_p))]
        scaled = logits[ids] if self.temperature == 1 else logits[ids] / self.temperature
        if ordered or ids.size <= DRAW_BLOCK:
            return int(ids[_apply(self.dist, scaled, ids, ordered)])
        # a large nucleus in two draws of the same dist sampler: a block of DRAW_BLOCK candidates by its mass,
        # then a candidate of that block by its probability -- the same distribution, ~10x less work than one
        # draw over 126k candidates
        starts = np.arange(0, ids.size, DRAW_BLOCK)
        mass = np.add.reduceat(np.exp((scaled - scaled.max()).astype(np.float64)), starts)
        block = _apply(self.dist, np.log(mass).astype(np.float32))
        lo = int(starts[block])
        hi = min(lo + DRAW_BLOCK, ids.size)
        return int(ids[lo + _apply(self.dist, scaled[lo:hi], ids[lo:hi])])

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
        for sampler in (self.dist, self.grammar, self.cut_top_p, self.cut_min_p):
            if sampler:
                lc.llama_sampler_free(sampler)
        self.dist = self.grammar = self.cut_top_p = self.cut_min_p = None

"""Sequences of the KV cache ("slots", as llama.cpp's server calls them) and how a new prompt gets one.

A slot remembers which tokens its sequence holds in its KV stream. A new prompt takes an idle slot and starts from
the longest prefix any sequence already holds: what that sequence holds is copied into the new one's KV stream
(``Context.seq_cp``: the cells, bit for bit) and cut to the prefix. A prompt whose prefix another sequence is
still evaluating waits until it is held (``WAIT``), then copies it. An item's instructions + story are thus
evaluated once for all its questions and samples (Chiang & Lee §3.2: 3 samples of 4 questions per story) -- and
bit for bit as a lone prompt's would be: a row's numbers do not depend on the batch it was computed in
(``native.NUMERICS``).
"""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from tui_rater.domain.decoding import Decoding
from tui_rater.judge.engine.sampling import SequenceSampler


@dataclass
class Request:
    """One prompt: ``probe`` reads the next-token logits after it; otherwise a reply is generated."""

    tokens: np.ndarray  # int32, BOS rule already applied
    probe: bool = False
    decoding: Decoding = field(default_factory=Decoding)  # a reply's; its max_tokens is the reply's length limit
    grammar: str | None = None
    # a reply's Generated, or a probe's next-token logits (float32)
    future: Future[Generated | npt.NDArray[np.float32]] = field(default_factory=Future)


@dataclass(frozen=True)
class Generated:
    tokens: list[int]
    finish_reason: str  # "stop": an end-of-generation token; "length": max_tokens or the context window


class Slot:
    def __init__(self, seq: int, capacity: int):
        self.seq = seq
        self.kv = np.zeros(capacity, np.int32)  # the tokens this sequence holds in the KV cache, by position
        self.n_kv = 0
        self.request: Request | None = None
        self.pos = 0  # next prompt position to put in a batch
        self.runs: list[tuple[int, np.ndarray]] = []  # this step's batch entries: (first position, tokens)
        self.sampler: SequenceSampler | None = None
        self.generated: list[int] = []
        self.next_token = -1  # sampled, not yet in the KV cache
        self.last_used = 0
        self.admitted = 0

    @property
    def idle(self) -> bool:
        return self.request is None

    @property
    def prefilling(self) -> bool:
        return self.request is not None and self.pos < len(self.request.tokens)

    def planned(self) -> np.ndarray:
        """Tokens this sequence holds or will hold once the batches already planned for it are decoded."""
        if self.prefilling:
            assert self.request is not None
            return self.request.tokens
        return self.kv[: self.n_kv]


def common_prefix(a: np.ndarray, b: np.ndarray) -> int:
    n = min(len(a), len(b))
    if n == 0:
        return 0
    differ = np.flatnonzero(a[:n] != b[:n])
    return int(differ[0]) if differ.size else n


@dataclass(frozen=True)
class Placement:
    target: Slot
    keep: int  # positions the target keeps of what it holds
    source: Slot | None = None
    copy_to: int = 0  # positions [0, copy_to) copied from the source's stream


WAIT = "wait"  # another sequence is evaluating a longer prefix of this prompt: place it once that is held
WAIT_FOR = 8  # ... at least this many tokens longer than what can be had now


def place(slots: list[Slot], tokens: np.ndarray) -> Placement | str | None:
    """Where a new prompt goes; None when every slot is busy; ``WAIT`` when its prefix is being evaluated.

    The target is an idle slot whose content the prompt extends (a conversation's next turn, an empty slot), else
    the least recently used idle slot. At least the prompt's last token is always evaluated: its logits are needed.
    """
    idle = [s for s in slots if s.idle]
    if not idle:
        return None
    limit = len(tokens) - 1

    def shared(slot: Slot) -> int:
        return min(common_prefix(slot.planned(), tokens), limit)

    extended = [s for s in idle if shared(s) >= s.n_kv]
    target = max(extended, key=lambda s: s.n_kv) if extended else min(idle, key=lambda s: s.last_used)
    keep = min(shared(target), target.n_kv)
    best = Placement(target, keep)
    coming = 0  # the longest prefix a sequence is still evaluating
    for slot in slots:
        if slot is target:
            continue
        reach = shared(slot)
        held = min(reach, slot.n_kv)  # placing happens between steps: nothing is in flight
        if slot.prefilling:
            coming = max(coming, reach)
        if held > max(keep, best.copy_to):
            best = Placement(target, keep, slot, held)
    if coming >= max(keep, best.copy_to) + WAIT_FOR:
        return WAIT
    return best

"""The batched engine: one model, one context, one thread that decodes every in-flight prompt together.

Callers (the judge's worker threads) submit a request and block until its result is ready. The engine thread runs
llama.cpp's server loop in miniature (``tools/server``, ``examples/parallel``): admit waiting prompts into idle
sequences (continuous batching), put the next token of every generating sequence and chunks of the prompts being
evaluated into one batch, decode it with one ``llama_decode``, then sample each sequence or read its logits.

Batch-invariant: what a sequence computes does not depend on the other sequences in the batch, on how many there
are or on the order they came in (``native.NUMERICS`` says how; tests/judge/test_reproducible.py shows it).
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import numpy.typing as npt

from tui_rater.domain.decoding import Decoding
from tui_rater.judge.backends.base import TokenCounts
from tui_rater.judge.engine.native import (
    Batch,
    Context,
    LoadError,
    Model,
    RowsNotIndependent,
    lower_thread_priority,
    note_in_log,
)
from tui_rater.judge.engine.sampling import SequenceSampler
from tui_rater.judge.engine.slots import Generated, Placement, Request, Slot, place
from tui_rater.judge.errors import JudgeError

_STOP = object()
_CANCEL = object()


def cancelled() -> JudgeError:
    return JudgeError("cancelled", "the run was stopped before this job was answered")


class Engine:
    def __init__(
        self,
        model_path: str,
        *,
        n_ctx: int,
        n_seq: int,
        n_gpu_layers: int = 0,
        n_batch: int = 512,
        n_threads: int | None = None,
        background: bool = False,
        size_for: Callable[[Model], int] | None = None,
    ):
        """``background``: the engine's thread (and the threads llama.cpp computes with, started from it) run at a
        lower priority, for a judge inside the app: the screen's thread comes first (keypress -> screen).
        ``size_for``: the KV cells one sequence needs, measured with the loaded model (``backends.local``); the
        cache holds ``n_seq`` times that, not ``n_seq`` x ``n_ctx`` (default: ``n_ctx``)."""
        self.model = Model(model_path, n_gpu_layers)
        self.n_ctx = n_ctx  # the context window of one sequence (prompt + reply), as --n-ctx always meant
        self.n_seq = n_seq
        self.n_batch = n_batch
        n_threads = n_threads or os.cpu_count() or 1
        try:
            per_seq = n_ctx if size_for is None else max(1, min(n_ctx, size_for(self.model)))
            per_seq = max(per_seq, -(-n_ctx // n_seq))  # one prompt of up to n_ctx tokens always fits, alone
            self.ctx = Context(self.model, n_ctx_seq=per_seq, n_seq=n_seq, n_batch=n_batch, n_threads=n_threads)
        except Exception:
            self.model.close()
            raise
        # each sequence has a KV stream of its own (batch invariance: see native.NUMERICS) of ``per_seq`` cells,
        # sized from the run's longest prompts: a prompt and its reply budget must fit one stream
        self.per_seq = per_seq
        self.n_cells = per_seq * n_seq
        note_in_log(f"tui-rater: KV cache of {n_seq} sequences x {per_seq} tokens (--n-ctx {n_ctx})")
        self.batch = Batch(n_batch, n_seq)
        self._warm_up()
        self._check_rows_independent()
        self.slots = [Slot(i, n_ctx + 1) for i in range(n_seq)]
        self.counts = TokenCounts()  # written by the engine thread only
        # rows decoded a second time for batch invariance (a generated token's predecessor, a prompt piece's first)
        self.repeated = 0
        self.repeated_outputs = 0  # rows of logits computed only so that no ubatch has a single one
        # what idle sequences hold stays for later prompts: each sequence has its own KV stream (its cells cost the
        # others nothing), and a later prompt may continue it or copy its prefix
        self.steps = 0
        self._cancelled = False
        self._inbox: queue.SimpleQueue[object] = queue.SimpleQueue()  # requests, _STOP and _CANCEL
        self._waiting: deque[Request] = deque()
        self._tick = 0
        # sequences are sampled in parallel between decodes (numpy and llama.cpp's samplers release the GIL)
        self._samplers = ThreadPoolExecutor(n_threads, thread_name_prefix="llama-sampler") if n_threads > 1 else None
        self.background = background
        self._thread = threading.Thread(target=self._run, name="llama-engine", daemon=True)
        self._thread.start()

    def _warm_up(self) -> None:
        """One decode before the first prompt (as llama.cpp's tools do): the first real batch is not slowed by
        loading the weights into memory and allocating the compute graph."""
        self.batch.add(np.array([self.model.bos or 0], np.int32), 0, 0, True)
        code = self.ctx.decode(self.batch)
        self.batch.clear()
        self.ctx.clear()
        if code != 0:
            self.close_native()
            raise LoadError(f"llama.cpp could not decode with {self.model.path} (llama_decode returned {code})")

    # the same prompt decoded in one piece and in pieces of other sizes: 8 rows take every product a whole batch
    # takes (ggml's tiled K-quant product from 8 rows, a repacked one 4 at a time), 2 rows the small-batch ones, 6 a
    # mix; 24 rows in all (an 8B model on 2 CPU cores: seconds, so no more)
    CHECK_PIECES: tuple[tuple[int, ...], ...] = ((8,), (2, 2, 2, 2), (6, 2))

    def _check_rows_independent(self) -> None:
        """Refuse a model whose rows llama.cpp computes differently by the batch's row count (``NUMERICS``): its
        readings would depend on ``--workers`` and on which prompts share a batch. The rules in ``NUMERICS`` were
        measured on some models, kernels and CPUs; this checks the one loaded, on this CPU, in a few ms. It also
        catches a process where llama.cpp computed a K-quant product before ``GGML_CPU_TILED_MM`` was set."""
        if self.per_seq < 8:  # a stream too small for the check holds no real prompt either (tests' tiny windows)
            return
        text = "The quick brown fox jumps over the lazy dog, then rates the story from 1 to 5."
        tokens = np.resize(np.asarray(self.model.tokenize(text, special=False) or [0], np.int32), 8)
        rows: list[np.ndarray] = []
        for pieces in self.CHECK_PIECES:
            self.ctx.clear()
            pos = 0
            for size in pieces:
                self.batch.clear()
                self.batch.add(tokens[pos : pos + size], pos, 0, pos + size == len(tokens))
                self.batch.pair_lone_outputs(streams=self.n_seq > 1)
                code = self.ctx.decode(self.batch)
                if code != 0:
                    self.batch.clear()
                    self.close_native()
                    raise LoadError(f"llama.cpp could not decode with {self.model.path} (llama_decode returned {code})")
                pos += size
            rows.append(np.array(self.ctx.logits(self.batch.n - 1), dtype=np.float32))
        self.batch.clear()
        self.ctx.clear()
        for pieces, row in zip(self.CHECK_PIECES[1:], rows[1:]):
            if not np.array_equal(row, rows[0]):
                gap = float(np.max(np.abs(row.astype(np.float64) - rows[0])))
                self.close_native()
                raise RowsNotIndependent(
                    f"llama.cpp computes {self.model.path}'s rows differently by batch size on this CPU (one prompt "
                    f"in 8 rows and in pieces of {'+'.join(map(str, pieces))}: logits up to {gap:.3g} apart), so "
                    "its readings would depend on --workers and which prompts share a batch; it is refused"
                )

    def close_native(self) -> None:
        self.ctx.close()
        self.model.close()

    # --- the callers' side (any thread) ---------------------------------------------------

    def generate(self, tokens: list[int], decoding: Decoding, *, grammar: str | None) -> Generated:
        checked = self._checked(tokens, min(decoding.max_tokens, self.n_ctx - len(tokens)))
        generated = self._submit(Request(checked, decoding=decoding, grammar=grammar))
        assert isinstance(generated, Generated)  # a reply's request is answered with what it generated
        return generated

    def probe(self, tokens: list[int]) -> npt.NDArray[np.float32]:
        """The next-token logits after the prompt (a float32 copy)."""
        logits = self._submit(Request(self._checked(tokens), probe=True))
        assert isinstance(logits, np.ndarray)  # a probe is answered with its logits
        return logits

    def _checked(self, tokens: list[int], reply: int = 1) -> npt.NDArray[np.int32]:
        if not tokens:
            raise JudgeError("bad_request", "the prompt is empty")
        if len(tokens) >= self.n_ctx:
            raise JudgeError(
                "context_overflow",
                f"the prompt is {len(tokens)} tokens, the context window {self.n_ctx} "
                f"(raise --n-ctx; items are never cut silently)",
            )
        if len(tokens) + reply > self.per_seq:
            raise JudgeError(
                "context_overflow",
                f"the prompt is {len(tokens)} tokens; with its reply budget ({reply}) more than the {self.per_seq} "
                "each sequence's cache holds, sized from this run's longest prompts (run it again with --workers 1: "
                "one sequence gets the whole --n-ctx)",
            )
        return np.asarray(tokens, dtype=np.int32)

    def _submit(self, request: Request) -> Generated | npt.NDArray[np.float32]:
        if self._cancelled:
            raise cancelled()
        if not self._thread.is_alive():
            raise JudgeError("internal", "the llama.cpp engine has stopped")
        self._inbox.put(request)
        return request.future.result()

    def cancel(self) -> None:
        """Stop now (Ctrl-C, quitting the app), from any thread: the decode in progress ends at its next graph node,
        and every request in flight, waiting or still to come fails as ``cancelled`` (the worker gives its job
        back). For good: a cancelled engine is only closed."""
        self._cancelled = True
        self.ctx.abort()
        self._inbox.put(_CANCEL)

    def close(self) -> None:
        if self._thread.is_alive():
            self._inbox.put(_STOP)
            self._thread.join()
        for slot in self.slots:
            if slot.sampler is not None:
                slot.sampler.close()
        if self._samplers is not None:
            self._samplers.shutdown()
        self.close_native()

    # --- the engine thread --------------------------------------------------------------------

    def _run(self) -> None:
        if self.background:
            lower_thread_priority()  # before this thread's first decode starts llama.cpp's threads
        while True:
            busy = bool(self._waiting) or any(not s.idle for s in self.slots)
            try:
                item = self._inbox.get(block=not busy)
            except queue.Empty:
                item = None
            stop = False
            while item is not None:
                if item is _STOP:
                    stop = True
                elif isinstance(item, Request):  # not _CANCEL
                    self._waiting.append(item)
                try:
                    item = self._inbox.get_nowait()
                except queue.Empty:
                    item = None
            if stop:
                self._fail_all(JudgeError("internal", "the llama.cpp engine was closed"))
                return
            if self._cancelled:  # between two decode steps: nothing more is decoded
                self._fail_all(cancelled())
                continue
            try:
                self._admit()
                if any(not s.idle for s in self.slots):
                    self._step()
            except Exception as exc:  # a bug must fail the requests in flight, visibly, not hang their callers
                if self._cancelled:  # the decode was aborted (llama_decode returned 2)
                    self._fail_all(cancelled())
                else:
                    self._fail_all(JudgeError("internal", f"llama.cpp engine: {type(exc).__name__}: {exc}"))

    @staticmethod
    def _cells(request: Request) -> int:
        """The most KV cells a request may fill: its prompt and its whole reply budget."""
        return len(request.tokens) + (1 if request.probe else request.decoding.max_tokens)

    def _admit(self) -> None:
        kept: deque[Request] = deque()  # prompts waiting for a prefix another sequence is evaluating
        while self._waiting:
            request = self._waiting[0]
            in_flight = sum(self._cells(s.request) for s in self.slots if s.request is not None)
            if in_flight and in_flight + self._cells(request) > self.n_cells:
                return  # it waits until sequences in flight end and leave room
            placement = place(self.slots, request.tokens)
            if placement is None:
                break
            self._waiting.popleft()
            if not isinstance(placement, Placement):  # WAIT
                kept.append(request)
                continue
            try:
                sampler = None
                if not request.probe:
                    sampler = SequenceSampler(self.model, request.decoding, grammar=request.grammar)
            except ValueError as exc:
                request.future.set_exception(JudgeError("bad_request", str(exc)))
                continue
            self._start(placement, request, sampler)
        self._waiting.extendleft(reversed(kept))  # in their order, before the prompts not yet looked at

    def _start(self, placement: Placement, request: Request, sampler: SequenceSampler | None) -> None:
        slot, ctx = placement.target, self.ctx
        if placement.source is not None and placement.copy_to > placement.keep:
            # what the source holds, copied cell for cell, then cut to the shared prefix
            ctx.seq_cp(placement.source.seq, slot.seq)
            slot.kv[: placement.copy_to] = request.tokens[: placement.copy_to]
            slot.n_kv = placement.source.n_kv
            keep = placement.copy_to
        else:
            keep = placement.keep
        # always, even when nothing is freed: the stream's next cells are then found right after the prefix
        ctx.seq_rm(slot.seq, keep, -1)
        slot.n_kv = keep
        self.counts.cached += slot.n_kv
        slot.request, slot.sampler, slot.pos = request, sampler, slot.n_kv
        slot.generated, slot.next_token = [], -1
        self._tick += 1
        slot.admitted = self._tick

    # --- one step: one batch, one decode -------------------------------------------------------

    def _step(self) -> None:
        batch = self.batch
        batch.clear()
        outputs: list[tuple[int, Slot]] = []
        active = sorted((s for s in self.slots if not s.idle), key=lambda s: s.admitted)
        for slot in active:
            slot.runs = []
            if not slot.prefilling:  # generating: its last sampled token, after the token before it (two rows)
                pos0 = slot.n_kv - 1
                tokens = np.array([slot.kv[pos0], slot.next_token], np.int32)
                self.ctx.seq_rm(slot.seq, pos0, -1)
                index = batch.add(tokens, pos0, slot.seq, True)
                slot.runs.append((pos0, tokens))
                outputs.append((index + 1, slot))
                self.repeated += 1
        for slot in active:
            if slot.prefilling and not self._schedule_prompt(slot, outputs):
                break  # a one-token prompt: alone in its batch
        if batch.n == 0:
            return
        self.repeated_outputs += batch.pair_lone_outputs(streams=self.n_seq > 1)
        self._decode()
        for slot in active:
            self._advance(slot)
        self._outputs(outputs)
        self.steps += 1

    def _schedule_prompt(self, slot: Slot, outputs: list[tuple[int, Slot]]) -> bool:
        """The prompt's next piece: an even number of rows (``native.NUMERICS``), the last computing logits.
        False when nothing more may join this batch."""
        request, batch = slot.request, self.batch
        assert request is not None
        room = self.batch.capacity - batch.n
        start, end = slot.pos, min(len(request.tokens), slot.pos + room)
        if end <= start:
            return True
        if (end - start) % 2:
            if start > 0 and end - start < room:
                start -= 1  # one token early: the row before is decoded again, to the same bits
            elif end - start > 1:
                end -= 1  # the next piece starts one token early instead
            elif len(request.tokens) > 1 or batch.n > 0:
                return True  # no room for two rows in this batch; a one-token prompt is decoded in a batch of its own
        tokens = request.tokens[start:end]
        self.ctx.seq_rm(slot.seq, start, -1)
        last = end == len(request.tokens)
        first = batch.add(tokens, start, slot.seq, last)
        slot.runs.append((start, tokens))
        self.counts.evaluated += end - slot.pos
        self.repeated += slot.pos - start
        slot.pos = end
        if last:
            outputs.append((first + len(tokens) - 1, slot))
        return len(tokens) > 1

    def _decode(self) -> None:
        code = self.ctx.decode(self.batch)
        if code == 1:  # no room in the KV cache: drop what idle sequences keep for later prompts, once
            for slot in self.slots:
                if slot.idle and slot.n_kv:
                    self.ctx.seq_rm(slot.seq, 0, -1)
                    slot.n_kv = 0
            code = self.ctx.decode(self.batch)
        if code != 0:
            raise RuntimeError(f"llama_decode returned {code}")

    def _advance(self, slot: Slot) -> None:
        """After a decode: the sequence holds what was put in the batch for it."""
        for pos0, tokens in slot.runs:
            slot.kv[pos0 : pos0 + len(tokens)] = tokens
            slot.n_kv = pos0 + len(tokens)
        slot.runs = []

    def _outputs(self, outputs: list[tuple[int, Slot]]) -> None:
        # logits views first, on this thread: llama_get_logits_ith may reorder the outputs on its first call
        rows = [(slot, self.ctx.logits(index)) for index, slot in outputs]
        drawing: list[tuple[Slot, SequenceSampler, np.ndarray]] = []
        for slot, logits in rows:
            assert slot.request is not None
            if slot.request.probe:
                self._finish(slot, np.array(logits, dtype=np.float32))
            else:
                assert slot.sampler is not None  # a reply's slot got its sampler when it started
                drawing.append((slot, slot.sampler, logits))
        if self._samplers is not None and len(drawing) > 1:
            tokens = list(self._samplers.map(lambda row: row[1].sample(row[2]), drawing))
        else:
            tokens = [sampler.sample(logits) for _, sampler, logits in drawing]
        for (slot, _, _), token in zip(drawing, tokens):
            self._generated(slot, token)

    def _generated(self, slot: Slot, token: int) -> None:
        request = slot.request
        assert request is not None
        if self.model.is_eog(token):
            self._finish(slot, Generated(slot.generated, "stop"))
            return
        slot.generated.append(token)
        self.counts.generated += 1
        limit = request.decoding.max_tokens
        if len(slot.generated) >= limit or len(request.tokens) + len(slot.generated) >= self.n_ctx:
            self._finish(slot, Generated(slot.generated, "length"))
            return
        slot.next_token = token

    def _finish(self, slot: Slot, result: Generated | npt.NDArray[np.float32]) -> None:
        request = slot.request
        assert request is not None
        if slot.sampler is not None:
            slot.sampler.close()
        slot.request, slot.sampler = None, None
        self._tick += 1
        slot.last_used = self._tick
        request.future.set_result(result)

    def _fail_all(self, error: JudgeError) -> None:
        """Fail every request in flight or waiting, and start again from an empty KV cache."""
        for slot in self.slots:
            if slot.request is not None:
                if slot.sampler is not None:
                    slot.sampler.close()
                if not slot.request.future.done():
                    slot.request.future.set_exception(error)
            slot.request, slot.sampler, slot.n_kv, slot.runs = None, None, 0, []
        while self._waiting:
            self._waiting.popleft().future.set_exception(error)
        self.ctx.clear()

"""llama.cpp's low-level API, as much as the engine needs: a model, one context holding many sequences, a batch.

Everything here is a thin, typed wrapper over ``llama_cpp`` (llama-cpp-python's ctypes bindings). ctypes releases
the GIL during every call, so a decode on the engine thread does not stop the worker threads. The calls that take
microseconds (the KV cache's bookkeeping, a logits pointer) keep the GIL instead (``_holding_the_gil``): released,
each one has to win the GIL back from 16 busy worker threads, which made the engine's own work between two decodes
take 3x its CPU time and left llama.cpp idle meanwhile.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, TextIO, TypeVar, cast

import llama_cpp as lc
import numpy as np

if TYPE_CHECKING:
    import _ctypes

# llama_token_data {int32 id; float logit; float p} as a numpy record: candidate arrays built without a Python loop
TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])
assert TOKEN_DATA.itemsize == ctypes.sizeof(lc.llama_token_data)


_F = TypeVar("_F", bound=Callable[..., Any])


def _holding_the_gil(function: _F) -> _F:
    """The same C function of the same library, called without releasing the GIL (``ctypes.PyDLL``)."""
    try:
        held = getattr(ctypes.PyDLL(lc.llama_cpp._lib._name), function.__name__)
    except (AttributeError, OSError):  # another build of the bindings: the releasing call still works
        return function
    # llama_cpp's stubs type its functions by their Python signature; at run time each is the ctypes function
    c_function = cast("_ctypes.CFuncPtr", function)
    held.argtypes, held.restype = c_function.argtypes, c_function.restype
    return cast(_F, held)


_seq_rm = _holding_the_gil(lc.llama_memory_seq_rm)
_logits_ith = _holding_the_gil(lc.llama_get_logits_ith)


def _strlen() -> int | None:
    """C's ``strlen``, as llama.cpp's abort callback (``bool (*)(void *)``): it reads a flag without Python, so
    the check llama.cpp makes at every node of a graph costs nanoseconds and never waits for the GIL (a Python
    callback would take the GIL hundreds of times a decode, from a thread busy worker threads compete with)."""
    try:
        libc = ctypes.CDLL(None) if sys.platform != "win32" else ctypes.cdll.msvcrt
        return ctypes.cast(libc.strlen, ctypes.c_void_p).value
    except (AttributeError, OSError):
        return None


_STRLEN = _strlen()


class LoadError(Exception):
    """llama.cpp could not load the model or create its context."""


class RowsNotIndependent(LoadError):
    """llama.cpp computes this model's rows differently by batch size here: its readings would depend on
    ``--workers``, so it is refused (the sentence says why)."""


_STDERR_LOCK = threading.Lock()  # one redirection at a time: interleaved ones would restore the wrong fd


@contextlib.contextmanager
def quiet_stderr() -> Iterator[None]:
    """llama.cpp prints its load log on fd 2 (C's stderr) even when its log callback is quiet. fd 2 itself, not
    ``sys.stderr.fileno()``: inside the app Textual replaces ``sys.stderr`` with an object whose fileno() is -1
    (``annotate --judge MODEL`` failed on it), and there the log would draw over the screen."""
    with _STDERR_LOCK:
        try:
            saved = os.dup(2)
        except OSError:  # no fd 2 (a daemon): nothing to quiet
            yield
            return
        try:
            null = os.open(os.devnull, os.O_WRONLY)
            os.dup2(null, 2)
            os.close(null)
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


def lower_thread_priority(by: int = 10) -> None:
    """Nice the calling thread by ``by`` (Linux, where niceness is per thread). The threads llama.cpp computes
    with (OpenMP's pool, ggml's) are started by the thread that decodes and inherit its niceness: a judge in the
    app then takes only the CPU time the screen leaves. Elsewhere (macOS: a thread id is not a process id for
    setpriority) it does nothing."""
    if sys.platform != "linux":
        return
    tid = threading.get_native_id()
    with contextlib.suppress(OSError):
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + by))


_LOG_LOCK = threading.Lock()
LOG_MAX_BYTES = 8 << 20


class _Log:
    """Where llama.cpp's log goes: the open file, and the ctypes callback llama.cpp holds (kept alive here)."""

    path: Path | None = None
    file: TextIO | None = None
    callback: object = None


_LOG = _Log()


def log_to(path: Path) -> None:
    """Send llama.cpp's own log, every level, to ``path`` (appended), never to the terminal: its lines ("possible
    training context overflow", "removing memory module entries ...") landed on every run, and inside the app over
    the screen. Where the file cannot be written, the log is dropped."""
    import llama_cpp._logger  # noqa: F401 - it installs its own callback on import: ours must come after it

    with _LOG_LOCK:
        if _LOG.path == path:
            return
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            if path.exists() and path.stat().st_size > LOG_MAX_BYTES:  # one older generation is kept
                path.replace(path.with_name(path.name + ".1"))
            out = open(path, "a", encoding="utf-8", errors="replace", buffering=1)
        except OSError:
            out = None
        written = threading.Lock()

        def write(level: int, text: bytes, _user_data: int | None) -> None:
            if out is not None and text:
                with written, contextlib.suppress(Exception):
                    out.write(text.decode("utf-8", "replace"))

        callback = lc.llama_log_callback(write)
        lc.llama_log_set(callback, ctypes.c_void_p(0))
        old = _LOG.file
        _LOG.path, _LOG.file, _LOG.callback = path, out, callback
        if old is not None:
            with contextlib.suppress(Exception):
                old.close()


def note_in_log(line: str) -> None:
    """A line of ours in llama.cpp's log (which model a run loaded, and when)."""
    out = _LOG.file
    if out is not None:
        with contextlib.suppress(Exception):
            out.write(line.rstrip("\n") + "\n")


def _quiet_logs() -> None:
    from tui_rater.judge.paths import llama_log_path

    log_to(llama_log_path())


class Model:
    """A loaded GGUF and its vocabulary. Tokenizing and reading pieces are safe from any thread."""

    def __init__(self, path: str, n_gpu_layers: int = 0):
        _quiet_logs()
        lc.llama_backend_init()
        params = lc.llama_model_default_params()
        params.n_gpu_layers = 999 if n_gpu_layers < 0 else n_gpu_layers  # -1: every layer
        # the weights as the file stores them, never in a CPU "extra buffer type" (``NUMERICS``): the repacked
        # layouts' products give a row other bits by the batch's row count, and AMX's segfaulted on quantised
        # models (Q4_0, Q4_1, Q8_0, Q4_K_M; llama-cpp-python 0.3.36, Sapphire Rapids)
        params.use_extra_bufts = False
        note_in_log(f"--- {time.strftime('%Y-%m-%d %H:%M:%S')} tui-rater (pid {os.getpid()}): loading {path}")
        with quiet_stderr():
            ptr = lc.llama_model_load_from_file(path.encode(), params)
        if not ptr:
            raise LoadError(f"llama.cpp could not load {path} (its log: {_LOG.path})")
        self.ptr = ptr
        self.path = path
        self.numerics = model_numerics(path)  # what this model is computed with (its tensors' types decide)
        self.vocab = lc.llama_model_get_vocab(ptr)
        self.n_vocab = int(lc.llama_vocab_n_tokens(self.vocab))
        self.n_ctx_train = int(lc.llama_model_n_ctx_train(ptr))
        bos = int(lc.llama_vocab_bos(self.vocab))
        self.bos: int | None = None if bos == lc.LLAMA_TOKEN_NULL else bos
        eos = int(lc.llama_vocab_eos(self.vocab))
        self.eos: int | None = None if eos == lc.LLAMA_TOKEN_NULL else eos
        self.add_bos = bool(lc.llama_vocab_get_add_bos(self.vocab))
        self._pieces: dict[tuple[int, bool], bytes] = {}

    def meta(self, key: str) -> str | None:
        size = 1 << 16
        while True:
            buf = ctypes.create_string_buffer(size)
            n = lc.llama_model_meta_val_str(self.ptr, key.encode(), buf, size)
            if n < 0:
                return None
            if n < size:
                return buf.value.decode("utf-8", "replace")
            size = n + 1

    def tokenize(self, text: str, *, special: bool) -> list[int]:
        """The text's tokens, never with an added BOS (the caller applies the BOS rule)."""
        data = text.encode("utf-8")
        size = len(data) + 8
        while True:
            buf = (lc.llama_token * size)()
            n = lc.llama_tokenize(self.vocab, data, len(data), buf, size, False, special)
            if n >= 0:
                return list(buf[:n])
            size = -n

    def piece(self, token: int, *, special: bool = False) -> bytes:
        key = (token, special)
        found = self._pieces.get(key)
        if found is None:
            size = 64
            while True:
                buf = ctypes.create_string_buffer(size)
                n = lc.llama_token_to_piece(self.vocab, token, buf, size, 0, special)
                if n >= 0:
                    found = buf.raw[:n]
                    break
                size = -n
            self._pieces[key] = found
        return found

    def detokenize(self, tokens: list[int]) -> str:
        """What llama-cpp-python's completion returns: the pieces joined, invalid UTF-8 dropped."""
        return b"".join(self.piece(t) for t in tokens).decode("utf-8", "ignore")

    def is_eog(self, token: int) -> bool:
        return bool(lc.llama_vocab_is_eog(self.vocab, token))

    def close(self) -> None:
        if self.ptr:
            lc.llama_model_free(self.ptr)
            self.ptr = None


# What the engine computes with, as far as it changes the numbers a judge stores (recorded in its provenance,
# ``judge.spec.provenance``). Measured on llama.cpp's CPU backend (tests/judge/test_reproducible.py,
# bench/judge_repro.py): every matrix product gives each row the same bits whatever the other rows are, except
# that a product of ONE row takes another kernel (ggml's vec_dot instead of llamafile's sgemm: 1e-7 apart). So:
# - each sequence has its own KV stream (``kv_unified`` off): its cells are positions 0..n-1 of its own buffer,
#   and its attention sums run over them in the same lanes whoever else is in the cache;
# - no flash attention: llama.cpp's CPU kernel picks a tiled path by the batch's row count and splits the KV by
#   thread for a single-row batch, and so moved a reading by up to 1e-3 with the batch's make-up;
# - every piece of a sequence put in a batch is an even number (>= 2) of rows, and outputs come in pairs: a
#   generated token is decoded with the one before it (re-evaluated: the same bits), a prompt piece of odd length
#   starts one token early. llama.cpp splits a batch of several streams into ubatches of equal rows per sequence,
#   cut at differences of the pieces' lengths: even lengths never leave a one-row product;
# - ``n_batch`` = ``n_ubatch``: the engine's batch is never cut elsewhere;
# - K-quant and IQ weights (Q4_K_M's Q4_K and Q6_K, ...) go through ggml's reference product (``vec_dot``), whatever
#   the row count: its "tiled" product takes a batch of 8 rows or more and gives them other bits (Gemma 3 270M
#   Q4_K_M: logits up to 5 apart, 13.7 % of a distribution's mass; issue 30), so ``GGML_CPU_TILED_MM`` is 0;
# - the weights stay in the layout the file stores (no "extra buffer types"): x86's repacked Q4_0 / Q4_K / Q2_K /
#   IQ4_NL / MXFP4 products take rows 4 at a time and the rest one at a time, with other bits.
# Thread count, ubatch size and the order of sequences in a batch do not change a bit (measured). The engine checks
# it on every model it loads (``Engine._check_rows_independent``) and refuses one whose rows still depend on it.
NUMERICS = {
    "flash_attn": False,
    "kv_unified": False,
    "type_k": "f16",
    "type_v": "f16",
    "rows_per_piece": "even",
}
# Before any product is computed in this process: ggml reads it once (its first K-quant product)
os.environ["GGML_CPU_TILED_MM"] = "0"

# ggml types whose CPU product the last two rules change (a tiled kernel, or a repacked layout on x86 or ARM):
# Q4_0, Q2_K..Q6_K, IQ2_XXS, IQ2_XS, IQ3_XXS, IQ1_S, IQ4_NL, IQ3_S, IQ2_S, IQ4_XS, IQ1_M, MXFP4, Q1_0.
# A model with none of them (F16, BF16, Q4_1, Q5_0, Q8_0 on x86: SmolLM2's Q4_1) computes as it always did here.
LAYOUT_SENSITIVE_TYPES = frozenset({2, 10, 11, 12, 13, 14, 16, 17, 18, 19, 20, 21, 22, 23, 29, 39, 41})
# what such a model is computed with, recorded beside ``NUMERICS``: its readings before issue 30 came from other
# kernels (repacked and tiled products by batch size), so its judge is another judge
LAYOUT_NUMERICS = {"weights": "as stored (no repack)", "quant_matmul": "vec_dot (no tiled)"}


def model_numerics(path: str) -> dict[str, object]:
    """``NUMERICS``, plus ``LAYOUT_NUMERICS`` for a model with a tensor of a layout-sensitive type (a file whose
    header does not read: ``NUMERICS`` alone; llama.cpp refuses to load it anyway)."""
    from tui_rater.judge.gguf_header import BadHeader, read_gguf_header

    numerics: dict[str, object] = dict(NUMERICS)
    try:
        types = read_gguf_header(path).tensor_types
    except (BadHeader, OSError):
        return numerics
    if types & LAYOUT_SENSITIVE_TYPES:
        numerics.update(LAYOUT_NUMERICS)
    return numerics


class Context:
    """One llama.cpp context: ``n_seq`` sequences of up to ``n_ctx_seq`` tokens, each in its own KV stream."""

    def __init__(self, model: Model, *, n_ctx_seq: int, n_seq: int, n_batch: int, n_threads: int):
        params = lc.llama_context_default_params()
        params.n_ctx = n_ctx_seq * n_seq
        params.n_batch = params.n_ubatch = n_batch
        params.n_seq_max = n_seq
        params.kv_unified = NUMERICS["kv_unified"]
        params.n_threads = params.n_threads_batch = n_threads
        params.flash_attn_type = lc.LLAMA_FLASH_ATTN_TYPE_DISABLED
        params.type_k = params.type_v = lc.GGML_TYPE_F16  # llama.cpp's default, said explicitly
        params.no_perf = True
        with quiet_stderr():
            ptr = lc.llama_init_from_model(model.ptr, params)
        if not ptr:
            raise LoadError(
                f"llama.cpp could not create a context of {n_seq} sequences x {n_ctx_seq} tokens "
                f"(lower --workers or --n-ctx; its log: {_LOG.path})"
            )
        self.ptr = ptr
        self.memory = lc.llama_get_memory(ptr)
        self.n_vocab = model.n_vocab
        self.numerics = dict(model.numerics)  # what this context was created with
        # the abort flag: an empty C string; abort() writes one character, and the decode in progress stops at its
        # next graph node (llama_decode returns 2) instead of running its whole batch (Ctrl-C answered in ms)
        self._abort_flag = ctypes.create_string_buffer(2)
        self._abort_callback = None
        if _STRLEN is not None:
            self._abort_callback = lc.ggml_abort_callback(_STRLEN)
            lc.llama_set_abort_callback(ptr, self._abort_callback, ctypes.cast(self._abort_flag, ctypes.c_void_p))

    def abort(self) -> None:
        """Stop the decode in progress (any thread); every later decode returns at once too."""
        self._abort_flag.value = b"x"

    def decode(self, batch: Batch) -> int:
        batch.struct.n_tokens = batch.n
        return int(lc.llama_decode(self.ptr, batch.struct))

    def logits(self, index: int) -> np.ndarray:
        """A view (no copy) of the logits of batch entry ``index``; valid until the next decode."""
        ptr = _logits_ith(self.ptr, index)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))

    def seq_rm(self, seq: int, p0: int = 0, p1: int = -1) -> None:
        _seq_rm(self.memory, seq, p0, p1)

    def seq_cp(self, src: int, dst: int) -> None:
        """Make ``dst`` hold what ``src`` holds, cell for cell: the same bits at the same cells (0..n-1).

        Through the sequence state API (what ``src`` holds, serialised, then restored into ``dst``), not
        ``llama_memory_seq_cp``: between KV streams that copies whole streams, ``n_ctx`` cells of every layer
        whatever is held (a 1B model at 8,192 tokens: ~0.5 GB a copy)."""
        size = lc.llama_state_seq_get_size(self.ptr, src)
        buffer = (ctypes.c_uint8 * size)()
        written = lc.llama_state_seq_get_data(self.ptr, buffer, size, src)
        self.seq_rm(dst, 0, -1)  # the stream's next cells are then 0, 1, ...
        if not written or lc.llama_state_seq_set_data(self.ptr, buffer, written, dst) != written:
            raise RuntimeError(f"llama.cpp could not copy sequence {src} to {dst}")

    def clear(self) -> None:
        lc.llama_memory_clear(self.memory, True)

    def close(self) -> None:
        if self.ptr:
            lc.llama_free(self.ptr)
            self.ptr = None


class Batch:
    """A ``llama_batch`` whose arrays are numpy buffers, filled with vector operations.

    Every entry belongs to one sequence (llama.cpp's per-sequence KV streams take no shared entries).
    """

    def __init__(self, capacity: int, n_seq: int):
        self.capacity = capacity
        self.token = np.zeros(capacity, np.int32)
        self.pos = np.zeros(capacity, np.int32)
        self.n_seq_id = np.zeros(capacity, np.int32)
        self.seq_id = np.zeros((capacity, n_seq), np.int32)
        self.output = np.zeros(capacity, np.int8)
        int_p = ctypes.POINTER(ctypes.c_int32)
        base = self.seq_id.ctypes.data
        self._rows = (int_p * capacity)(*[ctypes.cast(base + i * n_seq * 4, int_p) for i in range(capacity)])
        self.struct = lc.llama_batch(
            n_tokens=0,
            token=self.token.ctypes.data_as(int_p),
            embd=None,
            pos=self.pos.ctypes.data_as(int_p),
            n_seq_id=self.n_seq_id.ctypes.data_as(int_p),
            seq_id=self._rows,
            logits=self.output.ctypes.data_as(ctypes.POINTER(ctypes.c_int8)),
        )
        self.n = 0

    def clear(self) -> None:
        self.n = 0

    def add(self, tokens: np.ndarray, pos0: int, seq: int, output_last: bool) -> int:
        """Append consecutive tokens of one sequence; return the index of the first entry."""
        start, k = self.n, len(tokens)
        end = start + k
        self.token[start:end] = tokens
        self.pos[start:end] = np.arange(pos0, pos0 + k, dtype=np.int32)
        self.n_seq_id[start:end] = 1
        self.seq_id[start:end, 0] = seq
        self.output[start:end] = 0
        if output_last and k:
            self.output[end - 1] = 1
        self.n = end
        return start

    def pair_lone_outputs(self, *, streams: bool) -> int:
        """Give every ubatch that would compute ONE row of logits a second one (the row before it); return how
        many were added. A one-row product takes another kernel than a product of several rows: the row of
        logits would then depend on which other sequences' outputs share its ubatch (``NUMERICS``).

        The ubatches are llama.cpp's own split of this batch, followed step by step (``llama_batch_allocr::
        split_equal`` with per-sequence streams, ``split_simple`` with one): each ubatch takes a run of
        consecutive sequence ids, in the batch's order, and the same number of rows from each -- the fewest any
        of them has left (``n_ubatch`` = ``n_batch``: never fewer). Pieces are one per sequence, contiguous,
        and of even length, so the row before an output is in the output's ubatch.
        """
        n = self.n
        if not streams:  # one stream: the batch is one ubatch
            outputs = np.flatnonzero(self.output[:n])
            if outputs.size == 1 and outputs[0] > 0:
                self.output[outputs[0] - 1] = 1
                return 1
            return 0
        seqs = self.seq_id[:n, 0]
        starts = np.flatnonzero(np.r_[True, seqs[1:] != seqs[:-1]])
        pieces = [[int(seqs[a]), int(a), int(b - a)] for a, b in zip(starts, np.r_[starts[1:], n])]  # seq, next, left
        added = 0
        while True:
            run: list[list[int]] = []
            for piece in pieces:
                if piece[2] and (not run or piece[0] == run[-1][0] + 1):
                    run.append(piece)
            if not run:
                return added
            k = min(piece[2] for piece in run)
            rows = np.concatenate([np.arange(piece[1], piece[1] + k) for piece in run])
            outputs = rows[self.output[rows] == 1]
            if outputs.size == 1:
                self.output[outputs[0] - 1] = 1
                added += 1
            for piece in run:
                piece[1] += k
                piece[2] -= k

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
from collections.abc import Iterator

import llama_cpp as lc
import numpy as np

# llama_token_data {int32 id; float logit; float p} as a numpy record: candidate arrays built without a Python loop
TOKEN_DATA = np.dtype([("id", np.int32), ("logit", np.float32), ("p", np.float32)])
assert TOKEN_DATA.itemsize == ctypes.sizeof(lc.llama_token_data)


def _holding_the_gil(function):
    """The same C function of the same library, called without releasing the GIL (``ctypes.PyDLL``)."""
    try:
        held = getattr(ctypes.PyDLL(lc.llama_cpp._lib._name), function.__name__)
    except (AttributeError, OSError):  # another build of the bindings: the releasing call still works
        return function
    held.argtypes, held.restype = function.argtypes, function.restype
    return held


_seq_rm = _holding_the_gil(lc.llama_memory_seq_rm)
_seq_cp = _holding_the_gil(lc.llama_memory_seq_cp)
_logits_ith = _holding_the_gil(lc.llama_get_logits_ith)


class LoadError(Exception):
    """llama.cpp could not load the model or create its context."""


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


def _quiet_logs() -> None:
    from llama_cpp._logger import set_verbose

    set_verbose(False)  # llama.cpp's log callback: errors only


class Model:
    """A loaded GGUF and its vocabulary. Tokenizing and reading pieces are safe from any thread."""

    def __init__(self, path: str, n_gpu_layers: int = 0):
        _quiet_logs()
        lc.llama_backend_init()
        params = lc.llama_model_default_params()
        params.n_gpu_layers = 999 if n_gpu_layers < 0 else n_gpu_layers  # -1: every layer
        if os.environ.get("TUI_RATER_NO_REPACK"):  # llama.cpp's repacked CPU kernels crash some CPUs (AMX) on Q4_K
            params.use_extra_bufts = False
        with quiet_stderr():
            ptr = lc.llama_model_load_from_file(path.encode(), params)
        if not ptr:
            raise LoadError(f"llama.cpp could not load {path}")
        self.ptr = ptr
        self.path = path
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


class Context:
    """One llama.cpp context: a unified KV cache shared by ``n_seq`` sequences of up to ``n_ctx_seq`` tokens each."""

    def __init__(self, model: Model, *, n_ctx_seq: int, n_seq: int, n_batch: int, n_threads: int):
        params = lc.llama_context_default_params()
        # N sequences of n_ctx_seq tokens always fit, whatever they share (the sharing only leaves cells free)
        params.n_ctx = n_ctx_seq * n_seq
        params.n_batch = n_batch
        params.n_ubatch = min(512, n_batch)
        params.n_seq_max = n_seq
        params.kv_unified = True  # one cell pool: a copied prefix is shared cells, not copied data
        params.n_threads = params.n_threads_batch = n_threads
        # flash attention where llama.cpp supports it (its default; llama-cpp-python's is off): in a unified cache
        # each sequence attends past the other sequences' cells, which flash attention skips cheaply -- 2-6x faster
        # prompt evaluation on a CPU; the logits move by ~1e-4 (bench/README.md)
        params.flash_attn_type = lc.LLAMA_FLASH_ATTN_TYPE_AUTO
        params.no_perf = True
        with quiet_stderr():
            ptr = lc.llama_init_from_model(model.ptr, params)
        if not ptr:
            raise LoadError(
                f"llama.cpp could not create a context of {n_seq} sequences x {n_ctx_seq} tokens "
                "(lower --workers or --n-ctx)"
            )
        self.ptr = ptr
        self.memory = lc.llama_get_memory(ptr)
        self.n_vocab = model.n_vocab

    def decode(self, batch: Batch) -> int:
        batch.struct.n_tokens = batch.n
        return int(lc.llama_decode(self.ptr, batch.struct))

    def logits(self, index: int) -> np.ndarray:
        """A view (no copy) of the logits of batch entry ``index``; valid until the next decode."""
        ptr = _logits_ith(self.ptr, index)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,))

    def seq_rm(self, seq: int, p0: int = 0, p1: int = -1) -> None:
        _seq_rm(self.memory, seq, p0, p1)

    def seq_cp(self, src: int, dst: int, p0: int, p1: int) -> None:
        _seq_cp(self.memory, src, dst, p0, p1)

    def clear(self) -> None:
        lc.llama_memory_clear(self.memory, True)

    def close(self) -> None:
        if self.ptr:
            lc.llama_free(self.ptr)
            self.ptr = None


class Batch:
    """A ``llama_batch`` whose arrays are numpy buffers, filled with vector operations.

    An entry may belong to several sequences (``share``): a prompt prefix that several new sequences need is
    evaluated once for all of them, as in llama.cpp's ``batched`` example.
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

    def share(self, start: int, end: int, seq: int) -> None:
        """Let sequence ``seq`` have entries [start, end) too."""
        rows = np.arange(start, end)
        self.seq_id[rows, self.n_seq_id[rows]] = seq
        self.n_seq_id[rows] += 1

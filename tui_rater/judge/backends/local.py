"""A local GGUF model through llama.cpp (CPU, CUDA or Metal: ``n_gpu_layers``), shared by every worker thread.

One batched engine per process per (model file, n_ctx, n_gpu_layers, chat template) -- never one model copy per
worker: ``LocalBackend(spec)`` is a handle on it (reference-counted; the last ``close()`` frees the model). Each
call blocks its thread until its result is ready while the engine decodes every thread's prompts together
(``tui_rater.judge.engine``). The prompt is rendered with the GGUF's own chat template (or one given); a model
without a template gets the query as plain text, the way the paper queried T0 and InstructGPT.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field, replace
from functools import partial
from typing import TYPE_CHECKING, cast

import numpy as np

from tui_rater.domain.decoding import Decoding
from tui_rater.domain.modes import mode_of
from tui_rater.judge.backends.base import Backend, Completion, Message
from tui_rater.judge.errors import JudgeError
from tui_rater.judge.spec import JudgeSpec

if TYPE_CHECKING:  # imported lazily below: llama_cpp is heavy
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter
    from llama_cpp.llama_types import ChatCompletionRequestMessage

    from tui_rater.judge.engine import Engine
    from tui_rater.judge.engine.native import Model

# (model file, symlinks resolved; n_ctx; n_gpu_layers; chat template): what one shared engine is loaded for
_Key = tuple[str, int, int, int, str | None]  # model file, n_ctx, n_gpu_layers, n_threads, chat template

# How a reply may begin with an option: bare, after a space, a line break, two
OPTION_SPELLINGS = ("{}", " {}", "\n{}", "\n\n{}")
# A whitespace token less probable than this adds less than it to an option's probability: no pass is spent on it
NEGLIGIBLE_LEAD = 1e-9
DEFAULT_SEQUENCES = 16  # concurrent sequences of a local judge (--workers); each may use n_ctx tokens of KV cache


@dataclass
class _Shared:
    engine: Engine
    formatter: Jinja2ChatFormatter | None
    source: str  # the file loaded, symlinks resolved when it was loaded
    key: _Key
    refs: int = 0
    option_paths: dict[str, list[tuple[int, ...]]] = field(default_factory=dict)


_SHARED: dict[_Key, _Shared] = {}
_LOCK = threading.Lock()


def _key(spec: JudgeSpec) -> _Key:
    return (os.path.realpath(spec.model), spec.n_ctx, spec.n_gpu_layers, spec.n_threads, spec.chat_template)


def _acquire(spec: JudgeSpec, parallel: int, background: bool, prompts: list[list[Message]] | None = None) -> _Shared:
    with _LOCK:  # one load at a time: 16 workers starting at once load the model once
        key = _key(spec)
        shared = _SHARED.get(key)
        if shared is None:
            from tui_rater.judge.engine import Engine
            from tui_rater.judge.engine.native import LoadError, RowsNotIndependent

            size_for = None
            if prompts and not spec.conversation:  # (a conversation's prompts grow turn by turn: --n-ctx each)
                size_for = partial(tokens_needed, spec=spec, prompts=prompts)
            try:  # the resolved path: the file loaded is the one recorded as the judge's source
                engine = Engine(
                    key[0],
                    n_ctx=spec.n_ctx,
                    n_seq=parallel,
                    n_gpu_layers=spec.n_gpu_layers,
                    n_threads=spec.n_threads or None,
                    background=background,
                    size_for=size_for,
                )
            except RowsNotIndependent as exc:
                raise JudgeError("model_load", str(exc)) from None
            except LoadError as exc:
                raise JudgeError("model_load", f"{exc} (a corrupt or unsupported GGUF?)") from None
            formatter = _chat_formatter(engine.model, spec.chat_template)
            shared = _SHARED[key] = _Shared(engine, formatter, source=key[0], key=key)
        shared.refs += 1
        return shared


def _release(spec: JudgeSpec, shared: _Shared) -> None:
    with _LOCK:
        shared.refs -= 1
        if shared.refs == 0:
            _SHARED.pop(shared.key, None)
            shared.engine.close()


def _chat_formatter(model: Model, template: str | None) -> Jinja2ChatFormatter | None:
    template = template or model.meta("tokenizer.chat_template")
    if not template:
        return None
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    def text(token: int | None) -> str:
        return "" if token is None else model.piece(token, special=True).decode("utf-8", "replace")

    return Jinja2ChatFormatter(template, eos_token=text(model.eos), bos_token=text(model.bos))


def _render(formatter: Jinja2ChatFormatter | None, messages: list[Message]) -> str:
    if formatter is not None:
        # a Message is the {"role", "content"} dict llama_cpp types as a ChatCompletionRequestMessage
        return formatter(messages=cast("list[ChatCompletionRequestMessage]", messages)).prompt
    # no template: the queries themselves, turns separated by blank lines
    return "\n\n".join(m["content"] for m in messages)


def _prompt_tokens(model: Model, formatter: Jinja2ChatFormatter | None, messages: list[Message]) -> list[int]:
    """The rendered prompt's tokens. BOS is added only when the model wants one and the rendered prompt does not
    already start with it: most instruct templates begin with ``{{ bos_token }}`` (two BOS otherwise)."""
    tokens = model.tokenize(_render(formatter, messages), special=formatter is not None)
    if model.add_bos and model.bos is not None and tokens[:1] != [model.bos]:
        tokens.insert(0, model.bos)
    return tokens


SIZE_STEP = 256  # a sequence's share of the KV cache is rounded up to this many tokens


def tokens_needed(model: Model, *, spec: JudgeSpec, prompts: list[list[Message]]) -> int:
    """KV cells one sequence needs: the longest of the run's longest prompts (``service.judging.longest_prompts``)
    plus its reply budget, with a quarter more for the prompts not measured (a longer one still runs: the engine
    then admits fewer sequences at once), never more than ``--n-ctx``. The cache was 16 x 4,096 tokens whatever the
    prompts (1.6 GB for a 253 MB model)."""
    formatter = _chat_formatter(model, spec.chat_template)
    longest = max(len(_prompt_tokens(model, formatter, messages)) for messages in prompts)
    reply = 1 if mode_of(spec.mode).at_answer_position else spec.decoding.max_tokens
    need = longest + reply + 1
    need += need // 4
    return min(spec.n_ctx, -(-need // SIZE_STEP) * SIZE_STEP)


class LocalBackend(Backend):
    def __init__(
        self,
        spec: JudgeSpec,
        parallel: int = DEFAULT_SEQUENCES,
        *,
        background: bool = False,
        prompts: list[list[Message]] | None = None,
    ):
        """``parallel`` sequences, ``background`` (a lower priority, for a judge inside the app) and ``prompts`` (the
        run's longest, to size the KV cache by) apply when this handle is the one that loads the engine."""
        self.spec = spec
        self._shared = _acquire(spec, max(1, parallel), background, prompts)
        self.engine = self._shared.engine
        self.model = self.engine.model
        self.source = self._shared.source
        # prompt tokens served from the KV cache vs evaluated, and tokens generated: the whole engine's
        self.counts = self.engine.counts
        self._closed = False

    def take_sources(self) -> list[tuple[str, str, str]]:
        """The file loaded (resolved once, at load): a symlink re-pointed mid-run does not change what answers."""
        return [(self.source, "", "")]

    # --- prompts ------------------------------------------------------------------------------

    def render(self, messages: list[Message]) -> str:
        return _render(self._shared.formatter, messages)

    def prompt_tokens(self, messages: list[Message]) -> list[int]:
        return _prompt_tokens(self.model, self._shared.formatter, messages)

    # --- what the pre-flight check shows (service/preflight.py) -------------------------------

    @property
    def has_chat_template(self) -> bool:
        return self._shared.formatter is not None

    def leading_bos(self, tokens: list[int]) -> int:
        """How many BOS tokens the prompt starts with (two: the template and the tokenizer both added one)."""
        bos = self.model.bos
        count = 0
        while bos is not None and count < len(tokens) and tokens[count] == bos:
            count += 1
        return count

    def option_token_pieces(self, option: str) -> list[str]:
        """The token paths that spell ``option`` (as ``option_probabilities`` reads it), as text: "'3'", "' '+'3'";
        [] if none."""
        try:
            paths = self._option_paths(option)
        except JudgeError:
            return []
        return ["+".join(repr(self.model.piece(t).decode("utf-8", "replace")) for t in path) for path in paths]

    # --- the operations ----------------------------------------------------------------------

    def complete(
        self,
        messages: list[Message],
        decoding: Decoding,
        *,
        grammar: str | None = None,
        json_schema: dict[str, object] | None = None,
    ) -> Completion:
        """``json_schema`` is for servers that take one; here ``grammar`` (GBNF) constrains the reply."""
        tokens = self.prompt_tokens(messages)
        max_tokens = decoding.max_tokens
        if grammar is not None:  # a constrained answer is short (the old backend's limit, kept)
            max_tokens = min(max_tokens, 8)
        budget = min(max_tokens, self.spec.n_ctx - len(tokens) - 1)
        if len(tokens) < self.spec.n_ctx and budget < 1:
            raise JudgeError("context_overflow", "no room left in the context window for the reply")
        result = self.engine.generate(tokens, replace(decoding, max_tokens=budget), grammar=grammar)
        return Completion(self.model.detokenize(result.tokens), finish_reason=result.finish_reason)

    def _next_token_probabilities(self, messages: list[Message]) -> tuple[np.ndarray, float, float]:
        return self._logits(self.prompt_tokens(messages))

    def _logits(self, tokens: list[int]) -> tuple[np.ndarray, float, float]:
        """(logits, max logit, log of the softmax's normaliser): p(t) = exp(logit[t] - max - log_z). One pass in
        float32 with a float64 sum: a full float64 softmax of a 152k vocabulary per question costs ~1.5 ms."""
        logits = self.engine.probe(tokens)
        top = float(logits.max())
        return logits, top, float(np.log(np.exp(logits - top).sum(dtype=np.float64)))

    def option_probabilities(self, messages: list[Message], options: list[str]) -> dict[str, float]:
        """The raw probability that the reply begins with each option (not renormalised), summed over every path
        that spells it: a single token ("3", " 3") and a whitespace token then the option's token (" " then "3",
        as Gemma's and Qwen2's tokenizers write " 3"): P(" ") * P("3" | " "). The pre-flight check reads the
        same numbers."""
        paths = {option: self._option_paths(option) for option in options}
        prompt = self.prompt_tokens(messages)
        logits, top, log_z = self._logits(prompt)

        def p(row: tuple[np.ndarray, float, float], t: int) -> float:
            return float(np.exp(float(row[0][t]) - row[1] - row[2]))

        first = (logits, top, log_z)
        after: dict[int, tuple[np.ndarray, float, float]] = {}
        found = {}
        for option, spelled in paths.items():
            total = 0.0
            for path in spelled:
                if len(path) == 1:
                    total += p(first, path[0])
                    continue
                lead = p(first, path[0])
                if lead < NEGLIGIBLE_LEAD:  # too rare to change the sum; no pass spent on it
                    continue
                if path[0] not in after:
                    after[path[0]] = self._logits([*prompt, path[0]])
                total += lead * p(after[path[0]], path[1])
            found[option] = total
        return found

    def top_tokens(self, messages: list[Message], k: int = 5) -> list[tuple[str, float]]:
        """The k most probable next tokens (text, probability): Chen et al.'s Implicit Score input."""
        logits, top, log_z = self._next_token_probabilities(messages)
        best = np.argpartition(-logits, k)[:k] if k < logits.size else np.arange(logits.size)
        best = best[np.lexsort((best, -logits[best]))]  # most probable first; equal logits in token order
        return [
            (self.model.piece(int(t)).decode("utf-8", "replace"), float(np.exp(float(logits[t]) - top - log_z)))
            for t in best
        ]

    def _option_paths(self, option: str) -> list[tuple[int, ...]]:
        """How the tokenizer writes the option at the start of a reply: bare, after a space, a line break or two
        ("3", " 3", "\n3", "\n\n3"), each as one token or as a whitespace token then the option's one token."""
        cache = self._shared.option_paths
        if option not in cache:
            found: list[tuple[int, ...]] = []
            bare = self.model.tokenize(option, special=False)
            for text in OPTION_SPELLINGS:
                ids = tuple(self.model.tokenize(text.format(option), special=False))
                whitespace_first = len(ids) == 2 and ids[1:] == tuple(bare) and not self.model.piece(ids[0]).strip()
                if (len(ids) == 1 or whitespace_first) and ids not in found:
                    found.append(ids)
            if not found:
                raise JudgeError("unsupported", f"the model has no single token for {option!r}; use --mode text")
            cache[option] = found
        return cache[option]

    def cancel(self) -> None:
        """Stop the shared engine now (the run is ending): its requests fail as ``cancelled``."""
        self.engine.cancel()

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            _release(self.spec, self._shared)

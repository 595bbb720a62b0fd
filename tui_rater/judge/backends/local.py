"""A local GGUF model through llama-cpp-python (CPU, CUDA or Metal: ``n_gpu_layers``).

One ``Llama`` object per worker thread: it is not thread-safe. The prompt is rendered with the
GGUF's own chat template (or one given); a model without a template gets the query as plain
text, the way the paper queried T0 and InstructGPT. Consecutive prompts that share a prefix
(one item's instructions + story, then each question) reuse llama.cpp's KV cache.
"""

from __future__ import annotations

import contextlib
import os
import sys

import numpy as np

from tui_rater.judge.backends.base import Completion, Message, TokenCounts
from tui_rater.judge.errors import JudgeError
from tui_rater.judge.spec import JudgeSpec


@contextlib.contextmanager
def _quiet_stderr():
    """llama.cpp prints its load log on fd 2 even with verbose=False in some builds."""
    try:
        fd = sys.stderr.fileno()
    except (AttributeError, ValueError, OSError):
        yield
        return
    saved = os.dup(fd)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), fd)
        try:
            yield
        finally:
            os.dup2(saved, fd)
            os.close(saved)


class LocalBackend:
    def __init__(self, spec: JudgeSpec):
        try:
            from llama_cpp import Llama
        except ImportError as exc:  # pragma: no cover - a broken install
            raise JudgeError("model_load", f"llama-cpp-python is not importable ({exc})") from None
        self.spec = spec
        self.counts = TokenCounts()
        try:
            with _quiet_stderr():
                self.llm = Llama(
                    model_path=spec.model,
                    n_ctx=spec.n_ctx,
                    n_gpu_layers=spec.n_gpu_layers,
                    seed=spec.seed,
                    verbose=False,
                    logits_all=False,
                )
        except (ValueError, RuntimeError, OSError) as exc:
            raise JudgeError("model_load", f"llama.cpp could not load {spec.model} ({exc})") from None
        self._grammars: dict[str, object] = {}
        self._formatter = self._chat_formatter()
        self._token_of: dict[str, list[int]] = {}

    # --- prompt rendering ----------------------------------------------------------------

    def _chat_formatter(self):
        template = self.spec.chat_template or self.llm.metadata.get("tokenizer.chat_template")
        if not template:
            return None
        from llama_cpp.llama_chat_format import Jinja2ChatFormatter

        def token_text(key: str) -> str:
            token_id = self.llm.metadata.get(key)
            if token_id is None:
                return ""
            return self.llm.detokenize([int(token_id)], special=True).decode("utf-8", "replace")

        return Jinja2ChatFormatter(
            template,
            eos_token=token_text("tokenizer.ggml.eos_token_id"),
            bos_token=token_text("tokenizer.ggml.bos_token_id"),
        )

    def render(self, messages: list[Message]) -> str:
        if self._formatter is not None:
            return self._formatter(messages=messages).prompt
        # no template: the queries themselves, turns separated by blank lines
        return "\n\n".join(m["content"] for m in messages)

    def _tokens(self, prompt: str) -> list[int]:
        tokens = self.llm.tokenize(prompt.encode("utf-8"), add_bos=True, special=self._formatter is not None)
        if len(tokens) >= self.spec.n_ctx:
            raise JudgeError(
                "context_overflow",
                f"the prompt is {len(tokens)} tokens, the context window {self.spec.n_ctx} "
                f"(raise --n-ctx; items are never cut silently)",
            )
        return tokens

    def _count_prefix(self, tokens: list[int]) -> int:
        """Count prompt tokens served from the KV cache vs evaluated; return the shared length."""
        shared = 0
        for a, b in zip(self.llm._input_ids[: self.llm.n_tokens], tokens):
            if a != b:
                break
            shared += 1
        shared = min(shared, len(tokens) - 1)  # the last token is always evaluated, for fresh logits
        self.counts.cached += shared
        self.counts.evaluated += len(tokens) - shared
        return shared

    # --- the two operations --------------------------------------------------------------

    def complete(
        self,
        messages: list[Message],
        *,
        temperature: float,
        top_p: float,
        max_tokens: int,
        seed: int,
        grammar: str | None = None,
        json_schema: dict | None = None,
    ) -> Completion:
        prompt = self.render(messages)
        tokens = self._tokens(prompt)
        compiled = self._grammar(grammar) if grammar is not None else None
        budget = min(max_tokens, self.spec.n_ctx - len(tokens) - 1)
        if budget < 1:
            raise JudgeError("context_overflow", "no room left in the context window for the reply")
        self._count_prefix(tokens)
        try:
            result = self.llm.create_completion(
                tokens,
                max_tokens=min(budget, 8) if grammar is not None else budget,
                temperature=temperature,
                top_p=top_p,
                seed=seed,
                grammar=compiled,
                top_k=0,
                min_p=0.0,
                repeat_penalty=1.0,
            )
        except ValueError as exc:
            raise JudgeError("context_overflow", str(exc)) from None
        self.counts.generated += result["usage"]["completion_tokens"]
        choice = result["choices"][0]
        return Completion(choice["text"], finish_reason=choice.get("finish_reason") or "stop")

    def _next_token_probabilities(self, messages: list[Message]) -> np.ndarray:
        """One forward pass to the answer position (reusing the cached prefix); softmax of the logits."""
        tokens = self._tokens(self.render(messages))
        self.llm.n_tokens = self._count_prefix(tokens)  # keep the shared prefix in the KV cache
        self.llm.eval(tokens[self.llm.n_tokens :])
        logits = np.ctypeslib.as_array(self.llm._ctx.get_logits(), shape=(self.llm.n_vocab(),)).astype(np.float64)
        probs = np.exp(logits - logits.max())
        return probs / probs.sum()

    def option_probabilities(self, messages: list[Message], options: list[str]) -> dict[str, float]:
        """The probability of each option's token(s) at the answer position."""
        probs = self._next_token_probabilities(messages)
        return {option: float(sum(probs[t] for t in self._option_tokens(option))) for option in options}

    def top_tokens(self, messages: list[Message], k: int = 5) -> list[tuple[str, float]]:
        """The k most probable next tokens (text, probability): Chen et al.'s Implicit Score input."""
        probs = self._next_token_probabilities(messages)
        best = np.argsort(-probs)[:k]
        return [(self.llm.detokenize([int(t)]).decode("utf-8", "replace"), float(probs[t])) for t in best]

    def _option_tokens(self, option: str) -> list[int]:
        """Single tokens that spell the option, bare or after a space ("3", " 3")."""
        if option not in self._token_of:
            found = []
            for text in (option, " " + option):
                ids = self.llm.tokenize(text.encode("utf-8"), add_bos=False, special=False)
                if len(ids) == 1 and ids[0] not in found:
                    found.append(ids[0])
            if not found:
                raise JudgeError("unsupported", f"the model has no single token for {option!r}; use --mode text")
            self._token_of[option] = found
        return self._token_of[option]

    def _grammar(self, text: str):
        if text not in self._grammars:
            from llama_cpp import LlamaGrammar

            with _quiet_stderr():
                self._grammars[text] = LlamaGrammar.from_string(text, verbose=False)
        return self._grammars[text]

    def close(self) -> None:
        with contextlib.suppress(Exception):
            self.llm.close()

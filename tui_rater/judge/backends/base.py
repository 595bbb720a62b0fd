"""What a judge backend does: complete a chat, or read the next-token distribution over options."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tui_rater.domain.decoding import Decoding
from tui_rater.judge.errors import JudgeError

Message = dict[str, str]  # {"role": "user" | "assistant", "content": ...}


@dataclass
class TokenCounts:
    """Prompt tokens served from the KV cache vs evaluated (the benchmarks' figures)."""

    cached: int = 0
    evaluated: int = 0
    generated: int = 0


@dataclass(frozen=True)
class Completion:
    text: str
    structured: bool = False  # the reply is {"score": ...} JSON from a constrained request
    finish_reason: str = "stop"  # "length" when max_tokens (or the context window) cut the reply
    # the sampler settings sent, where they fall short of the paper's (a server that refused top_k / min_p samples
    # with its own: llama.cpp's top_k 40, min_p 0.05); None: sent as asked
    sampling_sent: dict[str, object] | None = None


def spellings(option: str) -> tuple[str, str]:
    """The tokens that answer with ``option``: bare, or after a space ("3", " 3"), for every backend."""
    return option, " " + option


@dataclass(frozen=True)
class OptionProbabilities:
    """Each option's next-token probability, as far as the backend could read it.

    An option in ``unscored`` has a spelling the server gave no probability for (it was not
    among the listed top tokens and could not be asked for): its probability is at least the one
    given, and all unscored spellings together hold at most ``unscored_mass_at_most``. A list
    cut at the top 20 is never renormalised silently.
    """

    probabilities: dict[str, float]
    unscored: tuple[str, ...] = ()
    unscored_mass_at_most: float = 0.0

    @classmethod
    def of(cls, found: Mapping[str, float] | OptionProbabilities) -> OptionProbabilities:
        """A backend's answer: a plain mapping means every option was scored exactly (a local model)."""
        if isinstance(found, OptionProbabilities):
            return found
        return cls({str(k): float(v) for k, v in found.items()})


class Backend:
    """What the judge worker asks of a model: one instance per worker, made by its kind's ``make``
    (``backends/kind.py``). ``ApiBackend`` (a server), ``ApiPool`` (its replicas) and ``LocalBackend`` (llama.cpp)
    subclass it, as a third-party backend does; what only some of them can do has a default here that does nothing,
    so the worker asks every backend the same way (no ``getattr`` probes)."""

    # tokens cached, evaluated and generated so far (a local engine counts for all its handles)
    counts: TokenCounts

    def complete(
        self,
        messages: list[Message],
        decoding: Decoding,  # this request's: the judge's settings with the request's own seed
        *,
        grammar: str | None = None,  # GBNF: only valid answers (the protocol's)
        json_schema: dict[str, Any] | None = None,  # the same constraint for servers that take a JSON schema
    ) -> Completion:
        raise NotImplementedError

    def option_probabilities(
        self, messages: list[Message], options: list[str]
    ) -> Mapping[str, float] | OptionProbabilities:
        """Each option's next-token probability (--mode distribution, implicit); a backend without them says so."""
        raise JudgeError("unsupported", f"{type(self).__name__} reads no next-token probabilities; use --mode text")

    def top_tokens(self, messages: list[Message], k: int = 5) -> list[tuple[str, float]]:
        """The ``k`` likeliest next tokens (the pre-flight's yes/no probe)."""
        raise JudgeError("unsupported", f"{type(self).__name__} reads no next-token probabilities; use --mode text")

    def cancel(self) -> None:
        """Stop now (the run is ending). A request sent to a server cannot be called back: nothing to do."""

    def take_endpoints(self) -> list[str]:
        """The endpoints that answered since the last call, when a judge has several (stored with its ratings)."""
        return []

    def take_sources(self) -> list[tuple[str, str, str]]:
        """(source, served model, fingerprint) of the replies since the last call (``judge/sources.py``)."""
        return []

    def describe_servers(self) -> list[tuple[str, dict[str, Any]]]:
        """What each server says about the model behind its alias, once per run (none: not a server)."""
        return []

    def close(self) -> None:
        """Free what this handle holds."""

"""What a judge backend does: complete a chat, or read the next-token distribution over options."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Protocol

Message = dict[str, str]  # {"role": "user" | "assistant", "content": ...}


@dataclass
class TokenCounts:
    """Prompt tokens served from the KV cache vs evaluated (issue 7's figures)."""

    cached: int = 0
    evaluated: int = 0
    generated: int = 0


@dataclass(frozen=True)
class Completion:
    text: str
    structured: bool = False  # the reply is {"score": ...} JSON from a constrained request
    finish_reason: str = "stop"  # "length" when max_tokens (or the context window) cut the reply


@dataclass
class Backend(Protocol):
    counts: TokenCounts = field(default_factory=TokenCounts)

    def complete(
        self,
        messages: list[Message],
        *,
        temperature: float,
        top_p: float,
        max_tokens: int,
        seed: int,
        grammar: str | None = None,  # GBNF: only valid answers (the protocol's)
        json_schema: dict | None = None,  # the same constraint for servers that take a JSON schema
    ) -> Completion: ...

    def option_probabilities(self, messages: list[Message], options: list[str]) -> dict[str, float]: ...

    def top_tokens(self, messages: list[Message], k: int = 5) -> list[tuple[str, float]]: ...

    def close(self) -> None: ...

"""Typed judge failures: what went wrong, whether a retry may help, and when to retry."""

from __future__ import annotations

# kind -> retry? (429/5xx/timeouts/connection are transient; auth, unknown model, a prompt
# longer than the context window or a broken model file are not). A malformed reply and a
# reply without logprobs (an end-of-text token sampled at the answer position) are retried:
# they are one reply's fault, not the judge's.
RETRYABLE = {
    "rate_limited": True,
    "server_error": True,
    "timeout": True,
    "connection": True,
    "malformed": True,
    "no_logprobs": True,
    "server_unusable": True,  # the judge stops, but the job itself is not at fault
    "auth": False,
    "unknown_model": False,
    "bad_request": False,
    "context_overflow": False,
    "model_load": False,
    "unsupported": False,
    "internal": False,
    "protocol": False,  # a plug-in protocol's reading did not return (domain/protocols/guard.py)
    "cancelled": False,  # the run was stopped (Ctrl-C, quitting the app): the job is given back, never failed
}

# failures that would fail every job of this judge the same way: its workers stop
FATAL_FOR_JUDGE = frozenset({"auth", "unknown_model", "model_load", "unsupported", "server_unusable", "protocol"})


class JudgeError(Exception):
    def __init__(self, kind: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.message = message
        self.retry_after = retry_after

    @property
    def retryable(self) -> bool:
        return RETRYABLE.get(self.kind, False)

    @property
    def fatal_for_judge(self) -> bool:
        """Failures that will fail every job of this judge the same way: stop its workers."""
        return self.kind in FATAL_FOR_JUDGE

    def __str__(self) -> str:
        return f"{self.kind}: {self.message}"

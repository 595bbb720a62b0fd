"""Any OpenAI-compatible chat API through the openai client: OpenAI, vLLM, Ollama, llama.cpp server.

The client's own retries are off: the queue retries, with backoff that honours Retry-After,
so a rate-limited job waits in the queue instead of holding a worker. Errors become typed
``JudgeError``s; messages never contain the API key.
"""

from __future__ import annotations

import json
import math
from datetime import UTC

from tui_rater.judge.backends.base import Completion, Message, TokenCounts
from tui_rater.judge.errors import JudgeError
from tui_rater.judge.spec import JudgeSpec

# how a constrained reply is asked for, tried in this order until the server accepts one
CONSTRAINT_STYLES = ("json_schema", "grammar")


def _retry_after(response) -> float | None:
    if response is None:
        return None
    value = response.headers.get("retry-after")
    if value is None:
        ms = response.headers.get("retry-after-ms")
        return float(ms) / 1000 if ms and ms.replace(".", "", 1).isdigit() else None
    try:
        return max(0.0, float(value))
    except ValueError:
        from datetime import datetime
        from email.utils import parsedate_to_datetime

        try:
            return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
        except (TypeError, ValueError):
            return None


_CLIENTS: dict[tuple, object] = {}
_CLIENTS_LOCK = __import__("threading").Lock()


def _shared_client(openai, base_url: str | None, key: str, timeout: float):
    """One thread-safe client (one connection pool, one TLS context) for all workers of a judge."""
    with _CLIENTS_LOCK:
        ident = (base_url, key, timeout)
        if ident not in _CLIENTS:
            _CLIENTS[ident] = openai.OpenAI(base_url=base_url, api_key=key, max_retries=0, timeout=timeout)
        return _CLIENTS[ident]


class ApiBackend:
    def __init__(self, spec: JudgeSpec):
        import openai

        self.spec = spec
        self.counts = TokenCounts()
        self._openai = openai
        self._key = spec.api_key()
        self.client = _shared_client(openai, spec.base_url, self._key, spec.timeout_s)
        self._constraint_style: str | None = None

    def _scrub(self, text: str) -> str:
        return text.replace(self._key, "[key]") if self._key and len(self._key) > 3 else text

    def _call(self, **kwargs):
        openai = self._openai
        try:
            return self.client.chat.completions.create(model=self.spec.api_model, **kwargs)
        except openai.AuthenticationError:
            raise JudgeError(
                "auth", f"the server at {self._where()} refused the API key (401); check ${self.spec.api_key_env}"
            ) from None
        except openai.PermissionDeniedError:
            raise JudgeError("auth", f"the server at {self._where()} denied access (403)") from None
        except openai.NotFoundError:
            raise JudgeError(
                "unknown_model", f"the server at {self._where()} has no model {self.spec.api_model!r} (404)"
            ) from None
        except openai.RateLimitError as exc:
            raise JudgeError("rate_limited", "rate limited (429)", _retry_after(exc.response)) from None
        except openai.APITimeoutError:
            raise JudgeError("timeout", f"no answer within {self.spec.timeout_s:g} s") from None
        except openai.APIConnectionError as exc:
            raise JudgeError("connection", f"cannot reach {self._where()} ({self._scrub(str(exc))})") from None
        except openai.InternalServerError as exc:
            detail = self._scrub(str(exc.message))[:200]
            raise JudgeError(
                "server_error", f"server error {exc.status_code}: {detail}", _retry_after(exc.response)
            ) from None
        except openai.BadRequestError as exc:
            raise JudgeError(
                "bad_request", self._scrub(f"the server rejected the request (400): {exc.message}")
            ) from None
        except openai.UnprocessableEntityError as exc:
            raise JudgeError(
                "bad_request", self._scrub(f"the server rejected the request (422): {exc.message}")
            ) from None
        except openai.APIStatusError as exc:
            kind = "server_error" if exc.status_code >= 500 else "bad_request"
            raise JudgeError(kind, f"HTTP {exc.status_code}", _retry_after(exc.response)) from None
        except (openai.APIResponseValidationError, json.JSONDecodeError, ValueError) as exc:
            raise JudgeError("malformed", f"the server's answer is not valid JSON ({type(exc).__name__})") from None

    def _where(self) -> str:
        return self.spec.base_url or "api.openai.com"

    def _reply_text(self, response) -> str:
        try:
            choice = response.choices[0]
            text = choice.message.content
        except (AttributeError, IndexError, TypeError):
            raise JudgeError("malformed", "the server's answer has no choices[0].message") from None
        usage = getattr(response, "usage", None)
        if usage is not None:
            self.counts.evaluated += getattr(usage, "prompt_tokens", 0) or 0
            self.counts.generated += getattr(usage, "completion_tokens", 0) or 0
        return text or ""

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
        params = dict(messages=messages, temperature=temperature, top_p=top_p, max_tokens=max_tokens, seed=seed)
        if grammar is None and json_schema is None:
            response = self._call(**params)
            return Completion(self._reply_text(response), finish_reason=self._finish_reason(response))
        styles = [self._constraint_style] if self._constraint_style else list(CONSTRAINT_STYLES)
        last: JudgeError | None = None
        for style in styles:
            try:
                response = self._call(**params, **self._constraint(style, grammar, json_schema))
            except JudgeError as exc:
                # a server that does not know this kind of constraint says 400/422 (or, like
                # llama-cpp-python's server, a 500 naming response_format): try the next kind
                rejected = exc.kind == "bad_request" or (
                    exc.kind == "server_error" and "response_format" in exc.message
                )
                if not rejected:
                    raise
                last = exc
                continue
            self._constraint_style = style
            return Completion(
                self._reply_text(response),
                structured=style == "json_schema",
                finish_reason=self._finish_reason(response),
            )
        raise JudgeError(
            "unsupported",
            "the server accepts neither a JSON schema nor a grammar for "
            f"constrained output; use --mode text ({last.message if last else ''})",
        )

    @staticmethod
    def _finish_reason(response) -> str:
        try:
            return str(response.choices[0].finish_reason or "stop")
        except (AttributeError, IndexError, TypeError):
            return "stop"

    @staticmethod
    def _constraint(style: str, grammar: str | None, json_schema: dict | None) -> dict:
        if style == "json_schema" and json_schema is not None:  # OpenAI structured outputs, vLLM
            return {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "rating", "strict": True, "schema": json_schema},
                }
            }
        if style == "grammar" and grammar is not None:
            return {"extra_body": {"grammar": grammar}}  # llama.cpp server
        raise JudgeError("bad_request", f"no {style} constraint for this question")

    def option_probabilities(self, messages: list[Message], options: list[str]) -> dict[str, float]:
        response = self._call(messages=messages, max_tokens=1, temperature=1.0, logprobs=True, top_logprobs=20)
        self._reply_text(response)
        try:
            content = response.choices[0].logprobs.content
            top = content[0].top_logprobs
        except (AttributeError, IndexError, TypeError):
            top = None
        if not top:
            raise JudgeError(
                "no_logprobs",
                f"the server at {self._where()} returned no top_logprobs; use --mode text or constrained with this API",
            )
        probabilities = dict.fromkeys(options, 0.0)
        for entry in top:
            token = (entry.token or "").strip()
            if token in probabilities:
                probabilities[token] += math.exp(entry.logprob)
        return probabilities

    def top_tokens(self, messages: list[Message], k: int = 5) -> list[tuple[str, float]]:
        """The k most probable next tokens from ``top_logprobs`` (the OpenAI API returns at most 20)."""
        response = self._call(messages=messages, max_tokens=1, temperature=1.0, logprobs=True, top_logprobs=k)
        self._reply_text(response)
        try:
            top = response.choices[0].logprobs.content[0].top_logprobs
        except (AttributeError, IndexError, TypeError):
            top = None
        if not top:
            raise JudgeError(
                "no_logprobs",
                f"the server at {self._where()} returned no top_logprobs, which the "
                "Implicit Score needs; use the Explicit Score (--mode text) with this API",
            )
        return [(entry.token or "", math.exp(entry.logprob)) for entry in top[:k]]

    def close(self) -> None:
        pass  # the shared client lives as long as the process

"""Any OpenAI-compatible chat API through the openai client: OpenAI, vLLM, Ollama, llama.cpp server.

The client's own retries are off: the queue retries, with backoff that honours Retry-After,
so a rate-limited job waits in the queue instead of holding a worker. Errors become typed
``JudgeError``s. Replies are read strictly (``api_reply``): a malformed one fails its job and
the worker goes on. Messages and stored replies never contain the API key, nor a user, password
or key written into the base URL. Logprobs are asked for greedily (temperature 0, one token),
and an option missing from the listed top 20 is scored on its own (``api_logprobs``).
"""

from __future__ import annotations

import hashlib
import json
import math
import random
import threading
import types
from collections.abc import Callable, Mapping
from datetime import UTC
from typing import TYPE_CHECKING, Any, Protocol, TypeVar
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from tui_rater.domain.decoding import Decoding
from tui_rater.domain.protocols.base import MAX_UNSCORED_SHARE
from tui_rater.judge.backends import api_logprobs, api_reply, http_limits
from tui_rater.judge.backends.api_reply import MAX_BODY_BYTES, Listing
from tui_rater.judge.backends.base import Backend, Completion, Message, OptionProbabilities, TokenCounts, spellings
from tui_rater.judge.errors import JudgeError
from tui_rater.judge.spec import NO_KEY, JudgeSpec, strip_credentials, url_secrets

if TYPE_CHECKING:  # imported when a judge is made: the openai client is slow to import
    import openai as openai_module

# how a constrained reply is asked for, tried in this order until the server accepts one
CONSTRAINT_STYLES = ("json_schema", "grammar")
TOP_LOGPROBS = 20  # the most OpenAI (and vLLM by default) list
# a greedy reply without logprobs (end-of-text was the most probable token) is asked again by
# sampling, which leaves the reported log-probabilities unchanged
SAMPLED_TRIES = 3
# a listing sampled again after end-of-text: from the model's whole distribution (llama.cpp's default min_p 0.05
# and top_k 40 would cut the alternatives away and leave end-of-text to be sampled again), on the servers that
# take these fields
WHOLE_DISTRIBUTION = {"top_k": 0, "min_p": 0.0}
OPENAI_URL = "https://api.openai.com/v1"


class _Response(Protocol):
    """What is read of an HTTP response that failed (the openai client's httpx.Response)."""

    @property
    def headers(self) -> Mapping[str, str]: ...


_T = TypeVar("_T")


def _retry_after(response: _Response | None) -> float | None:
    if response is None:
        return None
    value = response.headers.get("retry-after")
    if value is None:
        ms = response.headers.get("retry-after-ms")
        return float(ms) / 1000 if ms and ms.replace(".", "", 1).isdigit() else None
    try:
        seconds = float(value)
        return max(0.0, seconds) if math.isfinite(seconds) else None
    except ValueError:
        from datetime import datetime
        from email.utils import parsedate_to_datetime

        try:
            return max(0.0, (parsedate_to_datetime(value) - datetime.now(UTC)).total_seconds())
        except (TypeError, ValueError, OverflowError):
            return None


_CLIENTS: dict[tuple[str | None, str, float], openai_module.OpenAI] = {}
_CLIENTS_LOCK = threading.Lock()


def _split_query(base_url: str | None) -> tuple[str | None, dict[str, str]]:
    """The base URL without its query (the client appends paths to it), and the query to send along."""
    if base_url is None:
        return None, {}
    parts = urlsplit(base_url)
    return urlunsplit((*parts[:3], "", "")), dict(parse_qsl(parts.query, keep_blank_values=True))


def _shared_client(openai: types.ModuleType, base_url: str | None, key: str, timeout: float) -> openai_module.OpenAI:
    """One thread-safe client (one connection pool, one TLS context) for all workers of a judge."""
    with _CLIENTS_LOCK:
        ident = (base_url, key, timeout)
        if ident not in _CLIENTS:
            url, query = _split_query(base_url)
            http = http_limits.http_client(openai, timeout)  # total deadline, decoded-size cap
            _CLIENTS[ident] = openai.OpenAI(
                base_url=url, api_key=key, max_retries=0, timeout=timeout, default_query=query or None, http_client=http
            )
        return _CLIENTS[ident]


def warm_client(spec: JudgeSpec) -> None:
    """The client the judge's workers will share (``_shared_client``), made ahead, and openai's chat resources,
    which it imports at their first use (~0.1 s with the client's TLS context, under load: the first request waited
    for them)."""
    import openai

    client = _shared_client(openai, spec.base_url, spec.api_key(), spec.timeout_s)
    _ = client.chat.completions


def _seed_of(messages: list[Message]) -> int:
    return int.from_bytes(hashlib.sha256(json.dumps(messages).encode()).digest()[:4], "big") & 0x7FFFFFFF


class ApiBackend(Backend):
    def __init__(self, spec: JudgeSpec):
        import openai

        self.spec = spec
        self.counts = TokenCounts()
        self._openai = openai
        self._key = spec.api_key()
        # the placeholder of a keyless local server is no secret (and a word a reply may hold)
        self._secrets = [k for k in (self._key, *url_secrets(spec.base_url)) if k != NO_KEY]
        self.client = _shared_client(openai, spec.base_url, self._key, spec.timeout_s)
        self.server = api_logprobs.server_facts(spec.base_url or "", spec.api_model)
        base, _ = _split_query(spec.base_url)
        self._root = (base or "https://api.openai.com/v1").rstrip("/").removesuffix("/v1")
        self._constraint_style: str | None = None
        self._served: set[tuple[str, str]] = set()  # (model id, fingerprint) replies named since take_served
        self._extras_sent = False  # the last sampled request carried top_k / min_p

    def describe_server(self) -> dict[str, Any]:
        """What the server says about the model behind the alias (``api_server.describe``), asked once per run."""
        from tui_rater.judge.backends import api_server

        with self.server.lock:
            if self.server.described is None:
                base = (_split_query(self.spec.base_url)[0] or "https://api.openai.com/v1").rstrip("/")
                timeout = min(10.0, self.spec.timeout_s)

                def get(url: str) -> object:
                    with http_limits.deadline(timeout):  # a server dripping its headers: bounded here too
                        return self.client.with_options(timeout=timeout).get(url, cast_to=str)

                self.server.described = api_server.describe(get, self._root, base, self.spec.api_model)
            return self.server.described

    # --- one request ---------------------------------------------------------------------

    def _error(self, kind: str, message: str, retry_after: float | None = None) -> JudgeError:
        return JudgeError(kind, api_reply.scrub(message, self._secrets), retry_after)

    def _where(self) -> str:
        return strip_credentials(self.spec.base_url) if self.spec.base_url else "api.openai.com"

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """POST ``body``; the reply's JSON object, or a typed failure (never another exception)."""
        openai = self._openai
        try:
            with http_limits.deadline(self.spec.timeout_s):  # headers dripped a byte a second: still bounded
                text = self.client.post(path, body=body, cast_to=str)
        except openai.AuthenticationError:
            if self._key == NO_KEY:
                hint = (
                    "it wants a key: name the variable holding it with --api-key-env NAME "
                    f"(${self.spec.key_variable} is sent to api.openai.com only)"
                )
            else:
                hint = f"check ${self.spec.key_variable}"
            raise self._error("auth", f"the server at {self._where()} refused the request (401); {hint}") from None
        except openai.PermissionDeniedError:
            raise self._error("auth", f"the server at {self._where()} denied access (403)") from None
        except openai.NotFoundError:
            raise self._error(
                "unknown_model", f"the server at {self._where()} has no model {self.spec.api_model!r} (404)"
            ) from None
        except openai.RateLimitError as exc:
            raise self._error("rate_limited", "rate limited (429)", _retry_after(exc.response)) from None
        except openai.APITimeoutError:
            raise self._error("timeout", f"no answer within {self.spec.timeout_s:g} s") from None
        except openai.APIConnectionError as exc:
            raise self._error("connection", f"cannot reach {self._where()} ({exc})") from None
        except openai.InternalServerError as exc:
            detail = str(exc.message)[:200]
            raise self._error(
                "server_error", f"server error {exc.status_code}: {detail}", _retry_after(exc.response)
            ) from None
        except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
            raise self._error(
                "bad_request", f"the server rejected the request ({exc.status_code}): {str(exc.message)[:300]}"
            ) from None
        except openai.APIStatusError as exc:
            kind = "server_error" if exc.status_code >= 500 else "bad_request"
            raise self._error(kind, f"HTTP {exc.status_code}", _retry_after(exc.response)) from None
        except http_limits.BodyTooLarge:
            raise self._error("malformed", f"the server's answer is larger than {MAX_BODY_BYTES >> 20} MB") from None
        except http_limits.BodyTooSlow:
            raise self._error("timeout", f"the answer took longer than {self.spec.timeout_s:g} s to arrive") from None
        except http_limits.BadEncoding as exc:
            raise self._error("malformed", f"the server's answer could not be read: {exc}") from None
        except openai.OpenAIError as exc:  # e.g. a response the client cannot decode
            raise self._error("malformed", f"the server's answer could not be read ({type(exc).__name__})") from None
        return api_reply.parse_body(text)

    def _chat(self, **params: Any) -> dict[str, Any]:
        try:
            body = self._post("/chat/completions", {"model": self.spec.api_model, **params})
        except JudgeError as exc:
            if exc.kind == "malformed":  # HTML, not JSON ...: counts against the server
                raise self._bad(exc) from None
            raise
        self._served.add(api_reply.served(body, self._secrets))
        return body

    def take_served(self) -> set[tuple[str, str]]:
        """The (model id, system_fingerprint) pairs the replies named since the last call (the worker records them)."""
        found, self._served = self._served, set()
        return found

    def take_sources(self) -> list[tuple[str, str, str]]:
        """(server URL without credentials, model id, fingerprint) the replies named since the last call."""
        url = strip_credentials(self.spec.base_url or OPENAI_URL)
        return [(url, model, fingerprint) for model, fingerprint in sorted(self.take_served())]

    def describe_servers(self) -> list[tuple[str, dict[str, Any]]]:
        """(server URL without credentials, what it says of the model): one server here, several in a pool."""
        return [(strip_credentials(self.spec.base_url or OPENAI_URL), self.describe_server())]

    def _judged(self, read: Callable[[], _T]) -> _T:
        """Read a reply; a malformed one counts against the server (a judge that never gets one stops)."""
        try:
            found = read()
        except JudgeError as exc:
            raise self._bad(exc) from None
        return found

    def _bad(self, error: JudgeError) -> JudgeError:
        self.server.note(good=False)
        if not self.server.unusable:
            return error
        return self._error(
            "server_unusable",
            f"{api_logprobs.UNUSABLE_STREAK} replies in a row from {self._where()} and none usable, the last: "
            f"{error.message}; check --base-url and the model, or use --mode text",
        )

    def _text(self, body: dict[str, Any]) -> tuple[str, str]:
        text, finish = self._judged(lambda: api_reply.message_text(body, self._secrets))
        prompt, completion = api_reply.usage(body)
        self.counts.evaluated += prompt
        self.counts.generated += completion
        return text, finish

    # --- a reply ---------------------------------------------------------------------------

    def complete(
        self,
        messages: list[Message],
        decoding: Decoding,
        *,
        grammar: str | None = None,
        json_schema: dict[str, Any] | None = None,
    ) -> Completion:
        params: dict[str, Any] = dict(messages=messages, **decoding.sent())
        if grammar is None and json_schema is None:
            text, finish = self._text(self._sampled(params, decoding))
            self.server.note(good=True)
            return Completion(text, finish_reason=finish, sampling_sent=self._sampling_sent(decoding))
        styles = [self._constraint_style] if self._constraint_style else list(CONSTRAINT_STYLES)
        last: JudgeError | None = None
        for style in styles:
            try:
                body = self._sampled({**params, **self._constraint(style, grammar, json_schema)}, decoding)
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
            text, finish = self._text(body)
            self.server.note(good=True)
            return Completion(
                text,
                structured=style == "json_schema",
                finish_reason=finish,
                sampling_sent=self._sampling_sent(decoding),
            )
        raise JudgeError(
            "unsupported",
            "the server accepts neither a JSON schema nor a grammar for "
            f"constrained output; use --mode text ({last.message if last else ''})",
        )

    def _sampled(self, params: dict[str, Any], decoding: Decoding) -> dict[str, Any]:
        """A sampled reply carries the judge's whole sampler, its top_k and min_p too (by default the paper's:
        nucleus over the whole vocabulary; llama.cpp's server would otherwise cut to its own top_k 40 and min_p
        0.05 first); a server that refuses those fields is asked without them (and the reply's rating says so:
        ``sampling_sent``)."""
        self._extras_sent = False
        if params["temperature"] <= 0 or self.server.sampler_extras is False:
            return self._chat(**params)
        try:
            body = self._chat(**params, **decoding.extensions())
        except JudgeError as exc:
            if exc.kind != "bad_request":
                raise
            body = self._chat(**params)  # refused again: the constraint, not the sampler fields (the caller's)
            self.server.sampler_extras = False
            return body
        self.server.sampler_extras = self._extras_sent = True
        return body

    def _sampling_sent(self, decoding: Decoding) -> dict[str, Any] | None:
        """What was sent of the sampler, where it is less than the paper's (None: all of it, or greedy)."""
        if decoding.temperature <= 0 or self._extras_sent:
            return None
        return {"top_p": decoding.top_p, **{name: "the server's" for name in decoding.extensions()}}

    @staticmethod
    def _constraint(style: str, grammar: str | None, json_schema: dict[str, Any] | None) -> dict[str, Any]:
        if style == "json_schema" and json_schema is not None:  # OpenAI structured outputs, vLLM
            return {
                "response_format": {
                    "type": "json_schema",
                    "json_schema": {"name": "rating", "strict": True, "schema": json_schema},
                }
            }
        if style == "grammar" and grammar is not None:
            return {"grammar": grammar}  # llama.cpp server
        raise JudgeError("bad_request", f"no {style} constraint for this question")

    # --- the next token's probabilities ------------------------------------------------------

    def _listing_once(
        self,
        messages: list[Message],
        asked: int,
        temperature: float,
        seed: int,
        logit_bias: dict[str, float] | None = None,
    ) -> Listing | None:
        params: dict[str, Any] = dict(
            messages=messages, max_tokens=1, temperature=temperature, logprobs=True, top_logprobs=asked, seed=seed
        )
        if temperature > 0:  # sampling from the model's own distribution, not a truncated one
            params["top_p"] = 1.0
            if self.server.sampler_extras is not False:
                params.update(WHOLE_DISTRIBUTION)
        if logit_bias:
            params["logit_bias"] = logit_bias
        try:
            body = self._chat(**params)
        except JudgeError as exc:
            if exc.kind != "bad_request" or not set(WHOLE_DISTRIBUTION) <= set(params):
                raise
            self.server.sampler_extras = False  # a server that refuses llama.cpp's sampler fields
            return self._listing_once(messages, asked, temperature, seed, logit_bias)
        self._text(body)
        return self._judged(lambda: api_reply.token_listing(body, asked, self._secrets))

    def _listing(self, messages: list[Message], asked: int) -> Listing:
        """The answer position's top tokens, asked greedily; a reply without any is asked again by sampling."""
        # the sampled token does not change the log-probabilities reported: fresh seeds, so that a
        # retry of the job draws anew
        tries = [(0.0, _seed_of(messages))] + [(1.0, random.randrange(1 << 31)) for _ in range(SAMPLED_TRIES)]
        for temperature, attempt_seed in tries:
            listing = self._listing_once(messages, asked, temperature, attempt_seed)
            if listing is not None and listing.top:
                self.server.note(good=True)
                return listing
        raise self._bad(
            self._error(
                "no_logprobs",
                f"the server at {self._where()} returned no top_logprobs at the answer position in {len(tries)} "
                "tries (it generated end-of-text, or does not give logprobs: then use --mode text)",
            )
        )

    def option_probabilities(self, messages: list[Message], options: list[str]) -> OptionProbabilities:
        """Each option's probability: from the top 20, else asked for one by one; never renormalised."""
        listing = self._listing(messages, TOP_LOGPROBS)
        probabilities = dict.fromkeys(options, 0.0)
        missing: list[tuple[str, str]] = []
        for option in options:
            for text in spellings(option):
                p = listing.probability(text)
                if p is None:
                    missing.append((option, text))
                else:
                    probabilities[option] += p
        room = max(0.0, 1.0 - listing.mass)
        bound = min(len(missing) * listing.ceiling, room)
        if bound <= MAX_UNSCORED_SHARE / 2 * sum(probabilities.values()):
            # what the list leaves out cannot matter (the bound is recorded): no request per spelling
            return OptionProbabilities(
                probabilities, tuple(dict.fromkeys(o for o, _ in missing)), bound if missing else 0.0
            )
        unscored: list[str] = []
        outside = 0.0  # probability found for tokens the list did not hold
        for option, text in missing:
            p = self._probability_by_bias(messages, listing, text)
            if p is None:
                unscored.append(option)
            else:
                probabilities[option] += p
                outside += p
        if not unscored:
            return OptionProbabilities(probabilities)
        bound = min(len(unscored) * listing.ceiling, max(0.0, room - outside))
        return OptionProbabilities(probabilities, tuple(dict.fromkeys(unscored)), bound)

    def _probability_by_bias(self, messages: list[Message], listing: Listing, text: str) -> float | None:
        ids = self._token_ids(text)
        if ids is None:
            return None  # no tokenizer to ask: unscored
        if len(ids) != 1:
            return 0.0  # not one token: the model cannot answer with it in one token (as for a local model)
        seed = _seed_of(messages)

        def ask(bias: dict[str, float]) -> Listing | None:
            try:
                return self._listing_once(messages, TOP_LOGPROBS, 0.0, seed, logit_bias=bias)
            except JudgeError as exc:
                if exc.kind != "bad_request":
                    raise
                self.server.bias = "rejected"
                return None

        if self.server.bias == "unknown":
            api_logprobs.calibrate(self.server, ask, listing, self._single_id)
        if self.server.bias != "before":
            return None
        logprob = api_logprobs.biased_logprob(ask, listing, text, ids[0])
        return None if logprob is None else math.exp(logprob)

    def _token_ids(self, text: str) -> list[int] | None:
        return api_logprobs.token_ids(self.server, self._post, self._root, self.spec.api_model, text)

    def _single_id(self, text: str) -> int | None:
        ids = self._token_ids(text)
        return ids[0] if ids is not None and len(ids) == 1 else None

    def top_tokens(self, messages: list[Message], k: int = 5) -> list[tuple[str, float]]:
        """The k most probable next tokens (Chen et al.'s Implicit Score reads the top 5)."""
        listing = self._listing(messages, k)
        return [(token, math.exp(logprob)) for token, logprob in listing.top[:k]]

    def close(self) -> None:
        pass  # the shared client lives as long as the process

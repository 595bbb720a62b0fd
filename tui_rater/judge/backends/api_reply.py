"""Reading an OpenAI-compatible chat completion strictly: every field used is checked, none trusted.

A server (or a proxy in front of it) may send anything: HTML with status 200, JSON whose content
is a number, a logprob of 1000 or NaN, a token that is a number, no choices, a body of
gigabytes, the API key echoed back. Each becomes a typed ``malformed`` failure of that one job,
and every string kept from a reply has the secrets replaced; nothing here raises
anything but ``JudgeError``.
"""

from __future__ import annotations

import functools
import html
import json
import math
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tui_rater.judge.errors import JudgeError

# the largest reply read (a judge's reply, even with top-20 logprobs, is a few kilobytes)
MAX_BODY_BYTES = 8 << 20
# the longest reply text stored (--max-tokens 128 gives a few hundred characters; 4,096 tokens ~20,000)
MAX_REPLY_CHARS = 64 << 10
MAX_TOKEN_CHARS = 1 << 10  # one token of a logprobs listing (a real one is a few characters)
# log-probabilities a hair above 0 are float rounding (0 is a certainty); more is not a logprob
LOGPROB_SLACK = 1e-4
# the listed probabilities of distinct tokens cannot add up to more than 1 (+ rounding)
MASS_SLACK = 1e-3
SECRET_MIN_LENGTH = 4
HIDDEN = "[key]"


def malformed(detail: str) -> JudgeError:
    return JudgeError("malformed", f"the server's answer is malformed: {detail}")


def scrub(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (the API key, a password in the URL) replaced, in whatever form a server echoes
    it: as sent, in any letter case (a server that echoed the URL's secret in lower case got it stored), percent-
    encoded (``+`` for spaces), base64, JSON- or HTML-escaped."""
    pattern = _pattern(tuple(secret for secret in secrets if len(secret) >= SECRET_MIN_LENGTH))
    return pattern.sub(HIDDEN, text) if pattern is not None else text


@functools.lru_cache(maxsize=64)
def _pattern(secrets: tuple[str, ...]) -> re.Pattern[str] | None:
    forms = {form for secret in secrets for form in _forms(secret)}
    if not forms:
        return None
    # the longest first: an encoded form is never left half-replaced by a shorter one inside it
    return re.compile("|".join(re.escape(form) for form in sorted(forms, key=lambda f: (-len(f), f))), re.IGNORECASE)


@functools.cache
def _forms(secret: str) -> frozenset[str]:
    import base64
    from urllib.parse import quote, quote_plus, unquote

    forms = {secret, unquote(secret), quote(secret, safe=""), quote(secret, safe="/"), quote_plus(secret)}
    for form in list(forms):  # base64, as a header or a token would carry it (with and without its padding)
        for encoded in (base64.b64encode(form.encode()), base64.urlsafe_b64encode(form.encode())):
            forms |= {encoded.decode(), encoded.decode().rstrip("=")}
    escaped = {json.dumps(form)[1:-1] for form in forms}
    forms |= escaped | {form.replace("/", "\\/") for form in escaped} | {html.escape(form) for form in forms}
    return frozenset(form for form in forms if len(form) >= SECRET_MIN_LENGTH)


def parse_body(text: str) -> dict[str, Any]:
    """The reply's JSON object; a typed failure for anything else (HTML, invalid or nested JSON...)."""
    try:
        body = json.loads(text)
    except (ValueError, RecursionError):
        start = " ".join(text[:40].split())
        raise malformed(f"not JSON (it begins {start!r})" if start else "an empty body") from None
    if not isinstance(body, dict):
        raise malformed(f"JSON {type(body).__name__}, not an object")
    return body


def _choice(body: dict[str, Any]) -> dict[str, Any]:
    choices = body.get("choices")
    if not isinstance(choices, list) or not choices:
        raise malformed("it has no choices")
    choice = choices[0]
    if not isinstance(choice, dict):
        raise malformed(f"choices[0] is {_kind(choice)}, not an object")
    return choice


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    names: dict[type, str] = {str: "text", list: "a list", dict: "an object"}
    return names.get(type(value), type(value).__name__)


def message_text(body: dict[str, Any], secrets: Iterable[str]) -> tuple[str, str]:
    """(the reply's text, finish_reason). No text (null content) is an empty reply, not a failure."""
    choice = _choice(body)
    message = choice.get("message")
    if not isinstance(message, dict):
        raise malformed(f"choices[0].message is {_kind(message)}, not an object")
    content = message.get("content")
    if content is None:
        # OpenAI's structured outputs put a refusal here instead of the content
        refusal = message.get("refusal")
        content = refusal if isinstance(refusal, str) else ""
    if not isinstance(content, str):
        raise malformed(f"choices[0].message.content is {_kind(content)}, not text")
    if len(content) > MAX_REPLY_CHARS:
        # a judge's reply is bounded by its reply budget; megabytes of it would be stored with every retry
        raise malformed(
            f"the reply is {len(content):,} characters long (more than {MAX_REPLY_CHARS:,}): the server ignored "
            "the reply budget (max_tokens)"
        )
    finish = choice.get("finish_reason")
    if finish is None:
        finish = "stop"
    if not isinstance(finish, str):
        raise malformed(f"choices[0].finish_reason is {_kind(finish)}, not text")
    return scrub(content, secrets), scrub(finish[:40], secrets)


def usage(body: dict[str, Any]) -> tuple[int, int]:
    """(prompt tokens, completion tokens), 0 where the server does not say or says nonsense."""
    found = body.get("usage")
    if not isinstance(found, dict):
        return 0, 0

    def count(name: str) -> int:
        value = found.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= 10**9:
            return value
        return 0

    return count("prompt_tokens"), count("completion_tokens")


# a server's model id or fingerprint longer than this is cut (a real one is a few dozen characters)
MAX_SERVED_CHARS = 200


def served(body: dict[str, Any], secrets: Iterable[str]) -> tuple[str, str]:
    """(the model id the server says answered, its ``system_fingerprint``): '' where it says nothing
    (or not text). They tell apart two servers behind one model name and URL."""

    def text(name: str) -> str:
        value = body.get(name)
        return scrub(value[:MAX_SERVED_CHARS], secrets) if isinstance(value, str) else ""

    return text("model"), text("system_fingerprint")


@dataclass(frozen=True)
class Listing:
    """The next-token alternatives a reply lists at its first position, most probable first."""

    top: list[tuple[str, float]]  # (token text, log-probability), sorted, secrets replaced
    sampled: tuple[str, float]  # the token the server generated there
    asked: int  # how many alternatives were asked for

    def probability(self, text: str) -> float | None:
        """The probability of the tokens spelled ``text`` (None when none is listed)."""
        listed = [lp for token, lp in self.top if token == text]
        if listed:
            return sum(math.exp(lp) for lp in listed)
        if self.sampled[0] == text:
            return math.exp(self.sampled[1])
        return None

    @property
    def mass(self) -> float:
        return sum(math.exp(lp) for _, lp in self.top)

    @property
    def ceiling(self) -> float:
        """No token missing from the list is more probable than this.

        The list is the top ``asked`` tokens, but a server may add the sampled token although it is
        not among them (llama-cpp-python does), and list fewer (it merges tokens of the same text):
        the sampled token's entry is left out, so the bound can only be too high, never too low.
        With no list, only what the sampled token leaves.
        """
        if not self.top:
            return max(0.0, 1.0 - math.exp(self.sampled[1]))
        others = [entry for entry in self.top if entry != self.sampled] or self.top
        return math.exp(others[: self.asked][-1][1])


def token_listing(body: dict[str, Any], asked: int, secrets: Iterable[str]) -> Listing | None:
    """The first position's top log-probabilities; None when the reply has none (e.g. end-of-text)."""
    choice = _choice(body)
    logprobs = choice.get("logprobs")
    if logprobs is None:
        return None
    if not isinstance(logprobs, dict):
        raise malformed(f"choices[0].logprobs is {_kind(logprobs)}, not an object")
    content = logprobs.get("content")
    if content is None or content == []:
        return None  # nothing generated: the server sampled end-of-text at the answer position
    if not isinstance(content, list):
        raise malformed(f"choices[0].logprobs.content is {_kind(content)}, not a list")
    first = content[0]
    where = "logprobs.content[0]"
    sampled = _entry(first, where, secrets)
    top_raw = first.get("top_logprobs") if isinstance(first, dict) else None
    if top_raw is None:
        top_raw = []
    if not isinstance(top_raw, list):
        raise malformed(f"{where}.top_logprobs is {_kind(top_raw)}, not a list")
    top = sorted(
        (_entry(entry, f"{where}.top_logprobs[{i}]", secrets) for i, entry in enumerate(top_raw)), key=lambda e: -e[1]
    )
    listing = Listing(top, sampled, asked)
    if listing.mass > 1.0 + MASS_SLACK:
        raise malformed(f"its top_logprobs add up to a probability of {listing.mass:.4g}, more than 1")
    return listing


def _entry(entry: object, where: str, secrets: Iterable[str]) -> tuple[str, float]:
    if not isinstance(entry, dict):
        raise malformed(f"{where} is {_kind(entry)}, not an object")
    token, logprob = entry.get("token"), entry.get("logprob")
    if not isinstance(token, str):
        raise malformed(f"{where}.token is {_kind(token)}, not text")
    if len(token) > MAX_TOKEN_CHARS:  # listed tokens are stored too (the reply cache): bounded as a reply is
        raise malformed(f"{where}.token is {len(token):,} characters long (more than {MAX_TOKEN_CHARS:,}), not a token")
    if isinstance(logprob, bool) or not isinstance(logprob, int | float):
        raise malformed(f"{where}.logprob is {_kind(logprob)}, not a number")
    try:
        value = float(logprob)
    except OverflowError:
        value = math.nan
    if math.isnan(value) or value > LOGPROB_SLACK:
        raise malformed(f"{where}.logprob is {str(logprob)[:20]}, not a log-probability (<= 0)")
    return scrub(token, secrets), min(value, 0.0)

"""Every option's probability from an OpenAI-compatible server, not only the top 20's.

A chat completion lists at most ~20 alternatives at the answer position. A scale token outside
them used to count as 0 and the rest was renormalised: 7 of 16 story items read as ``{1: 1.0}``.
Here a spelling missing from the list is asked for on its own, with ``logit_bias`` +100 on its
token id so the server generates exactly that token and reports its log-probability -- where the
server offers what that needs:

- its token ids: the tokenizer endpoint of llama-cpp-python (``/extras/tokenize``), llama.cpp's
  server or vLLM (``/tokenize``);
- logprobs computed *before* the bias (llama.cpp, vLLM). This is checked once per server on a
  token whose probability is already known; a server that ignores the bias, or reports biased
  logprobs, is not asked again.

Each such value is checked against what the first reply said (a token it did not list cannot be
more probable than the last one it listed; the other tokens' log-probabilities must not move).
Whatever cannot be scored stays *unscored*, with a bound on the mass it can hold.
"""

from __future__ import annotations

import math
import statistics
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from tui_rater.judge.backends.api_reply import Listing
from tui_rater.judge.errors import JudgeError

BIAS = 100  # the largest bias OpenAI-compatible servers accept: the token is generated
# two log-probabilities of the same token in two replies agree within this (float32, batching)
AGREE = 0.02
# judge-level: this many replies in a row without a usable answer, and never one with, and the
# server is not one this judge can use (a server that ignores ``logprobs``, a proxy's error page)
UNUSABLE_STREAK = 12


@dataclass
class ServerFacts:
    """What one server (base URL + model) was found to offer; shared by a judge's workers."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    tokenizer_lock: threading.Lock = field(default_factory=threading.Lock)  # held while asking the server
    tokenizer: tuple[str, str] | None = None  # (path, style) of the endpoint that worked
    tokenizer_checked: bool = False
    baseline: list[int] = field(default_factory=list)  # what "" tokenizes to (a BOS token)
    token_ids: dict[str, list[int] | None] = field(default_factory=dict)
    bias: str = "unknown"  # unknown | before (logprobs before the bias: usable) | ignored | after | rejected
    sampler_extras: bool | None = None  # does it take top_k / min_p (None: not asked yet)
    good_replies: int = 0
    bad_streak: int = 0
    described: dict[str, Any] | None = None  # what the server says of the model (api_server.describe), once
    # one of several endpoints of a judge (``api_pool``): requests in flight now, and until when (monotonic
    # seconds) it is left alone after it did not answer
    in_flight: int = 0
    down_until: float = 0.0

    def note(self, good: bool) -> None:
        with self.lock:
            if good:
                self.good_replies += 1
                self.bad_streak = 0
            else:
                self.bad_streak += 1

    @property
    def unusable(self) -> bool:
        return self.good_replies == 0 and self.bad_streak >= UNUSABLE_STREAK


_SERVERS: dict[tuple[str, str], ServerFacts] = {}
_SERVERS_LOCK = threading.Lock()


def server_facts(base_url: str, model: str) -> ServerFacts:
    with _SERVERS_LOCK:
        return _SERVERS.setdefault((base_url, model), ServerFacts())


# (path under the server's root, how the text is sent): llama-cpp-python, llama.cpp, vLLM
TOKENIZERS = (("/extras/tokenize", "input"), ("/tokenize", "content"), ("/tokenize", "prompt"))

Post = Callable[[str, dict[str, Any]], dict[str, Any]]


def _tokenize_body(style: str, model: str, text: str) -> dict[str, Any]:
    if style == "input":
        return {"input": text}
    if style == "content":
        return {"content": text, "add_special": False}
    return {"model": model, "prompt": text, "add_special_tokens": False}


def _ids(reply: dict[str, Any]) -> list[int] | None:
    tokens = reply.get("tokens")
    if not isinstance(tokens, list) or not all(isinstance(t, int) and not isinstance(t, bool) for t in tokens):
        return None
    return [int(t) for t in tokens]


def token_ids(facts: ServerFacts, post: Post, root: str, model: str, text: str) -> list[int] | None:
    """The ids ``text`` tokenizes to on this server; None when the server has no tokenizer endpoint."""
    with facts.tokenizer_lock:
        if text in facts.token_ids:
            return facts.token_ids[text]
        if not facts.tokenizer_checked:
            facts.tokenizer_checked = True
            for path, style in TOKENIZERS:
                try:
                    baseline = _ids(post(root + path, _tokenize_body(style, model, "")))
                except JudgeError:
                    continue
                if baseline is not None and len(baseline) <= 2:
                    facts.tokenizer, facts.baseline = (path, style), baseline
                    break
        ids = None
        if facts.tokenizer is not None:
            path, style = facts.tokenizer
            try:
                ids = _ids(post(root + path, _tokenize_body(style, model, text)))
            except JudgeError:
                ids = None
            if ids is not None and ids[: len(facts.baseline)] == facts.baseline:
                ids = ids[len(facts.baseline) :]  # the BOS token llama-cpp-python adds
        facts.token_ids[text] = ids
        return ids


Ask = Callable[[dict[str, float]], Listing | None]


def biased_logprob(ask: Ask, listing: Listing, text: str, token_id: int) -> float | None:
    """The unbiased log-probability of one token, asked with +100 on it; None when not trustworthy."""
    biased = ask({str(token_id): BIAS})
    if biased is None or biased.sampled[0] != text:
        return None  # the bias was ignored, or the id is not this text's token
    shifts = [
        lp2 - lp1
        for (token, lp1) in _unique(listing.top)
        for (other, lp2) in _unique(biased.top)
        if token == other and token != text
    ]
    if shifts and abs(statistics.median(shifts)) > AGREE:
        return None  # the other tokens moved: these logprobs are after the bias
    logprob = biased.sampled[1]
    if logprob > math.log(max(listing.ceiling, 1e-300)) + AGREE:
        return None  # more probable than the last listed token, yet not listed: inconsistent
    return logprob


def _unique(top: list[tuple[str, float]]) -> list[tuple[str, float]]:
    counts: dict[str, int] = {}
    for token, _ in top:
        counts[token] = counts.get(token, 0) + 1
    return [(token, lp) for token, lp in top if counts[token] == 1]


def calibrate(facts: ServerFacts, ask: Ask, listing: Listing, single_id: Callable[[str], int | None]) -> None:
    """Find out once whether the server reports logprobs before the bias: bias a listed token."""
    for text, logprob in _unique(listing.top)[1:6]:  # not the most probable: the bias must change the pick
        token_id = single_id(text) if text.strip() else None
        if token_id is None:
            continue
        biased = ask({str(token_id): BIAS})
        if biased is None or biased.sampled[0] != text:
            verdict = "ignored"
        elif abs(biased.sampled[1] - logprob) <= AGREE:
            verdict = "before"
        else:
            verdict = "after"
        with facts.lock:
            if facts.bias == "unknown":  # not "rejected" meanwhile (a 400 to the bias)
                facts.bias = verdict
        return

"""What a distribution-mode rating must hold, computed without tui-rater's judge: the options' next-token
probabilities straight from llama.cpp (a ``Llama`` of its own) or from a server's full vocabulary over
plain HTTP, and the samples drawn from them as the README says (temperature, then nucleus top-p).

Helpers, not fixtures (no test module imports another): test_local, test_api and test_api_logprobs use them.
"""

from __future__ import annotations

import json
import math
import urllib.request
from pathlib import Path

import numpy as np
import pytest

from tui_rater.domain import protocols
from tui_rater.domain.tasks import Task

LIKERT = "12345"


def question(task: Task, attribute: str, fields: dict, mode: str = "distribution") -> list[dict]:
    """The one-turn chat the judge sends for an item's question (the prompt text is tested elsewhere)."""
    a = task.attribute(attribute)
    return [{"role": "user", "content": protocols.for_mode(task, a, mode).render(task, a, fields, "plain").text}]


# --- the truth from a server: its whole vocabulary over HTTP, not through our client ---------------


def post(url: str, body: dict) -> dict:
    request = urllib.request.Request(url, json.dumps(body).encode(), {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=60) as reply:
        return json.loads(reply.read())


def ask(url: str, messages: list[dict], **params) -> list[dict]:
    body = {"messages": messages, "max_tokens": 1, "logprobs": True, **params}
    return post(url + "/chat/completions", body)["choices"][0]["logprobs"]["content"]


def full_vocabulary(url: str, messages: list[dict]) -> dict[str, float]:
    """Every token's probability at the answer position (sampled until the reply is not end-of-text);
    the tiny model's vocabulary has 264 tokens: ``top_logprobs`` 400 lists all of them."""
    for seed in range(100):
        content = ask(url, messages, temperature=1.0, top_p=1.0, top_k=0, min_p=0.0, seed=seed, top_logprobs=400)
        if content:
            return {e["token"]: math.exp(e["logprob"]) for e in content[0]["top_logprobs"]}
    raise AssertionError("end-of-text 100 times")


def server_truth(url: str, messages: list[dict]) -> dict[str, float]:
    """Each option's probability as the server gives it: its bare and its space-led token."""
    vocabulary = full_vocabulary(url, messages)
    return {label: sum(vocabulary.get(s, 0.0) for s in (label, " " + label)) for label in LIKERT}


# --- the truth from llama.cpp itself: a fresh model, the whole prompt evaluated at once -----------


class LlamaTruth:
    """Option probabilities from llama-cpp-python's own ``Llama`` (its logits, softmax in float64):
    no prefix cache, no tui-rater code between the model and the numbers."""

    def __init__(self, model: Path):
        from llama_cpp import Llama

        self.llm = Llama(model_path=str(model), n_ctx=4096, logits_all=True, verbose=False)
        self.paths = {label: self._paths(label) for label in LIKERT}

    def _paths(self, label: str) -> list[tuple[int, ...]]:
        """How a reply may begin with ``label``: one token ("3", " 3", "\\n3"), or a whitespace token then the
        label's token (" " then "3") -- the paths distribution mode counts (issue 26, item 3)."""
        bare = self.llm.tokenize(label.encode(), add_bos=False, special=False)
        found: list[tuple[int, ...]] = []
        for text in (label, " " + label, "\n" + label, "\n\n" + label):
            ids = tuple(self.llm.tokenize(text.encode(), add_bos=False, special=False))
            spaced = len(ids) == 2 and list(ids[1:]) == bare and not self.llm.detokenize(list(ids[:1])).strip()
            if (len(ids) == 1 or spaced) and ids not in found:
                found.append(ids)
        return found

    def next_token(self, text: str, after: tuple[int, ...] = ()) -> np.ndarray:
        """Every token's probability after the prompt (the tiny GGUF has no chat template: BOS, then the text) and
        the tokens ``after`` it."""
        self.llm.reset()
        self.llm.eval([*self.llm.tokenize(text.encode(), add_bos=True, special=False), *after])
        logits = np.array(self.llm.scores[self.llm.n_tokens - 1], dtype=np.float64)
        p = np.exp(logits - logits.max())
        return p / p.sum()

    def __call__(self, text: str) -> dict[str, float]:
        p = self.next_token(text)
        found = {}
        for label, paths in self.paths.items():
            total = 0.0
            for path in paths:
                if len(path) == 1:
                    total += p[path[0]]
                elif p[path[0]] >= 1e-9:  # as the engine: a rarer lead adds less than that
                    total += p[path[0]] * self.next_token(text, path[:1])[path[1]]
            found[label] = float(total)
        return found

    def top(self, text: str, k: int) -> list[tuple[str, float]]:
        """The k most probable next tokens, as text, with their probabilities."""
        p = self.next_token(text)
        return [(self.llm.detokenize([int(t)]).decode("utf-8", "replace"), float(p[t])) for t in np.argsort(-p)[:k]]

    def close(self) -> None:
        self.llm.close()


# --- a stored distribution reading against the truth ----------------------------------------------


def nucleus(p: np.ndarray, temperature: float, top_p: float) -> np.ndarray:
    """p^(1/T) renormalised, then the smallest most-probable set reaching top_p (llama.cpp's order)."""
    q = p ** (1 / temperature)
    q /= q.sum()
    order = np.argsort(-q, kind="stable")
    kept = order[: int(np.searchsorted(np.cumsum(q[order]), top_p)) + 1]
    out = np.zeros_like(q)
    out[kept] = q[kept]
    return out / out.sum()


def check_reading(rows: list, truth: dict[str, float], *, temperature: float, top_p: float, rel: float) -> None:
    """One question's rows (samples 0..N-1, sample 0 first) against the model's own probabilities:
    the raw numbers are the model's, the distribution is them renormalised, the expected score is
    Σ k·p_k, and the N values are the draws of numpy's generator seeded with the stored seed over the
    tempered nucleus -- not a constant, not zeros, not another question's numbers."""
    details = json.loads(rows[0]["details"])
    assert [r["parse_status"] for r in rows] == ["ok"] * len(rows), details
    assert details["raw"] == pytest.approx(truth, rel=rel, abs=1e-12)
    raw = np.array([details["raw"][label] for label in LIKERT])
    assert details["mass"] == pytest.approx(raw.sum(), rel=1e-12)
    p = raw / raw.sum()
    assert details["distribution"] == pytest.approx(dict(zip(LIKERT, p)), rel=1e-12)
    assert details["expected"] == pytest.approx(float(np.dot(np.arange(1, 6), p)), rel=1e-12)
    q = nucleus(p, temperature, top_p)
    drawn = np.random.default_rng(details["seed"]).choice(5, size=len(rows), p=q) + 1
    assert [r["value"] for r in rows] == [float(v) for v in drawn]

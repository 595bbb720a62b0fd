import pytest

from tui_rater.judge.tiny_gguf import write_tiny_gguf


@pytest.fixture(scope="session")
def slower_gguf(tmp_path_factory):
    """Big enough that a judge run lasts across many kills (still random weights, made here)."""
    return write_tiny_gguf(tmp_path_factory.mktemp("slow") / "slower.gguf", n_embd=256, n_layers=6, n_ff=768, seed=3)

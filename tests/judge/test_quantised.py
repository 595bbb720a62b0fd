"""A quantised GGUF runs: llama.cpp's AMX weight layout segfaulted on every quantised model on CPUs with Intel AMX
(Q4_0, Q4_1, Q8_0, Q4_K_M; llama-cpp-python 0.3.36): the engine loads such models without it."""

from __future__ import annotations

import ctypes

import llama_cpp as lc
import pytest

from tests.support import STORIES, run_cli_process
from tui_rater.store.study import Study

LLAMA_FTYPE_MOSTLY_Q4_0 = 2
LLAMA_FTYPE_MOSTLY_Q8_0 = 7


@pytest.mark.parametrize("ftype", [LLAMA_FTYPE_MOSTLY_Q4_0, LLAMA_FTYPE_MOSTLY_Q8_0])
def test_a_quantised_model_judges(tmp_path, qwen_bos_gguf, ftype):
    model = tmp_path / f"q{ftype}.gguf"
    params = lc.llama_model_quantize_default_params()
    params.ftype = ftype
    assert lc.llama_model_quantize(str(qwen_bos_gguf).encode(), str(model).encode(), ctypes.byref(params)) == 0
    db = tmp_path / "s.db"
    study = Study.open(db)
    study.add_items(study.task("story"), STORIES[:2])
    study.close()
    result = run_cli_process(
        "judge", "--db", db, "--model", model, "--mode", "constrained", "--samples", "1", "--workers", "4"
    )
    assert result.returncode == 0, (result.returncode, result.stderr)  # was -11 (SIGSEGV) on an AMX CPU
    assert "8 of 8 readings usable" in result.stdout

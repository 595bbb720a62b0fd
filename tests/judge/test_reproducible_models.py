"""Bit-identical readings on real quantised models (issue 30, item 0).

Gemma 3 270M Q4_K_M holds Q4_K and Q6_K weights: llama.cpp computed them with a "tiled" product from 8 rows of a
batch and another one below, and (repacked on x86) 4 rows at a time and the rest one by one -- each with other bits.
Its readings then depended on the worker count: two identical 16-worker runs differed in 6 of 8 passes, 16 workers
against 1 in 8 of 8, and the 3 samples of one prompt stored 3 masses. SmolLM2-135M (Q4_1, Q8_0) never took those
kernels. Both models, 2 stories, through the queue and workers the CLI runs (``judge_study``).
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections import defaultdict

import pytest

from tests.support import STORIES
from tui_rater.domain.decoding import Decoding
from tui_rater.judge.spec import JudgeSpec, provenance
from tui_rater.service.judging import judge_study
from tui_rater.store.study import Study

pytestmark = pytest.mark.slow  # real models, three runs each: a minute or two on two CPU cores


def _stored(path, spec: JudgeSpec, workers: int) -> tuple[list[tuple], str]:
    """Judge 2 stories into a new study file: its ratings as stored, by job (the details JSON as its bytes), and
    the judge's label-making name."""
    study = Study.open(path)
    try:
        study.add_items(study.task("story"), STORIES[:2])
        run = judge_study(study, spec.validate(), ["story"], workers=workers)
        assert run.progress.fatal is None, run.progress.fatal
        rows = study._db.conn.execute(
            "SELECT item_key, attribute, sample, value, raw, parse_status, details FROM ratings "
            "WHERE rater_id = ? ORDER BY item_key, attribute, sample",
            [run.plan.rater.id],
        ).fetchall()
        name = run.plan.rater.name
    finally:
        study.close()
    return [tuple(r) for r in rows], name


def _differing(a: list[tuple], b: list[tuple]) -> list[tuple]:
    return [(x[:3], x[3:], y[3:]) for x, y in zip(a, b, strict=True) if x != y]


@pytest.mark.parametrize("mode", ["distribution", "text"])
@pytest.mark.parametrize("model", ["gemma_gguf", "smollm2_gguf"])
def test_real_models_store_the_same_bits_with_16_workers_and_1_and_run_after_run(
    tmp_path, request, monkeypatch, model, mode
):
    path = request.getfixturevalue(model)
    spec = JudgeSpec(str(path), decoding=Decoding(max_tokens=8), mode=mode, max_retries=0, min_mass=0.0)
    first, name = _stored(tmp_path / "first.db", spec, workers=16)
    again, _ = _stored(tmp_path / "again.db", spec, workers=16)
    alone, name_alone = _stored(tmp_path / "alone.db", spec, workers=1)
    assert len(first) == 2 * 4 * 3
    assert _differing(first, again) == []  # Gemma, before: 6 of 8 passes differed
    assert _differing(first, alone) == []  # Gemma, before: 8 of 8 (distribution), 24 of 24 replies (text)
    assert name_alone == name
    if mode == "distribution":
        assert all(r[3] is not None for r in first)
        by_prompt = defaultdict(set)
        for item, attribute, _sample, *_rest, details in first:
            reading = json.loads(details or "{}")  # a pass's facts are kept once, with its sample 0
            if "mass" in reading:
                by_prompt[item, attribute].add(json.dumps([reading["raw"], reading["mass"], reading["expected"]]))
        assert len(by_prompt) == 8
        # the samples of one prompt hold one distribution (Gemma, before: 3 masses for 5 of 8 questions)
        assert all(len(readings) == 1 for readings in by_prompt.values()), by_prompt
        assert len(set().union(*by_prompt.values())) > 1  # and the questions' distributions differ
        # TUI_RATER_NO_REPACK=1 (before: another kernel, masses up to 24 % apart, the same judge) changes nothing:
        # the weights are never repacked
        monkeypatch.setenv("TUI_RATER_NO_REPACK", "1")
        no_env, name_no_env = _stored(tmp_path / "no-env.db", spec, workers=16)
        assert name_no_env == name
        assert _differing(first, no_env) == []
    else:
        assert len({r[4] for r in first}) > 1  # real, different replies


def test_the_kernels_of_k_quant_weights_are_in_the_judges_identity(gemma_gguf, smollm2_gguf, qwen_gguf):
    """A model with K-quant (or x86-repackable) weights records the kernels that compute them, so its judge is
    not the one whose readings came from the batch-size-dependent kernels; SmolLM2 (Q4_1) and the float test
    models keep the identity they had (nothing they compute changed)."""
    from tui_rater.judge.engine.native import LAYOUT_NUMERICS, NUMERICS

    gemma = provenance(JudgeSpec(str(gemma_gguf)))["numerics"]
    assert gemma == {**NUMERICS, **LAYOUT_NUMERICS}
    assert provenance(JudgeSpec(str(smollm2_gguf)))["numerics"] == NUMERICS
    assert provenance(JudgeSpec(str(qwen_gguf)))["numerics"] == NUMERICS
    assert NUMERICS == {
        "flash_attn": False,
        "kv_unified": False,
        "type_k": "f16",
        "type_v": "f16",
        "rows_per_piece": "even",
    }


REFUSED = """
import sys
import llama_cpp
from llama_cpp import Llama

# llama.cpp computes a K-quant product of 8+ rows before tui-rater is imported: its tiled kernel is then on for
# the whole process (ggml reads GGML_CPU_TILED_MM once)
llm = Llama(sys.argv[1], n_ctx=64, verbose=False)
llm.eval(llm.tokenize(b"one two three four five six seven eight nine ten eleven twelve"))
from tui_rater.judge.backends.local import LocalBackend
from tui_rater.judge.errors import JudgeError
from tui_rater.judge.spec import JudgeSpec
try:
    LocalBackend(JudgeSpec(sys.argv[1]), parallel=2)
except JudgeError as exc:
    print(exc.kind, exc.message)
    raise SystemExit(3)
print("loaded")
"""


def test_a_model_whose_rows_still_depend_on_the_batch_size_is_refused(gemma_gguf, tmp_path):
    """The engine checks the loaded model on this CPU: one prompt in 8 rows and in smaller pieces must give the
    same logits, or the model is refused in one sentence (not judged with readings that depend on --workers)."""
    import os

    env = {**os.environ, "TUI_RATER_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("GGML_CPU_TILED_MM", None)  # as a fresh process has it (this one imported the engine: it is set here)
    result = subprocess.run(
        [sys.executable, "-c", REFUSED, str(gemma_gguf)], capture_output=True, text=True, timeout=600, env=env
    )
    assert result.returncode == 3, (result.stdout, result.stderr[-2000:])
    kind, message = result.stdout.strip().split(" ", 1)
    assert kind == "model_load"
    assert "rows differently by batch size" in message and "--workers" in message
    assert "\n" not in message

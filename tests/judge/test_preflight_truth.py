"""`judge --check` tells the truth (issue 26, items 2-4; issue 22, item 4): its verdict per mode is tested against
what a real run of that mode then stores, on a real base model (Gemma 3 270M, no chat template, a tokenizer that
writes " 3" as " " then "3") and on the generated Qwen2-vocabulary model; its scale mass is the run's, and both
count every tokenisation path of each option (checked against llama-cpp-python's own forward pass)."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.support import run_cli_process, story_study
from tui_rater.store.study import Study

pytestmark = pytest.mark.slow  # real model runs: a minute or two on two CPU cores

SCALE = [str(k) for k in range(1, 6)]
FLAGS = ("--task", "story", "--samples", "1", "--max-retries", "0", "--seed", "3")


def _check(db, model, mode, *flags):
    result = run_cli_process(
        "judge", "--db", db, "--model", model, "--mode", mode, *FLAGS, "--check", "--format", "json", *flags,
        timeout=600,
    )  # fmt: skip
    assert "Traceback" not in result.stderr, result.stderr
    return result, json.loads(result.stdout)


def _run(db, model, mode, *flags):
    result = run_cli_process("judge", "--db", db, "--model", model, "--mode", mode, *FLAGS, *flags, timeout=600)
    assert "Traceback" not in result.stderr, result.stderr
    study = Study.open(db)
    rows = study._db.conn.execute(
        "SELECT r.item_key, r.attribute, r.value, r.parse_status, r.details, ra.label FROM ratings r "
        "JOIN raters ra ON ra.id = r.rater_id WHERE ra.kind = 'llm' ORDER BY r.item_key, r.attribute"
    ).fetchall()
    from tui_rater.stats.sections.data import load_readings
    from tui_rater.stats.sections.readings import judge_readings

    ready = judge_readings(load_readings(study, "story"))
    study.close()
    return rows, ready


def _llama(model, **kwargs):
    """llama-cpp-python's own Llama, with the weights as the file stores them, as the engine loads them (no
    repacked layout; and the engine's import set GGML_CPU_TILED_MM=0 for this process: the same kernels)."""
    import llama_cpp
    from llama_cpp import Llama

    import tui_rater.judge.engine.native  # noqa: F401 - before llama.cpp's first product: GGML_CPU_TILED_MM

    default = llama_cpp.llama_cpp.llama_model_default_params

    def params():
        found = default()
        found.use_extra_bufts = False
        return found

    llama_cpp.llama_cpp.llama_model_default_params = params
    try:
        return Llama(str(model), verbose=False, **kwargs)
    finally:
        llama_cpp.llama_cpp.llama_model_default_params = default


def _llama_paths(model, prompt_tokens):
    """P(the reply begins with each digit), summed over its paths, from llama-cpp-python's own forward passes:
    the digit alone, " 3" / "\\n3" as one token, or a whitespace token then the digit."""
    llm = _llama(model, n_ctx=1024, logits_all=True)

    def next_p(tokens):
        llm.reset()
        llm.eval(tokens)
        logits = np.asarray(llm.scores[llm.n_tokens - 1], dtype=np.float64)
        p = np.exp(logits - logits.max())
        return p / p.sum()

    first = next_p(prompt_tokens)
    total, single_only = 0.0, 0.0
    for label in SCALE:
        bare = llm.tokenize(label.encode(), add_bos=False, special=False)
        for text in (label, " " + label, "\n" + label, "\n\n" + label):
            ids = llm.tokenize(text.encode(), add_bos=False, special=False)
            if len(ids) == 1:
                total += first[ids[0]]
                single_only += first[ids[0]]
            elif len(ids) == 2 and ids[1:] == bare and not llm.detokenize(ids[:1]).strip():
                total += first[ids[0]] * next_p([*prompt_tokens, ids[0]])[ids[1]]
    return total, single_only


def test_gemma_the_checks_mass_is_every_paths_and_the_runs(tmp_path, gemma_gguf):
    """Gemma answers " 3" as " " then "3": single tokens held ~1 % of the mass, every path ~18 %. The check's mass
    is llama-cpp-python's sum over the paths, and a distribution run stores the same number for the same prompt."""
    db = story_study(tmp_path / "g.db")
    _result, report = _check(
        db, gemma_gguf, "distribution", "--check-items", "1", "--workers", "1", "--max-tokens", "8"
    )
    first = report["checks"][0]
    assert first["option_tokens"]["3"] == ["'3'", "' '+'3'", "'\\n'+'3'", "'\\n\\n'+'3'"]
    vocab = _llama(gemma_gguf, vocab_only=True)
    tokens = vocab.tokenize(first["prompt"].encode(), add_bos=True, special=False)
    assert len(tokens) == first["tokens"]
    expected, single_only = _llama_paths(gemma_gguf, tokens)
    # llama-cpp-python's forward pass of this Q4_K model differs from the engine's by up to ~8 % in a probability
    # (p("\n") 0.589 vs 0.635 measured): the engine's own numbers are compared with the run's below, exactly
    assert first["mass"] == pytest.approx(expected, rel=0.15)
    assert single_only < 0.2 * expected  # what the check reported before: a fraction of the answer

    rows, _ = _run(db, gemma_gguf, "distribution", "--limit", "1", "--workers", "1")
    stored = {attribute: json.loads(details)["mass"] for _item, attribute, *_rest, details, _label in rows}
    checked = {c["attribute"]: c["mass"] for c in report["checks"]}
    assert stored.keys() == checked.keys()
    # one code path (LocalBackend.option_probabilities, every path), question after question: the same number as a
    # --workers 1 run stores (asked together, the check once read 0.236 where the run stored 0.273)
    for attribute, mass in checked.items():
        assert stored[attribute] == pytest.approx(mass, rel=1e-9), attribute


def test_gemma_the_checks_verdict_per_mode_is_what_the_run_gives(tmp_path, gemma_gguf):
    """A base model with no chat template: the check says no mode is ready and why (text replies that do not read,
    under 50 % of the mass on the scale); a text run and a constrained run of the same items are then not
    agreement-ready in the report -- the constrained one because of its mass before the grammar, not its replies."""
    db = story_study(tmp_path / "g.db")
    result, report = _check(db, gemma_gguf, "text", "--check-items", "2", "--max-tokens", "48")
    assert result.returncode == 1
    modes = report["modes"]
    assert set(modes) == {"text", "constrained", "distribution"}
    assert not any(m["ready"] for m in modes.values())
    assert modes["text"]["read_share"] < 0.7 and "checked replies" in modes["text"]["reason"]
    assert modes["constrained"]["mass"] < 0.5 and "before the constraint" in modes["constrained"]["reason"]
    assert report["verdict"] == "use a chat template" and report["recommended"] is None
    assert all(c["reply"] is not None and c["reply_status"] for c in report["checks"])

    rows, ready = _run(db, gemma_gguf, "text", "--limit", "2", "--max-tokens", "48")
    failures = sum(status != "ok" for *_x, status, _details, _label in rows)
    assert failures / len(rows) > 0.10  # as the check said: more typed failures than the report accepts
    assert not any(r.ready for r in ready.values())

    db2 = story_study(tmp_path / "g2.db")
    rows, ready = _run(db2, gemma_gguf, "constrained", "--limit", "2")
    assert all(status == "ok" for *_x, status, _details, _label in rows)  # the grammar made every reply valid ...
    masses = [json.loads(details)["mass"] for *_x, details, _label in rows]
    assert max(masses) < 0.5  # ... out of what the model did not mean to answer
    assert not any(r.ready for r in ready.values())  # and the report says so (it said "agreement-ready: yes")
    assert all("before the constraint" in r.reason for r in ready.values())  # the check's words
    assert all("put less than 0.5" in r.reason for r in ready.values())


def test_a_model_that_answers_after_a_space_is_ready_and_recommended(tmp_path):
    """The Qwen2 vocabulary writes " 3" as " " then "3" too: a model that puts its mass on " " and then on a digit
    is ready for distribution and constrained mode (it was "use text mode": single tokens held almost nothing);
    asked in text mode with a reply budget that cuts every answer, the check recommends distribution mode."""
    from tests.support import DATA
    from tui_rater.judge.tiny_gguf import BOS_TEMPLATE, write_tiny_gguf

    model = write_tiny_gguf(
        tmp_path / "space.gguf", vocab=DATA / "vocab" / "ggml-vocab-qwen2.gguf", n_embd=32, n_head=4, n_ff=64,
        f16=True, output_scale=0.6, seed=5, chat_template=BOS_TEMPLATE, favour={"Ġ": 7.6, **{d: 6.0 for d in SCALE}},
    )  # fmt: skip
    db = story_study(tmp_path / "q.db")
    result, report = _check(db, model, "text", "--check-items", "1", "--max-tokens", "1")
    first = report["checks"][0]
    assert "' '+'3'" in first["option_tokens"]["3"]
    vocab = _llama(model, vocab_only=True)
    expected, single_only = _llama_paths(model, vocab.tokenize(first["prompt"].encode(), add_bos=False, special=True))
    assert single_only < 0.5 <= first["mass"] == pytest.approx(expected, rel=1e-2)  # the space path decides
    assert report["modes"]["distribution"]["ready"] and report["modes"]["constrained"]["ready"]
    assert not report["modes"]["text"]["ready"]  # one token: " ", cut before the digit
    assert {c["reply_status"] for c in report["checks"]} <= {"truncated", "no_number"}
    assert report["verdict"] == "use --mode distribution" and report["recommended"] == "distribution"
    assert result.returncode == 1
    rows, ready = _run(db, model, "distribution", "--limit", "1")
    assert all(status == "ok" for *_x, status, _details, _label in rows)
    assert all(r.ready for r in ready.values())  # what the check recommended gives agreement-ready readings


def test_smollm2_instruct_the_checks_verdict_is_what_the_run_gives(tmp_path, smollm2_gguf):
    """An instruct model with its chat template, too small to answer on the scale: the check applies the template,
    finds under --min-mass on the scale and text replies that mostly do not read, and says no mode is ready; a
    text run of the same item then is not agreement-ready either."""
    db = story_study(tmp_path / "s.db")
    flags = ("--max-tokens", "64")
    result, report = _check(db, smollm2_gguf, "text", "--check-items", "1", *flags)
    assert report["template"] == "the model's" and "<|im_start|>" in report["checks"][0]["prompt"]
    assert result.returncode == 1 and not any(m["ready"] for m in report["modes"].values())
    assert report["modes"]["distribution"]["mass"] < 0.5
    rows, ready = _run(db, smollm2_gguf, "text", "--limit", "1", *flags)
    failures = sum(status != "ok" for *_x, status, _details, _label in rows)
    assert failures / len(rows) > 0.10 and not any(r.ready for r in ready.values())

"""`tui-rater judge … --check` (issue 13, item 12) through the real CLI: real llama.cpp on tiny GGUFs
around Qwen2's real vocabulary, and the loopback zoo for an API. Every number the check prints is
compared with an independent computation (llama-cpp-python's own tokenizer and logits, the zoo's
weights); the study file is compared byte for byte: a check stores nothing."""

from __future__ import annotations

import json
import math
import os

import numpy as np
import pytest

from tests import zoo
from tests.support import STORIES, digest, run_cli_process, story_study
from tui_rater.domain import protocols
from tui_rater.judge.tiny_gguf import BOS_TEMPLATE
from tui_rater.store.study import Study

SCALE = [str(k) for k in range(1, 6)]
ATTRIBUTES = ["grammaticality", "cohesiveness", "likability", "relevance"]


def _check(db, model, *flags):
    result = run_cli_process("judge", "--db", db, "--task", "story", "--model", model, "--check", *flags)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def _json_check(db, model, *flags):
    result = _check(db, model, "--format", "json", *flags)
    return result, json.loads(result.stdout)


def _first_prompt(db):
    study = Study.open(db)
    task = study.task("story")
    item = study.items("story")[0]
    attribute = task.attributes[0]
    text = protocols.of(attribute).render(task, attribute, item.fields, "plain", "original").text
    study.close()
    return text


def _llama_next_token(model, prompt_tokens):
    """llama-cpp-python's own forward pass (not the engine): probabilities of the next token."""
    from llama_cpp import Llama

    llm = Llama(str(model), n_ctx=2048, verbose=False, logits_all=True)  # (without it, scores stay zero)
    llm.eval(prompt_tokens)
    logits = np.asarray(llm.scores[llm.n_tokens - 1], dtype=np.float64)
    p = np.exp(logits - logits.max())
    return llm, p / p.sum()


def _scale_ids(llm):
    ids = set()
    for label in SCALE:
        for text in (label, " " + label):
            found = llm.tokenize(text.encode(), add_bos=False, special=False)
            if len(found) == 1:
                ids.add(found[0])
    return ids


def test_a_bos_template_gets_one_bos_and_the_mass_is_llama_cpps(tmp_path, qwen_bos_gguf):
    db = story_study(tmp_path / "check.db")
    before = digest(db)
    result, report = _json_check(db, qwen_bos_gguf, "--mode", "distribution", "--check-items", "1")
    assert digest(db) == before  # nothing stored: no judge, no job, no rating
    checks = report["checks"]
    assert [c["attribute"] for c in checks] == ATTRIBUTES
    assert {c["item"] for c in checks} == {"s0"}

    from llama_cpp import Llama
    from llama_cpp.llama_chat_format import Jinja2ChatFormatter

    vocab = Llama(str(qwen_bos_gguf), vocab_only=True, verbose=False)
    piece = lambda t: vocab.detokenize([t], special=True).decode()
    formatter = Jinja2ChatFormatter(
        BOS_TEMPLATE, eos_token=piece(vocab.token_eos()), bos_token=piece(vocab.token_bos())
    )
    rendered = formatter(messages=[{"role": "user", "content": _first_prompt(db)}]).prompt
    tokens = vocab.tokenize(rendered.encode(), add_bos=False, special=True)
    first = checks[0]
    assert first["prompt"] == rendered
    assert tokens[:2] != [vocab.token_bos()] * 2 and tokens[0] == vocab.token_bos()
    assert first["bos"] == 1 and first["tokens"] == len(tokens)
    assert report["template"] == "the model's"

    llm, p = _llama_next_token(qwen_bos_gguf, tokens)
    ids = _scale_ids(llm)
    expected = float(sum(p[t] for t in ids))
    assert first["mass"] == pytest.approx(expected, rel=1e-2, abs=1e-6)
    assert sorted(first["option_tokens"]) == SCALE and first["missing_options"] == []
    top = np.argsort(-p)[:5]
    assert [t for t, _ in first["top"]][:3] == [llm.detokenize([int(t)]).decode("utf-8", "replace") for t in top[:3]]
    # a random model puts almost nothing on the scale: its ratings would be noise, in every mode that reads it
    assert expected < 0.01
    assert not report["modes"]["distribution"]["ready"] and not report["modes"]["constrained"]["ready"]
    assert "before the constraint" in report["modes"]["constrained"]["reason"]
    assert report["verdict"] != "ready" and result.returncode == 1


def test_without_a_chat_template_the_verdict_asks_for_one(tmp_path, qwen_gguf):
    db = story_study(tmp_path / "check.db")
    result, report = _json_check(db, qwen_gguf, "--mode", "distribution", "--check-items", "1")
    assert report["template"] == "none"
    assert report["checks"][0]["prompt"] == _first_prompt(db)  # the query itself
    assert report["verdict"] == "use a chat template" and result.returncode == 1
    assert "--chat-template" in report["reason"]


def test_the_text_report_shows_the_prompt_the_tokens_and_one_verdict_line(tmp_path, qwen_bos_gguf):
    db = story_study(tmp_path / "check.db")
    result = _check(db, qwen_bos_gguf, "--mode", "distribution", "--check-items", "1")
    assert result.returncode == 1
    out = result.stdout
    assert "Story 0. The cat sat on the mat" in out  # the first item's prompt, as the model reads it
    lines = [line for line in out.splitlines() if line.startswith("s0 ")]
    assert [line.split(":")[0] for line in lines] == [f"s0 {a}" for a in ATTRIBUTES]
    assert all("tokens, BOS 1" in line and "mass on the scale " in line for line in lines)
    verdicts = [line for line in out.splitlines() if line.startswith("verdict: ")]
    assert verdicts == [verdicts[0]] and not verdicts[0].startswith("verdict: ready")
    modes = [line.split(":")[0] for line in out.splitlines() if line.startswith("mode ")]
    assert modes == ["mode distribution", "mode constrained", "mode text"]  # one verdict per mode
    # the report's words for the report's rule (domain/readiness.py)
    assert any(line.startswith("mode distribution: not agreement-ready — ") for line in out.splitlines())
    assert verdicts[0].startswith(("verdict: not agreement-ready — ", "verdict: use ")), verdicts


def test_a_model_that_answers_on_the_scale_is_ready(tmp_path):
    from tests.support import DATA
    from tui_rater.judge.tiny_gguf import write_tiny_gguf

    model = write_tiny_gguf(
        tmp_path / "digits.gguf", vocab=DATA / "vocab" / "ggml-vocab-qwen2.gguf", n_embd=32, n_head=4, n_ff=64,
        f16=True, output_scale=0.6, seed=5, chat_template=BOS_TEMPLATE, favour={label: 6.0 for label in SCALE},
    )  # fmt: skip
    db = story_study(tmp_path / "check.db")
    result, report = _json_check(db, model, "--mode", "distribution", "--check-items", "1")
    masses = [c["mass"] for c in report["checks"]]
    assert min(masses) > 0.5
    assert report["verdict"] == "ready" and result.returncode == 0, report["reason"]


def test_a_prompt_that_does_not_fit_the_context_is_not_ready(tmp_path, qwen_bos_gguf):
    db = story_study(tmp_path / "check.db")
    result, report = _json_check(db, qwen_bos_gguf, "--mode", "text", "--n-ctx", "128", "--check-items", "1")
    longest = max(c["tokens"] for c in report["checks"])
    assert longest + report["max_tokens"] > 128
    assert report["verdict"] == "not ready" and result.returncode == 1
    assert f"{longest:,} tokens" in report["reason"] and "--n-ctx" in report["reason"]


def test_item_text_is_shown_literally(tmp_path, qwen_gguf):
    hostile = [{**STORIES[0], "story": "Evil \x1b]52;c;Y3VybCBldmls\x07 story [bold]x[/] \x1b[2J end."}]
    db = story_study(tmp_path / "check.db", hostile)
    result = _check(db, qwen_gguf, "--mode", "text", "--check-items", "1")
    assert "\x1b" not in result.stdout and "\x07" not in result.stdout
    assert "[bold]x[/]" in result.stdout  # no markup read from data


def test_an_api_judge_reads_the_servers_logprobs(tmp_path, serve_zoo):
    _, url = serve_zoo()
    stories = [{**STORIES[0], "story": "CASE=good. A story."}]
    db = story_study(tmp_path / "check.db", stories)
    before = digest(db)
    env = {"OPENAI_API_KEY": "sk-test"}
    result = run_cli_process(
        "judge", "--db", db, "--task", "story", "--model", "api:zoo", "--base-url", url, "--mode", "distribution",
        "--check", "--format", "json", env=env,
    )  # fmt: skip
    assert "Traceback" not in result.stderr, result.stderr
    report = json.loads(result.stdout)
    assert digest(db) == before
    weights = zoo.weights_of("good")
    total = sum(weights.values())
    # the top 20 the server lists: the five digits (0.9 in all), A, B, Yes, No, nine fillers (down to 1.2e-4),
    # then two of the five spaced digits (1e-4 each); the three left out hold too little (3e-4 < 0.5 %) to
    # ask for one by one, so the mass is a lower bound, and says so
    expected = (sum(weights[label] for label in SCALE) + 2 * weights[" 1"]) / total
    for check in report["checks"]:
        assert check["tokens"] is None and check["bos"] is None
        assert check["mass"] == pytest.approx(expected, rel=1e-9) and check["mass_is_lower_bound"] is True
    assert math.isclose(expected, 0.88212, abs_tol=1e-5)  # (0.9 + 2e-4) / 1.0205
    assert report["verdict"] == "ready" and result.returncode == 0


def test_a_gguf_llama_cpp_cannot_load_is_one_sentence_not_a_bug(tmp_path):
    """A file with a valid GGUF header (version 3, no tensors, no keys) passes the header check; llama.cpp then
    refuses it. The check says so in one sentence (exit 2), as `judge` without --check does, not 'a bug'."""
    model = tmp_path / "empty.gguf"
    model.write_bytes(b"GGUF" + (3).to_bytes(4, "little") + bytes(16) + bytes(1000))
    db = story_study(tmp_path / "check.db")
    before = digest(db)
    result = _check(db, model)
    assert result.returncode == 2, result.stderr
    assert "llama.cpp could not load" in result.stderr and "a bug" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert digest(db) == before


@pytest.mark.parametrize("mode", ["text", "constrained"])
def test_an_api_server_that_cannot_be_reached_is_not_ready(tmp_path, mode):
    """Text and constrained modes read no logprobs, but the check still asks the server: one that refuses
    the connection is not 'ready' (it was, exit 0, with no request sent)."""
    from tests.support import free_port

    db = story_study(tmp_path / "check.db")
    before = digest(db)
    url = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there
    result = run_cli_process(
        "judge", "--db", db, "--task", "story", "--model", "api:m", "--base-url", url, "--mode", mode,
        "--check", "--check-items", "1", "--format", "json", env={**os.environ, "OPENAI_API_KEY": "sk-test"},
    )  # fmt: skip
    assert "Traceback" not in result.stderr, result.stderr
    report = json.loads(result.stdout)
    assert report["verdict"] == "not ready" and result.returncode == 1
    first, *rest = report["checks"]
    assert first["error"].startswith("connection: ") and rest  # the server is not tried again for each question
    assert all(c["error"] == "not asked: the server did not answer an earlier question" for c in rest)
    assert digest(db) == before


def test_an_api_server_answering_garbage_is_not_ready_and_one_that_answers_is(tmp_path, fake_server):
    from tests.support import Script, ok_body

    db = story_study(tmp_path / "check.db")
    env = {**os.environ, "OPENAI_API_KEY": "sk-test"}
    flags = ("--mode", "text", "--check", "--check-items", "1", "--format", "json")
    garbage = Script([(200, {}, "\x1b[31m[bold]garbage[/]", 0)])
    url = fake_server(garbage)
    result = run_cli_process(
        "judge", "--db", db, "--task", "story", "--model", "api:m", "--base-url", url, *flags, env=env
    )
    report = json.loads(result.stdout)
    assert report["verdict"] == "not ready" and result.returncode == 1
    assert "not JSON" in report["checks"][0]["error"]
    answering = Script([(200, {}, ok_body("Rating: 4"), 0)])
    url = fake_server(answering)
    result = run_cli_process(
        "judge", "--db", db, "--task", "story", "--model", "api:m", "--base-url", url, *flags, env=env
    )
    report = json.loads(result.stdout)
    assert report["verdict"] == "ready" and result.returncode == 0, report["reason"]
    # one request per question, with the judge's prompt and reply budget, read as the run reads it
    assert len(answering.bodies) == len(ATTRIBUTES)
    assert _first_prompt(db) in [b["messages"][-1]["content"] for b in answering.bodies]  # asked together
    assert all(b["max_tokens"] == report["max_tokens"] for b in answering.bodies)
    assert {c["reply_status"] for c in report["checks"]} == {"ok"}
    # a server whose model does not answer on the scale is not ready in text mode: the check read its replies
    rambling = Script([(200, {}, ok_body("The story is about a cat."), 0)])
    url = fake_server(rambling)
    result = run_cli_process(
        "judge", "--db", db, "--task", "story", "--model", "api:m", "--base-url", url, *flags, env=env
    )
    report = json.loads(result.stdout)
    assert report["verdict"] == "not ready" and result.returncode == 1
    assert "none of its 4 checked replies could be read (no_number 4)" in report["reason"]  # the report's words


def test_the_json_report_escapes_control_and_bidi_characters(tmp_path, qwen_gguf):
    """As `info` and `judges --format json` do: C1 controls (U+009B is CSI) and bidi overrides are written as
    \\u escapes, never raw on the terminal."""
    hostile = [{**STORIES[0], "story": "a \x9b31m b \u202e c \x1b[2J d"}]
    db = story_study(tmp_path / "check.db", hostile)
    result, report = _json_check(db, qwen_gguf, "--mode", "text", "--check-items", "1")
    for raw in ("\x9b", "\u202e", "\x1b"):
        assert raw not in result.stdout
    assert "a \x9b31m b \u202e c \x1b[2J d" in report["checks"][0]["prompt"]  # the data itself, unchanged


def test_the_implicit_score_is_checked_with_its_own_question_and_variant(tmp_path, qwen_bos_gguf):
    """The implicit score asks its own yes/no question (variant plain); the explicit score's modes take v1-v5: the
    check gives a verdict for each mode that applies to the variant asked, never a mode that cannot be asked."""
    from tui_rater.store.study import Study as Opened

    db = tmp_path / "explicit.db"
    study = Opened.open(db)
    study.add_items(study.task("story-explicit"), STORIES[:1])
    study.close()
    flags = ("--task", "story-explicit", "--check", "--format", "json", "--max-tokens", "8")
    implicit = run_cli_process("judge", "--db", db, "--model", qwen_bos_gguf, "--mode", "implicit", *flags)
    report = json.loads(implicit.stdout)
    assert list(report["modes"]) == ["implicit"] and implicit.returncode == 1
    assert "on yes / no" in report["reason"] and report["checks"][0]["top"]
    explicit = run_cli_process(
        "judge", "--db", db, "--model", qwen_bos_gguf, "--mode", "text", "--variant", "v1", *flags
    )
    report = json.loads(explicit.stdout)
    assert list(report["modes"]) == ["text", "constrained"]  # no distribution over 0-100, no implicit under v1
    assert report["checks"][0]["option_tokens"]["7"]  # a 0-100 answer starts with a digit: its mass is the digits'

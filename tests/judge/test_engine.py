"""The batched llama.cpp engine behind local judges, on tiny random models with Qwen2's real vocabulary."""

from __future__ import annotations

import contextlib
import os
import re
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from tests.support import STORIES
from tui_rater.domain import protocols
from tui_rater.domain.decoding import Decoding
from tui_rater.domain.tasks import STORY
from tui_rater.judge.backends.local import LocalBackend
from tui_rater.judge.errors import JudgeError
from tui_rater.judge.spec import JudgeSpec


def story_prompts(items: int = 2) -> list[list[dict]]:
    """Every question of the first stories, as the judge asks them (Chiang & Lee App. D.2.2)."""
    return [
        [{"role": "user", "content": _question(attribute, {"prompt": s["prompt"], "story": s["story"]})}]
        for s in STORIES[:items]
        for attribute in STORY.attributes
    ]


def _question(attribute, fields: dict) -> str:
    return protocols.for_mode(STORY, attribute, "text").render(STORY, attribute, fields, "plain").text


def _grammar(task, attribute) -> str:
    return protocols.for_mode(task, attribute, "constrained").grammar(attribute, "plain")


def generate_all(backend, prompts, seeds, *, temperature: float, concurrent: bool, max_tokens: int = 8):
    tokens = [backend.prompt_tokens(m) for m in prompts]

    def one(i: int) -> list[int]:
        return backend.engine.generate(
            tokens[i], Decoding(max_tokens=max_tokens, temperature=temperature, top_p=0.9, seed=seeds[i]), grammar=None
        ).tokens

    if not concurrent:
        return [one(i) for i in range(len(prompts))]
    with ThreadPoolExecutor(len(prompts)) as pool:
        return list(pool.map(one, range(len(prompts))))


@pytest.mark.parametrize("temperature", [0.0, 1.0])
def test_batched_replies_equal_sequential_ones(qwen_gguf, temperature):
    """12 sequences decoded together reply token for token as one sequence at a time, for the same seeds: a
    sequence's logits do not depend on the batch (tests/judge/test_reproducible.py), greedy or sampled."""
    prompts = story_prompts(1) * 3  # three samples of each question
    seeds = list(range(len(prompts)))
    alone = LocalBackend(JudgeSpec(str(qwen_gguf)), parallel=1)
    try:
        sequential = generate_all(alone, prompts, seeds, temperature=temperature, concurrent=False)
    finally:
        alone.close()
    together = LocalBackend(JudgeSpec(str(qwen_gguf)), parallel=12)
    try:
        batched = generate_all(together, prompts, seeds, temperature=temperature, concurrent=True)
        assert together.engine.steps < len(prompts) * 8 / 4  # they really were decoded together
    finally:
        together.close()
    assert batched == sequential
    if temperature > 0:
        assert len({tuple(t) for t in batched[:8]}) == 8  # different seeds, different draws


def test_replies_equal_llama_cpp_python(qwen_gguf):
    """llama-cpp-python's Llama.generate (same sampler settings and seed) gives the same tokens on this model. Not
    a promise on every model: the first token is drawn from the same logits, to the bit, but Llama.generate
    decodes each later token as a batch of one row and llama.cpp's one-row products differ from ours in the last
    bits (~1e-7), so a draw landing that close to the boundary between two tokens can go the other way."""
    from llama_cpp import Llama

    prompts = story_prompts(1)
    backend = LocalBackend(JudgeSpec(str(qwen_gguf)), parallel=4)
    try:
        ours = {t: generate_all(backend, prompts, [7] * 4, temperature=t, concurrent=True) for t in (0.0, 1.0)}
        tokens = [backend.prompt_tokens(m) for m in prompts]
    finally:
        backend.close()
    llm = Llama(model_path=str(qwen_gguf), n_ctx=4096, verbose=False)
    try:
        for temperature, replies in ours.items():
            for prompt, reply in zip(tokens, replies):
                llm.reset()
                llm.set_seed(7)
                stream = llm.generate(prompt, temp=temperature, top_k=0, top_p=0.9, min_p=0.0, repeat_penalty=1.0)
                assert [next(stream) for _ in reply] == reply
    finally:
        llm.close()


def test_prefix_sharing_evaluates_an_item_once(qwen_gguf):
    """An item's 4 questions x 3 samples at once: instructions + story are evaluated once, not 12 times."""
    prompts = story_prompts(1) * 3
    backend = LocalBackend(JudgeSpec(str(qwen_gguf)), parallel=16)
    try:
        tokens = [backend.prompt_tokens(m) for m in prompts]
        with ThreadPoolExecutor(len(prompts)) as pool:
            list(pool.map(lambda t: backend.engine.probe(t), tokens))
        counts = backend.counts
    finally:
        backend.close()
    total = sum(map(len, tokens))
    distinct = len({tuple(t[: i + 1]) for t in tokens for i in range(len(t))})  # nodes of the prompts' trie
    assert counts.cached + counts.evaluated == total
    # each distinct token once, plus each request's own last token (its logits are needed)
    assert counts.evaluated <= distinct + len(prompts)
    assert counts.evaluated < total / 5


def test_a_conversation_turn_reuses_the_earlier_turns(qwen_bos_gguf):
    """--conversation: the next question's prompt extends the chat; only the new turn is evaluated."""
    backend = LocalBackend(JudgeSpec(str(qwen_bos_gguf)), parallel=4)
    try:
        chat = [story_prompts(1)[0][0]]
        reply = backend.complete(chat, Decoding(temperature=1.0, top_p=0.9, max_tokens=8, seed=1)).text
        chat += [{"role": "assistant", "content": reply}, story_prompts(1)[1][0]]
        before = backend.counts.evaluated
        backend.complete(chat, Decoding(temperature=1.0, top_p=0.9, max_tokens=8, seed=2))
        first_turn = len(backend.prompt_tokens(chat[:1]))
        assert backend.counts.evaluated - before < len(backend.prompt_tokens(chat)) - first_turn + 8
    finally:
        backend.close()


def test_many_threads_at_once(qwen_gguf):
    """40 threads, 8 sequences: replies, distributions, top tokens and constrained replies all come back right."""
    backend = LocalBackend(JudgeSpec(str(qwen_gguf)), parallel=8)
    prompts = story_prompts(2)
    likert = _grammar(STORY, STORY.attributes[0])  # the protocol's grammar: "1" | ... | "5"
    errors: list[BaseException] = []

    def work(i: int) -> None:
        try:
            messages = prompts[i % len(prompts)]
            kind = i % 4
            if kind == 0:
                reply = backend.complete(messages, Decoding(temperature=1.0, top_p=0.9, max_tokens=6, seed=i))
                assert reply.finish_reason in ("stop", "length")
            elif kind == 1:
                probs = backend.option_probabilities(messages, ["1", "2", "3", "4", "5"])
                assert 0 < sum(probs.values()) < 1
            elif kind == 2:
                top = backend.top_tokens(messages, 5)
                assert len(top) == 5 and top[0][1] >= top[-1][1]
            else:
                reply = backend.complete(
                    messages, Decoding(temperature=1.0, top_p=0.9, max_tokens=8, seed=i), grammar=likert
                )
                assert reply.text in {"1", "2", "3", "4", "5"}
        except BaseException as exc:  # reported below, on the test thread
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(40)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=120)
    finally:
        backend.close()
    assert not errors, errors
    assert not any(t.is_alive() for t in threads)


@pytest.mark.parametrize("model", ["qwen_gguf", "tiny_gguf"])
def test_grammar_constrained_replies_are_always_valid(model, request):
    """Constrained mode: every reply is in the answer space, whatever the sampler draws."""
    from tui_rater.domain.tasks import STORY_EXPLICIT

    backend = LocalBackend(JudgeSpec(str(request.getfixturevalue(model))), parallel=12)
    explicit = _grammar(STORY_EXPLICIT, STORY_EXPLICIT.attributes[0])  # 0-100 (Chen et al.'s explicit score)
    assert "[1-9] [0-9]" in explicit
    messages = story_prompts(1)[0]
    try:
        with ThreadPoolExecutor(24) as pool:
            replies = list(
                pool.map(
                    lambda s: backend.complete(
                        messages, Decoding(temperature=1.0, top_p=0.9, max_tokens=16, seed=s), grammar=explicit
                    ),
                    range(24),
                )
            )
    finally:
        backend.close()
    for reply in replies:
        assert re.fullmatch(r"100|[1-9][0-9]|[0-9]", reply.text), reply.text
        assert reply.finish_reason == "stop"
    if model == "qwen_gguf":  # (the byte-level model puts nearly all its mass on one number)
        assert len({r.text for r in replies}) > 1  # sampled, not one forced answer


def test_a_grammar_that_does_not_parse_is_a_typed_failure(qwen_gguf):
    backend = LocalBackend(JudgeSpec(str(qwen_gguf)), parallel=2)
    try:
        with pytest.raises(JudgeError) as info:
            backend.complete(
                story_prompts(1)[0],
                Decoding(temperature=1.0, top_p=0.9, max_tokens=4, seed=0),
                grammar='root ::= "1" | digit',
            )
        assert info.value.kind == "bad_request"
        assert backend.complete(story_prompts(1)[0], Decoding(temperature=0.0, top_p=0.9, max_tokens=2, seed=0)).text
    finally:
        backend.close()


def test_distribution_equals_a_single_sequence_computation(qwen_gguf):
    """Probabilities read from many sequences in one batch equal one prompt at a time, bit for bit, and the
    logits are llama-cpp-python's Llama.eval's (flash attention off, its default) bit for bit too."""
    from llama_cpp import Llama

    prompts = story_prompts(2)
    options = ["1", "2", "3", "4", "5"]
    together = LocalBackend(JudgeSpec(str(qwen_gguf)), parallel=8)
    try:
        with ThreadPoolExecutor(len(prompts)) as pool:
            batched = list(pool.map(lambda m: together.option_probabilities(m, options), prompts))
        tokens = [together.prompt_tokens(m) for m in prompts]
    finally:
        together.close()
    alone = LocalBackend(JudgeSpec(str(qwen_gguf)), parallel=1)
    try:
        sequential = [alone.option_probabilities(m, options) for m in prompts]
    finally:
        alone.close()
    truth = LocalBackend(JudgeSpec(str(qwen_gguf)), parallel=1)
    # every row's logits computed (logits_all), as the engine computes its outputs in pairs: by default Llama
    # computes the last row alone, a one-row product that takes another kernel on CPUs without AMX (2e-6 apart)
    llm = Llama(model_path=str(qwen_gguf), n_ctx=1024, verbose=False, logits_all=True)
    try:
        for prompt, probs, single in zip(tokens, batched, sequential):
            llm.reset()
            llm.eval(prompt)
            raw = _last_logits(llm)
            assert np.array_equal(raw, truth.engine.probe(prompt))
            logits = raw.astype(np.float64)
            p = np.exp(logits - logits.max())
            p /= p.sum()
            today = {o: _every_path(llm, prompt, o, p) for o in options}
            assert probs == single
            for option in options:
                # the same logits; the reading exponentiates in float32 (backends/local.py), this in float64
                assert probs[option] == pytest.approx(today[option], rel=1e-6, abs=1e-15)
    finally:
        llm.close()
        truth.close()
    assert all(0 < sum(p.values()) < 1 for p in batched)  # raw probabilities: not renormalised


def _last_logits(llm) -> np.ndarray:
    """The logits of the last token ``llm.eval`` decoded."""
    from llama_cpp import llama_get_logits_ith

    return np.ctypeslib.as_array(llama_get_logits_ith(llm._ctx.ctx, -1), shape=(llm.n_vocab(),)).copy()


def _every_path(llm, prompt: list[int], option: str, p: np.ndarray) -> float:
    """An option's probability as distribution mode counts it (issue 26, item 3): every single token that spells
    it after nothing, a space or newlines, and a whitespace token then the option's token, P(ws) x P(option | ws)."""
    bare = llm.tokenize(option.encode(), add_bos=False, special=False)
    paths: list[tuple[int, ...]] = []
    for text in (option, " " + option, "\n" + option, "\n\n" + option):
        ids = tuple(llm.tokenize(text.encode(), add_bos=False, special=False))
        spaced = len(ids) == 2 and list(ids[1:]) == bare and not llm.detokenize(list(ids[:1])).strip()
        if (len(ids) == 1 or spaced) and ids not in paths:
            paths.append(ids)
    total = 0.0
    for path in paths:
        if len(path) == 1:
            total += float(p[path[0]])
        elif p[path[0]] >= 1e-9:  # as the engine: a rarer lead adds less than that
            llm.reset()
            llm.eval([*prompt, path[0]])
            logits = _last_logits(llm).astype(np.float64)
            q = np.exp(logits - logits.max())
            total += float(p[path[0]] * q[path[1]] / q.sum())
    return total


def test_one_bos_with_a_bos_emitting_template_and_without_a_template(qwen_gguf, qwen_bos_gguf):
    """Issue 13: a template that begins with {{ bos_token }} must not give prompts two BOS tokens."""
    from llama_cpp import Llama

    messages = story_prompts(1)[0]
    for model, templated in ((qwen_bos_gguf, True), (qwen_gguf, False)):
        backend = LocalBackend(JudgeSpec(str(model)), parallel=1)
        try:
            bos = backend.model.bos
            assert backend.model.add_bos  # the model asks for a BOS, as Llama 3's and Gemma's GGUFs do
            rendered = backend.render(messages)
            assert rendered.startswith("<|endoftext|>") == templated  # Qwen2's BOS text
            tokens = backend.prompt_tokens(messages)
            assert tokens[0] == bos and tokens.count(bos) == 1
        finally:
            backend.close()
        if templated:  # what tokenizing with add_bos=True (the old way) did to the same text
            vocab = Llama(model_path=str(model), vocab_only=True, verbose=False)
            assert vocab.tokenize(rendered.encode(), add_bos=True, special=True)[:2] == [bos, bos]
            vocab.close()


def test_a_prompt_longer_than_the_context_is_a_typed_failure(qwen_gguf):
    backend = LocalBackend(JudgeSpec(str(qwen_gguf), n_ctx=64), parallel=2)
    long = [{"role": "user", "content": "word " * 200}]
    try:
        for call in (
            lambda: backend.complete(long, Decoding(temperature=1.0, top_p=0.9, max_tokens=4, seed=0)),
            lambda: backend.option_probabilities(long, ["1", "2"]),
            lambda: backend.top_tokens(long, 3),
        ):
            with pytest.raises(JudgeError) as info:
                call()
            assert info.value.kind == "context_overflow" and "never cut silently" in info.value.message
        # a prompt that fits but leaves no room for the reply
        edge = [{"role": "user", "content": " ".join(["word"] * 62)}]
        assert len(backend.prompt_tokens(edge)) == 63
        with pytest.raises(JudgeError, match="no room left"):
            backend.complete(edge, Decoding(temperature=1.0, top_p=0.9, max_tokens=4, seed=0))
        # the engine goes on
        reply = backend.complete(
            [{"role": "user", "content": "Hi"}], Decoding(temperature=0, top_p=0.9, max_tokens=3, seed=0)
        )
        assert reply.finish_reason == "length" and len(backend.model.tokenize(reply.text, special=False)) <= 3
    finally:
        backend.close()


def test_one_engine_per_model_shared_by_every_handle(qwen_gguf):
    first = LocalBackend(JudgeSpec(str(qwen_gguf)), parallel=4)
    second = LocalBackend(JudgeSpec(str(qwen_gguf), mode="distribution"), parallel=4)  # same model: same engine
    other = LocalBackend(JudgeSpec(str(qwen_gguf), n_ctx=512), parallel=2)  # another context size: its own
    try:
        assert first.engine is second.engine and other.engine is not first.engine
        first.close()
        first.close()  # idempotent
        assert second.complete(story_prompts(1)[0], Decoding(temperature=0, top_p=0.9, max_tokens=2, seed=0)).text
        engine = second.engine
        second.close()
        assert not engine._thread.is_alive()  # the last handle freed it
        third = LocalBackend(JudgeSpec(str(qwen_gguf)), parallel=4)
        assert third.engine is not engine
        third.close()
    finally:
        other.close()


def test_local_workers_share_one_engine_through_the_queue(story_study, qwen_gguf):
    """`judge --workers 8` on a local model: 8 sequences of one model, each item's prefix shared across workers."""
    from tui_rater.service.judging import judge_study

    spec = JudgeSpec(str(qwen_gguf), decoding=Decoding(max_tokens=6), max_retries=0).validate()
    run = judge_study(story_study, spec, ["story"], workers=8)
    threads, progress = run.threads, run.progress
    assert progress.fatal is None and progress.done == 4 * 4 * 3
    assert all(t.counts is threads[0].counts for t in threads)  # one engine, one count
    counts = threads[0].counts
    assert counts.cached > 5 * counts.evaluated  # the stories were evaluated once, not once per job
    rows = story_study._db.conn.execute(
        "SELECT count(*) FROM ratings WHERE rater_id = ?", [run.plan.rater.id]
    ).fetchone()[0]
    assert rows == 4 * 4 * 3


def _niceness() -> dict[int, int]:
    """This process's threads (Linux task ids) and their nice values, from /proc."""
    found = {}
    for task in Path("/proc/self/task").iterdir():
        with contextlib.suppress(OSError):  # a thread that ended meanwhile
            found[int(task.name)] = int((task / "stat").read_text().rsplit(")", 1)[1].split()[16])
    return found


@pytest.mark.skipif(sys.platform != "linux", reason="per-thread niceness is Linux's")
@pytest.mark.parametrize("background", [True, False])
def test_a_judge_behind_the_app_decodes_at_a_lower_priority(qwen_gguf, background):
    """In the app (background) the engine's thread and every thread llama.cpp computes with are niced by 10, so the
    screen's thread comes first; the callers' threads and a CLI judge's (not background) keep the process's. (The
    loading thread's warm-up decode leaves llama.cpp threads of its own, at its priority, idle after the load.)"""
    base = os.getpriority(os.PRIO_PROCESS, 0)
    backend = LocalBackend(JudgeSpec(str(qwen_gguf), n_ctx=1024), parallel=3, background=background)
    engine_thread = backend.engine._thread.native_id
    before = set(_niceness()) - {engine_thread}  # with the threads of the load's warm-up decode (the loader's)
    callers, seen = [], {}
    prompts = story_prompts(1)[:3]

    def ask(messages) -> None:
        callers.append(threading.get_native_id())
        backend.complete(messages, Decoding(temperature=1.0, top_p=0.9, max_tokens=48, seed=1))

    try:
        with ThreadPoolExecutor(3) as pool:
            asked = [pool.submit(ask, m) for m in prompts]
            while not all(f.done() for f in asked):
                seen.update(_niceness())  # while llama.cpp decodes: its threads are alive
            for f in asked:
                f.result()
    finally:
        backend.close()
    started = {tid: nice for tid, nice in seen.items() if tid not in before and tid not in callers}
    lowered = min(19, base + 10) if background else base
    assert started.get(engine_thread) == lowered
    assert len(started) >= 2 and set(started.values()) == {lowered}  # llama.cpp's own threads too
    assert all(seen[tid] == base for tid in callers if tid in seen)


def test_the_kv_bookkeeping_calls_keep_the_gil_and_are_llama_cpps_own():
    """seq_rm and the logits pointer take microseconds: called through ctypes.CDLL they release the GIL and
    must win it back from 16 busy workers (3x their CPU time between two decodes, llama.cpp idle meanwhile). They
    are bound through ctypes.PyDLL to the very same C functions llama-cpp-python calls."""
    import ctypes

    import llama_cpp as lc

    from tui_rater.judge.engine import native

    def address(function) -> int:
        return ctypes.cast(function, ctypes.c_void_p).value or 0

    for held, theirs in (
        (native._seq_rm, lc.llama_memory_seq_rm),
        (native._logits_ith, lc.llama_get_logits_ith),
    ):
        assert held._flags_ & ctypes._FUNCFLAG_PYTHONAPI, held  # type: ignore[attr-defined]
        assert not theirs._flags_ & ctypes._FUNCFLAG_PYTHONAPI  # type: ignore[attr-defined]
        assert address(held) == address(theirs) != 0
        assert (held.argtypes, held.restype) == (theirs.argtypes, theirs.restype)

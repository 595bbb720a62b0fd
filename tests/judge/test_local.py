"""The three scoring modes on a generated GGUF in real llama.cpp."""

from __future__ import annotations

import json
import re

import pytest

from tests.judge.distributions import LlamaTruth, check_reading, question
from tests.support import STORIES, judge, spec_of
from tui_rater.domain.decoding import Decoding
from tui_rater.judge import queue
from tui_rater.judge.spec import JudgeSpec, provenance, rater_name
from tui_rater.judge.worker import run_judge


def test_text_mode_stores_raw_replies_and_typed_failures(story_study, tiny_gguf):
    import hashlib
    from importlib import metadata

    from tui_rater.domain import protocols

    rater, _progress, rows = judge(
        story_study, JudgeSpec(str(tiny_gguf), decoding=Decoding(max_tokens=16), max_retries=1)
    )
    # the provenance, value by value: the model file's own SHA-256 (hashlib over its bytes), the library's version
    sha256 = hashlib.sha256(tiny_gguf.read_bytes()).hexdigest()
    assert rater.config == {
        "backend": "llama.cpp",
        "model_file": tiny_gguf.name,
        "model_sha256": sha256,
        "llama_cpp_python_version": metadata.version("llama-cpp-python"),
        "tui_rater_version": metadata.version("tui-rater"),
        "mode": "text",
        "variant": "plain",
        "samples": 3,
        "temperature": 1.0,
        "top_p": 0.9,
        "seed": 0,
        "conversation": False,
        "max_tokens": 16,
        "max_retries": 1,
        "min_mass": 0.5,
        "n_ctx": 4096,  # the tiny model's trained context
        "chat_template": None,
        # what makes a reading batch-invariant (tui_rater/judge/engine/native.py), part of the judge's identity
        "numerics": {
            "flash_attn": False,
            "kv_unified": False,
            "type_k": "f16",
            "type_v": "f16",
            "rows_per_piece": "even",
        },
        "base_url": None,
        "extra": {},
    }
    assert re.fullmatch(rf"tiny\.gguf@{sha256[:8]}/text/plain/T1/p0\.9/s0#[0-9a-f]{{6}}", rater.name), rater.name
    assert len(rows) == 4 * 4 * 3  # items x attributes x samples
    task, items = story_study.task("story"), {item.key: item for item in story_study.items()}
    for r in rows:
        details, attribute = json.loads(r["details"]), task.attribute(r["attribute"])
        protocol = protocols.for_mode(task, attribute, "text")
        # the stored value is the stored reply as the protocol reads it: a number, or a typed failure
        reading = protocol.read_reply(r["raw"], attribute, "plain", truncated=details["finish_reason"] == "length")
        assert (r["value"], r["parse_status"]) == (reading.value, reading.status), r["raw"]
        assert r["parse_status"] in ("ok", "no_number", "out_of_range", "ambiguous", "refusal", "truncated")
        prompt = protocol.render(task, attribute, items[r["item_key"]].fields, "plain")
        assert (details["template_id"], details["template_sha256"]) == (prompt.template_id, prompt.template_hash)
    # the random model writes gibberish with stray digits: read as more than one kind of failure
    assert len({r["parse_status"] for r in rows}) >= 2, [r["raw"] for r in rows]
    assert queue.counts(story_study, rater.id)["done"] == 48


def test_constrained_mode_only_valid_scores(story_study, tiny_gguf):
    _, _, rows = judge(story_study, JudgeSpec(str(tiny_gguf), decoding=Decoding(samples=2), mode="constrained"))
    assert len(rows) == 32
    assert all(r["parse_status"] == "ok" and r["value"] in (1, 2, 3, 4, 5) for r in rows)
    assert all(r["raw"].strip() in {"1", "2", "3", "4", "5"} for r in rows)
    assert all(r["value"] == float(r["raw"]) for r in rows)  # the digit the grammar let the model write
    assert len({r["value"] for r in rows}) > 1  # sampled (T 1) from the model: not one constant answer
    # what the model meant to answer before the grammar forced it: the scale's next-token mass, a probability
    assert all(0 < json.loads(r["details"])["mass"] <= 1 for r in rows)


def test_distribution_mode_one_pass_n_samples(story_study, tiny_gguf):
    # the random test model puts almost no probability on "1".."5": min_mass 0 reads it anyway
    rater, _progress, rows = judge(
        story_study, JudgeSpec(str(tiny_gguf), decoding=Decoding(samples=5), mode="distribution", min_mass=0)
    )
    assert len(rows) == 4 * 4 * 5
    assert queue.counts(story_study, rater.id)["done"] == 16  # one job (forward pass) per question
    task, truth = story_study.task("story"), LlamaTruth(tiny_gguf)
    try:
        for item in story_study.items("story"):
            for attribute in task.attribute_names:
                question_rows = [r for r in rows if (r["item_key"], r["attribute"]) == (item.key, attribute)]
                # llama.cpp's own logits for the whole prompt, evaluated afresh (no shared KV prefix)
                text = question(task, attribute, item.fields)[0]["content"]
                check_reading(question_rows, truth(text), temperature=1.0, top_p=0.9, rel=1e-3)
    finally:
        truth.close()


def test_same_seed_same_ratings(tmp_path, tiny_gguf):
    """The same judge and --seed give the same replies in another file; every other job draws its own stream.

    Each reply is 16 tokens sampled at T 1, top-p 0.9 from the tiny model: two independent draws for one
    prompt coincide with probability E[P(reply)] ~ 1e-5 (measured over the 16 story prompts, 5 draws each),
    so the 40 inequalities below all hold unless two jobs share a seed (then they fail with certainty).
    """
    from tui_rater.store.study import Study

    def run(name: str, **changes) -> tuple[dict, dict]:
        study = Study.open(tmp_path / f"{name}.db")
        study.add_items(study.task("story"), STORIES[:2])
        settings = {"max_tokens": 16, "samples": 2, "seed": 11, "max_retries": 0, **changes}
        spec = spec_of(str(tiny_gguf), **settings)
        _, _, rows = judge(study, spec)
        ids = {item.key: item.id for item in study.items()}
        jobs = [(ids[r["item_key"]], r["attribute"], r["sample"]) for r in rows]
        return dict(zip(jobs, (r["raw"] for r in rows))), dict(
            zip(jobs, (json.loads(r["details"])["seed"] for r in rows))
        )

    replies, seeds = run("first")
    assert len(replies) == 2 * 4 * 2
    assert run("again") == (replies, seeds)  # the same judge: the same seeds, the same replies
    assert len(set(seeds.values())) == len(seeds)  # each item, question and sample its own seed
    for (item, attribute, sample), reply in replies.items():
        if sample == 1:  # the same prompt as sample 0: only the seed differs
            assert reply != replies[item, attribute, 0], (item, attribute)
    other_seed, _ = run("seed12", seed=12)
    assert all(other_seed[job] != reply for job, reply in replies.items())
    # another judge configuration with the same --seed: were the seed not derived from the configuration,
    # its 24 tokens would begin with the 16 above (the same draws from the same logits)
    longer, _ = run("longer", max_tokens=24)
    assert not any(longer[job].startswith(reply) for job, reply in replies.items())


def test_conversation_mode_asks_in_order(story_study, tiny_gguf):
    from llama_cpp import Llama

    from tui_rater.judge.backends.local import LocalBackend
    from tui_rater.service.judging import judge_study

    spec = JudgeSpec(
        str(tiny_gguf), decoding=Decoding(samples=1, max_tokens=16), conversation=True, max_retries=0
    ).validate()
    run = judge_study(story_study, spec, ["story"], workers=1)
    assert run.progress.fatal is None and queue.counts(story_study, run.plan.rater.id)["done"] == 4  # a chat per item
    rows = list(story_study._db.query("SELECT * FROM ratings WHERE rater_id = ?", [run.plan.rater.id]))
    assert len(rows) == 16
    # the paper's chat: question 1, reply 1, question 2, ... in the task's order (no chat template: the
    # turns joined by blank lines). Each stored reply must be what the model says to exactly that chat with
    # its seed, replayed on a fresh backend in the worker's order: another question last gives 16 other
    # sampled tokens (two draws coincide with probability ~1e-5, test_same_seed_same_ratings). The random
    # model hardly looks back, so a dropped reply in the history may leave the draws as they were: the
    # prompts' total length, counted by the worker's backend, is checked against the chats' too.
    task, backend = story_study.task("story"), LocalBackend(spec)
    tokenizer = Llama(model_path=str(tiny_gguf), vocab_only=True, verbose=False)
    prompt_tokens = 0
    try:
        for item in story_study.items("story"):
            chat: list[dict] = []
            for attribute in task.attribute_names:
                (row,) = [r for r in rows if (r["item_key"], r["attribute"]) == (item.key, attribute)]
                chat += question(task, attribute, item.fields, mode="text")
                text = "\n\n".join(turn["content"] for turn in chat)
                prompt_tokens += len(tokenizer.tokenize(text.encode(), add_bos=True, special=False))
                seed = json.loads(row["details"])["seed"]
                replay = backend.complete(chat, Decoding(temperature=1.0, top_p=0.9, max_tokens=16, seed=seed))
                assert replay.text == row["raw"], (item.id, attribute)
                chat.append({"role": "assistant", "content": row["raw"]})
    finally:
        backend.close()
        tokenizer.close()
    (worker,) = run.threads
    assert worker.counts.cached + worker.counts.evaluated == prompt_tokens


def test_identical_requests_answered_from_the_store(story_study, tiny_gguf):
    spec = JudgeSpec(str(tiny_gguf), decoding=Decoding(max_tokens=8, samples=1))
    rater, first, rows = judge(story_study, spec)
    assert first.cached == 0
    # forget the results but keep the stored replies: a re-run recomputes nothing
    story_study._db.conn.execute("DELETE FROM ratings WHERE rater_id = ?", [rater.id])
    story_study._db.conn.execute("UPDATE jobs SET status = 'queued', attempts = 0 WHERE rater_id = ?", [rater.id])
    _, second, again = judge(story_study, spec)
    assert second.cached >= 16
    assert [r["raw"] for r in again] == [r["raw"] for r in rows]


def test_prefix_of_one_item_is_reused(story_study, tiny_gguf):
    from tui_rater.domain import protocols
    from tui_rater.judge.backends.local import LocalBackend

    backend = LocalBackend(JudgeSpec(str(tiny_gguf)))
    task = story_study.task("story")
    item = story_study.items("story")[0]
    for attribute in task.attributes:
        prompt = protocols.of(attribute).render(task, attribute, item.fields, "plain")
        messages = [{"role": "user", "content": prompt.text}]
        backend.option_probabilities(messages, ["1", "2", "3", "4", "5"])
    # the instruction block and story were evaluated once; later questions only their suffix
    assert backend.counts.cached > 2 * backend.counts.evaluated / 3
    backend.close()


def test_story_longer_than_the_context_is_a_typed_failure(tmp_path, tiny_gguf):
    from tui_rater.store.study import Study

    study = Study.open(tmp_path / "long.db")
    study.add_items(study.task("story"), [{"id": "long", "system": None, "prompt": "P", "story": "word " * 900}])
    spec = JudgeSpec(str(tiny_gguf), decoding=Decoding(samples=1), n_ctx=512).validate()
    config = provenance(spec)
    rater = study.judge(rater_name(spec, config), config)
    queue.enqueue(study, rater.id, [study.items()[0].key], [("likability", "", 0)])
    threads, _progress, _ = run_judge(study.path, rater.id, spec, config)
    for t in threads:
        t.join(timeout=60)
    failed = queue.failures(study)
    assert len(failed) == 1 and failed[0]["error_kind"] == "context_overflow"
    assert "never cut silently" in failed[0]["last_error"]


def test_corrupt_or_missing_model(tmp_path):
    from tui_rater.domain.errors import UserError

    with pytest.raises(UserError, match="does not exist"):
        JudgeSpec(str(tmp_path / "none.gguf")).validate()
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"not a model at all")
    with pytest.raises(UserError, match="not a GGUF"):
        JudgeSpec(str(bad)).validate()
    truncated = tmp_path / "trunc.gguf"
    truncated.write_bytes(b"GGUF" + b"\x03\x00\x00\x00" + b"\x00" * 40)
    from tui_rater.judge.backends.local import LocalBackend
    from tui_rater.judge.errors import JudgeError

    with pytest.raises(JudgeError) as info:
        LocalBackend(JudgeSpec(str(truncated)).validate())
    assert info.value.kind == "model_load"


def test_the_source_recorded_is_the_file_loaded_even_when_its_link_moves(tmp_path, tiny_gguf):
    """A judge's source (judge_sources) is the file llama.cpp loaded, resolved once: a symlink re-pointed while the
    judge runs does not change what answers, so it must not change what is recorded either."""
    from tui_rater.judge import sources
    from tui_rater.judge.backends.local import LocalBackend
    from tui_rater.judge.tiny_gguf import write_tiny_gguf

    other = write_tiny_gguf(tmp_path / "other.gguf", seed=8)
    link = tmp_path / "judge.gguf"
    link.symlink_to(tiny_gguf)
    spec = JudgeSpec(str(link), mode="distribution")
    question = [{"role": "user", "content": "Rate the story from 1 to 5."}]
    first = LocalBackend(spec, parallel=1)
    try:
        link.unlink()
        link.symlink_to(other)
        assert sources.seen(spec, first) == [(str(tiny_gguf.resolve()), "", "")]
        second = LocalBackend(spec, parallel=1)  # the link names another file now: that file, its own engine
        try:
            assert second.source == str(other.resolve()) and second.engine is not first.engine
        finally:
            second.close()
    finally:
        first.close()
    # both engines are freed: the first file, named again, is loaded again (not a closed engine left behind)
    link.unlink()
    link.symlink_to(tiny_gguf)
    third = LocalBackend(spec, parallel=1)
    try:
        assert sum(third.option_probabilities(question, ["1", "2", "3", "4", "5"]).values()) > 0
    finally:
        third.close()


def test_a_worker_that_finds_nothing_to_do_loads_no_model(story_study, tiny_gguf):
    """A backend is made at a worker's first job: workers that find the queue drained by the others load nothing
    (under load, a late worker reloaded the model the others had just released: two loads, two KV caches)."""
    from tui_rater.judge.worker import make_backend
    from tui_rater.service.judging import judge_study

    made: list[JudgeSpec] = []

    def counted(spec: JudgeSpec):
        made.append(spec)
        return make_backend(spec)

    spec = JudgeSpec(str(tiny_gguf), mode="constrained", decoding=Decoding(samples=1), max_retries=0).validate()
    run = judge_study(story_study, spec, ["story"], workers=1, limit=1, backend_factory=counted)
    assert run.progress.done == 4 and len(made) == 1
    again = judge_study(story_study, spec, ["story"], workers=4, limit=1, backend_factory=counted)
    assert again.progress.done == 0 and not again.progress.fatal
    assert len(made) == 1  # nothing to do: no worker made a backend

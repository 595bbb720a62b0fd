"""The three scoring modes on a generated GGUF in real llama.cpp."""

from __future__ import annotations

import pytest

from tests.support import STORIES, judge
from tui_rater.judge import queue
from tui_rater.judge.spec import JudgeSpec, provenance, rater_name
from tui_rater.judge.worker import run_judge


def test_text_mode_stores_raw_replies_and_typed_failures(story_study, tiny_gguf):
    rater, _progress, rows = judge(story_study, JudgeSpec(str(tiny_gguf), max_tokens=16, max_retries=1))
    assert len(rows) == 4 * 4 * 3  # items x attributes x samples
    assert all(r["raw"] is not None for r in rows)
    for r in rows:
        if r["parse_status"] == "ok":
            assert 1 <= r["value"] <= 5
        else:
            assert r["value"] is None and r["parse_status"] in ("no_number", "out_of_range", "ambiguous", "refusal")
    assert queue.counts(story_study, rater.id)["done"] == 48
    assert rater.config["model_sha256"] and rater.config["llama_cpp_python_version"]
    assert "template_id" in __import__("json").loads(rows[0]["details"])


def test_constrained_mode_only_valid_scores(story_study, tiny_gguf):
    _, _, rows = judge(story_study, JudgeSpec(str(tiny_gguf), mode="constrained", samples=2))
    assert len(rows) == 32
    assert all(r["parse_status"] == "ok" and r["value"] in (1, 2, 3, 4, 5) for r in rows)
    assert all(r["raw"].strip() in {"1", "2", "3", "4", "5"} for r in rows)


def test_distribution_mode_one_pass_n_samples(story_study, tiny_gguf):
    import json

    # the random test model puts almost no probability on "1".."5": min_mass 0 reads it anyway
    rater, _progress, rows = judge(story_study, JudgeSpec(str(tiny_gguf), mode="distribution", samples=5, min_mass=0))
    assert len(rows) == 4 * 4 * 5
    assert queue.counts(story_study, rater.id)["done"] == 16  # one job (forward pass) per question
    first = json.loads(rows[0]["details"])
    assert sum(first["distribution"].values()) == pytest.approx(1.0)
    assert set(first["distribution"]) == {"1", "2", "3", "4", "5"}
    assert 1 <= first["expected"] <= 5 and 0 < first["mass"] <= 1
    assert all(r["value"] in (1, 2, 3, 4, 5) for r in rows)


def test_same_seed_same_ratings(tmp_path, tiny_gguf):
    from tui_rater.store.study import Study

    values = []
    for run in range(2):
        study = Study.open(tmp_path / f"run{run}.db")
        study.add_items(study.task("story"), STORIES[:2])
        _, _, rows = judge(study, JudgeSpec(str(tiny_gguf), max_tokens=8, samples=2, seed=11))
        values.append([(r["attribute"], r["sample"], r["raw"]) for r in rows])
    assert values[0] == values[1]


def test_conversation_mode_asks_in_order(story_study, tiny_gguf):
    rater, _, rows = judge(story_study, JudgeSpec(str(tiny_gguf), mode="constrained", samples=1, conversation=True))
    assert queue.counts(story_study, rater.id)["done"] == 4  # one chat per item
    assert len(rows) == 16 and {r["attribute"] for r in rows} == {
        "grammaticality",
        "cohesiveness",
        "likability",
        "relevance",
    }


def test_identical_requests_answered_from_the_store(story_study, tiny_gguf):
    spec = JudgeSpec(str(tiny_gguf), max_tokens=8, samples=1)
    rater, first, rows = judge(story_study, spec)
    assert first.cached == 0
    # forget the results but keep the stored replies: a re-run recomputes nothing
    story_study.db.conn.execute("DELETE FROM ratings WHERE rater_id = ?", [rater.id])
    story_study.db.conn.execute("UPDATE jobs SET status = 'queued', attempts = 0 WHERE rater_id = ?", [rater.id])
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
    spec = JudgeSpec(str(tiny_gguf), n_ctx=512, samples=1).validate()
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

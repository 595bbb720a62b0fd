"""`judge --attribute NAME`: only the questions named are asked (a question at a time, e.g. to spend a small model's
CPU time on one question); an unknown name and --conversation are one sentence each, and the study is untouched."""

from __future__ import annotations

import json

from tests.support import digest, story_study

FLAGS = ("--task", "story", "--samples", "1", "--max-retries", "0", "--max-tokens", "4", "--limit", "2")


def test_only_the_named_questions_are_judged(cli, tmp_path, tiny_gguf):
    db = story_study(tmp_path / "s.db")
    code, _, err = cli("judge", "--db", db, "--model", tiny_gguf, *FLAGS, "--attribute", "likability", "--as", "lead")
    assert code in (0, 1), err  # 1: the random model's replies are not agreement-ready
    assert "2 new jobs" in err, err  # 2 items x 1 question x 1 sample, not x 4 questions
    out = tmp_path / "judgements.jsonl"
    assert cli("export", "--what", "judgements", "--db", db, "--out", out)[0] == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(rows) == 2 and {row["attribute"] for row in rows} == {"likability"}
    # two names: both questions, and the first's jobs are not queued again (the same judge)
    code, _, err = cli(
        "judge", "--db", db, "--model", tiny_gguf, *FLAGS, "--attribute", "likability", "--attribute", "relevance",
        "--as", "lead",
    )  # fmt: skip
    assert code in (0, 1) and "2 new jobs" in err, err
    assert cli("export", "--what", "judgements", "--db", db, "--out", out)[0] == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted((row["item"], row["attribute"]) for row in rows) == sorted(
        (item, attribute) for item in {row["item"] for row in rows} for attribute in ("likability", "relevance")
    )


def test_an_unknown_question_or_a_conversation_is_one_sentence_and_changes_nothing(cli, tmp_path, tiny_gguf):
    db = story_study(tmp_path / "s.db")
    before = digest(db)
    code, _, err = cli("judge", "--db", db, "--model", tiny_gguf, *FLAGS, "--attribute", "fluency")
    assert code != 0 and "Traceback" not in err
    assert "task 'story' has no question 'fluency'" in err and "likability" in err, err
    code, _, err = cli("judge", "--db", db, "--model", tiny_gguf, *FLAGS, "--attribute", "likability", "--conversation")
    assert code != 0 and "Traceback" not in err
    assert "--attribute asks single questions" in err, err
    assert digest(db) == before

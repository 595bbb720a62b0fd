"""Logprobs from the real llama_cpp.server: every option scored, end-of-text at the answer position retried.

The truth is the server's own full next-token distribution (the tiny model's vocabulary has 264
tokens: ``top_logprobs`` 400 lists all of them), asked for with plain HTTP, not through our code.
"""

from __future__ import annotations

import csv
import json
import os
import sqlite3

import pytest

from tests.judge.distributions import ask, question
from tests.judge.distributions import server_truth as truth
from tests.support import STORIES, run_cli_process
from tui_rater.judge.backends.api import ApiBackend
from tui_rater.judge.spec import JudgeSpec
from tui_rater.store.study import Study


def story_prompts(tmp_path) -> list[list[dict]]:
    """The 16 questions the story task asks of 4 stories, as the judge renders them."""
    task = Study.open(tmp_path / "render.db").task("story")
    return [question(task, a.name, s) for s in STORIES for a in task.attributes]


def test_options_outside_the_top_20_are_scored_exactly(llama_server, tmp_path):
    backend = ApiBackend(JudgeSpec("api:tiny", api_key_env="OPENAI_API_KEY", base_url=llama_server).validate())
    left_out = 0
    for messages in story_prompts(tmp_path):
        listed = {e["token"] for e in ask(llama_server, messages, temperature=0, top_logprobs=20)[0]["top_logprobs"]}
        left_out += len(set("12345") - listed)
        found = backend.option_probabilities(messages, list("12345"))
        assert found.unscored == () and found.unscored_mass_at_most == 0.0
        assert found.probabilities == pytest.approx(truth(llama_server, messages), rel=1e-6, abs=1e-12)
    assert left_out >= 16  # the top 20 alone would have read these options as probability 0
    print(f"\n16 questions: {left_out} of 80 options outside the top 20, all scored exactly")
    assert backend.server.bias == "before" and backend.server.tokenizer == ("/extras/tokenize", "input")


def _study(tmp_path, task: str):
    items = tmp_path / "stories.csv"
    with open(items, "w", newline="") as handle:
        writer = csv.DictWriter(handle, ["id", "system", "prompt", "story"])
        writer.writeheader()
        writer.writerows(STORIES)
    db = tmp_path / "eos.db"
    assert run_cli_process("import", items, "--task", task, "--db", db).returncode == 0
    return db


def test_end_of_text_at_the_answer_position_is_retried_not_fatal(eos_server, tmp_path):
    prompts = story_prompts(tmp_path)
    greedy_empty = sum(ask(eos_server, m, temperature=0, top_logprobs=20) == [] for m in prompts)
    assert greedy_empty == len(prompts)  # the case: no logprobs at all in a greedy reply
    db = _study(tmp_path, "story")
    env = {**os.environ, "OPENAI_API_KEY": "sk-local"}
    result = run_cli_process(
        "judge", "--db", db, "--model", "api:eos", "--base-url", eos_server, "--mode", "distribution",
        "--samples", "2", "--min-mass", "0", env=env,
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert "done: 16 jobs" in result.stdout and "the judge stopped" not in result.stderr
    conn = sqlite3.connect(db)
    rows = conn.execute(
        "SELECT i.id, r.attribute, r.parse_status, r.details FROM ratings r JOIN items i ON i.key = r.item_key "
        "WHERE r.sample = 0 ORDER BY r.id"
    ).fetchall()
    assert len(rows) == 16 and {row[2] for row in rows} == {"ok"}
    task = Study.open(tmp_path / "render.db").task("story")
    stories = {s["id"]: s for s in STORIES}
    for item, attribute, _status, details in rows:
        assert json.loads(details)["raw"] == pytest.approx(truth(eos_server, question(task, attribute, stories[item])))


def test_end_of_text_in_the_implicit_score(eos_server, tmp_path):
    db = _study(tmp_path, "story-explicit")
    env = {**os.environ, "OPENAI_API_KEY": "sk-local"}
    result = run_cli_process(
        "judge", "--db", db, "--model", "api:eos", "--base-url", eos_server, "--mode", "implicit", env=env
    )
    # every job ends (none fails, the judge does not stop); a random model's answers are neither yes nor no: a run
    # with no usable reading is exit 1 (issue 22.4)
    assert result.returncode == 1, result.stderr
    assert "0 of 4 readings usable; typed failures: 4 no_answer_token" in result.stderr
    counts = dict(sqlite3.connect(db).execute("SELECT status, count(*) FROM jobs GROUP BY status").fetchall())
    assert counts == {"done": 4}

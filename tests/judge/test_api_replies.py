"""Malformed, truncated and empty API replies through the real `tui-rater judge`, in a subprocess.

Each item of the study names one case of the loopback zoo server (tests/zoo.py). Every
malformed reply must end as a typed failure of its job, the workers must survive, the command
must end, and its exit status must say that jobs failed (issue 11); truncated and empty logprob
replies must be read honestly (issue 13, items 3 and 4).
"""

from __future__ import annotations

import csv
import json
import math
import os
import sqlite3
import time
from pathlib import Path

import pytest

from tests import zoo
from tests.support import run_cli_process
from tui_rater.judge.backends.api import ApiBackend
from tui_rater.judge.spec import JudgeSpec

MAX_ATTEMPTS = 6  # judge.queue.MAX_ATTEMPTS: a retryable failure is tried this many times


def study_of_cases(tmp_path: Path, cases, task: str = "story") -> Path:
    """A study whose item ``<case>`` carries ``CASE=<case>`` in its story, imported by the CLI."""
    items = tmp_path / "items.csv"
    with open(items, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["id", "system", "prompt", "story"])
        for case in cases:
            writer.writerow([case, "human", "Write a story.", f"CASE={case}. The cat sat on the mat."])
    db = tmp_path / "zoo.db"
    imported = run_cli_process("import", items, "--task", task, "--db", db)
    assert imported.returncode == 0, imported.stderr
    return db


def judge(db: Path, url: str, *flags: str, timeout: float = 240):
    env = {**os.environ, "OPENAI_API_KEY": zoo.KEY}
    began = time.monotonic()
    result = run_cli_process(
        "judge", "--db", db, "--model", "api:zoo", "--base-url", url, "--api-key-env", "OPENAI_API_KEY",
        "--samples", "1", "--max-retries", "0",
        *flags, env=env, timeout=timeout,
    )  # fmt: skip
    return result, time.monotonic() - began


def outcomes(db: Path) -> dict[str, list[dict]]:
    """Per item (case): its jobs with their rating, if any."""
    conn = sqlite3.connect(db)
    conn.row_factory = sqlite3.Row
    rows = conn.execute(
        "SELECT i.id AS item, j.attribute, j.status, j.attempts, j.error_kind, j.last_error, r.value, r.raw, "
        "r.parse_status, r.details FROM jobs j JOIN items i ON i.key = j.item_key "
        "LEFT JOIN ratings r ON r.job_id = j.id AND r.sample = 0 ORDER BY j.id"
    ).fetchall()
    found: dict[str, list[dict]] = {}
    for row in rows:
        found.setdefault(row["item"], []).append(dict(row))
    return found


def tally(what: str, db: Path, behaviour: zoo.Zoo, result, seconds: float) -> None:
    """One line of counts for docs/RELIABILITY.md."""
    conn = sqlite3.connect(db)
    jobs = dict(conn.execute("SELECT status, count(*) FROM jobs GROUP BY status").fetchall())
    kinds = dict(conn.execute("SELECT error_kind, count(*) FROM jobs WHERE status = 'failed' GROUP BY 1").fetchall())
    print(
        f"\n{what}: {len(behaviour.requests)} requests, jobs {jobs}, failed by kind {kinds}, "
        f"exit {result.returncode} after {seconds:.1f} s"
    )


def assert_key_nowhere(db: Path, *secrets: str) -> None:
    for path in db.parent.iterdir():
        if path.name.startswith(db.name):
            data = path.read_bytes()
            for secret in secrets:
                assert secret.encode() not in data, (path.name, secret)


MALFORMED_TEXT = [
    "content_number", "content_object", "finish_number", "no_choices", "choices_missing", "choices_object",
    "message_missing", "json_array", "invalid_json", "html", "empty_body", "deep_nesting", "long_number", "huge_body",
]  # fmt: skip


# the request deadline of the text-reply test: what it proves is that a reply dripped for longer than the deadline
# (zoo.drip_s(), about 17 s) fails as a timeout while every other reply, which the loopback server sends at once, is
# read -- so it sits far below the drip and far above a reply's milliseconds, even on a machine slowed tenfold
TEXT_TIMEOUT_S = 5.0


@pytest.mark.slow  # each bad job is retried with back-off: about 60 s (the drip's 6 attempts of TEXT_TIMEOUT_S)
@pytest.mark.timeout(900)  # the judge alone took 178 s under 6 busy loops on 2 cores: pyproject's 300 s is too near
def test_malformed_text_replies_fail_their_jobs_and_the_judge_ends(tmp_path, serve_zoo):
    assert zoo.drip_s() >= TEXT_TIMEOUT_S * 3  # the drip outlasts the deadline by far: only the deadline can end it
    cases = ["good", "key_echo", "null_content", "usage_nonsense", *MALFORMED_TEXT, "key_in_error", "drip"]
    db = study_of_cases(tmp_path, cases)
    behaviour, url = serve_zoo()
    result, seconds = judge(db, url, "--timeout", f"{TEXT_TIMEOUT_S:g}", timeout=600)  # it ends: not how fast
    tally("text replies", db, behaviour, result, seconds)
    assert result.returncode == 1, result.stderr  # it ended, and says jobs failed
    assert "Traceback" not in result.stderr + result.stdout
    assert "the judge stopped" not in result.stderr  # per-job failures: the workers went on
    found = outcomes(db)
    assert len(found) == len(cases) and all(len(jobs) == 4 for jobs in found.values())
    for case in ("good", "usage_nonsense"):
        assert [(j["status"], j["value"], j["parse_status"]) for j in found[case]] == [("done", 4, "ok")] * 4
    for job in found["key_echo"]:  # the server echoed the key: stored, but never the key
        assert job["value"] == 4 and "[key]" in job["raw"] and zoo.KEY not in job["raw"]
    assert {(j["status"], j["parse_status"]) for j in found["null_content"]} == {("done", "no_number")}
    for case in MALFORMED_TEXT:
        assert {(j["status"], j["error_kind"], j["attempts"]) for j in found[case]} == {
            ("failed", "malformed", MAX_ATTEMPTS)
        }, (case, found[case])
        assert all(j["value"] is None and j["raw"] is None for j in found[case])
    assert "larger than 8 MB" in found["huge_body"][0]["last_error"]
    assert "not JSON" in found["html"][0]["last_error"] and "not text" in found["content_number"][0]["last_error"]
    assert {(j["status"], j["error_kind"]) for j in found["key_in_error"]} == {("failed", "server_error")}
    assert all("[key]" in j["last_error"] for j in found["key_in_error"])
    assert {(j["status"], j["error_kind"]) for j in found["drip"]} == {("failed", "timeout")}
    assert all(f"{TEXT_TIMEOUT_S:g} s" in j["last_error"] for j in found["drip"])  # the deadline ended it
    assert_key_nowhere(db, zoo.KEY)
    shown = run_cli_process("queue", "--db", db)
    assert shown.returncode == 0 and zoo.KEY not in shown.stdout and "malformed" in shown.stdout


def expected_distribution(case: str) -> dict[str, float]:
    weights = zoo.weights_of(case)
    p = {label: sum(weights.get(s, 0.0) for s in (label, " " + label)) for label in "12345"}
    mass = sum(p.values())
    return {label: q / mass for label, q in p.items()}


MALFORMED_LOGPROBS = [
    "logprob_1000", "logprob_text", "nan_logprob", "token_number", "top_not_list", "entry_not_object",
    "mass_over_one", "content_number",
]  # fmt: skip


@pytest.mark.slow  # retry back-offs: about 20 s
def test_logprob_replies_distribution_mode(tmp_path, serve_zoo):
    cases = ["good", "truncated", "eos", "key_in_token", *MALFORMED_LOGPROBS, "eos_always", "logprobs_null"]
    db = study_of_cases(tmp_path, cases)
    behaviour, url = serve_zoo()
    result, seconds = judge(db, url, "--mode", "distribution", "--samples", "3")
    tally("distribution", db, behaviour, result, seconds)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout and "the judge stopped" not in result.stderr
    found = outcomes(db)
    # the top 20 left 2-5 out of "truncated" (which once read as {1: 1.0}): each asked for, exactly
    for job in found["truncated"]:
        details = json.loads(job["details"])
        assert job["parse_status"] == "ok" and "unscored" not in details
        assert details["distribution"] == pytest.approx(expected_distribution("truncated"), abs=1e-9)
    # elsewhere only " 3"-like spellings of ~1e-4 are left out: not asked for, their bound recorded
    for case in ("good", "eos", "key_in_token"):
        for job in found[case]:
            assert job["status"] == "done" and job["parse_status"] == "ok", (case, job)
            details = json.loads(job["details"])
            assert 0 < details["unscored_mass_at_most"] <= 0.005 * details["mass"]
            assert details["distribution"] == pytest.approx(expected_distribution(case), abs=1e-3), case
    truncated = json.loads(found["truncated"][0]["details"])
    assert truncated["distribution"]["1"] < 0.9 and truncated["distribution"]["5"] > 0.03
    for case in MALFORMED_LOGPROBS:
        assert {(j["status"], j["error_kind"], j["attempts"]) for j in found[case]} == {
            ("failed", "malformed", MAX_ATTEMPTS)
        }, (case, found[case])
    for case in ("eos_always", "logprobs_null"):  # no logprobs: retried per job, never fatal
        assert {(j["status"], j["error_kind"]) for j in found[case]} == {("failed", "no_logprobs")}, case


def test_truncated_top_k_without_a_tokenizer_is_stored_as_incomplete(tmp_path, serve_zoo):
    db = study_of_cases(tmp_path, ["good", "truncated"])
    behaviour, url = serve_zoo(tokenizer=False)  # e.g. OpenAI: nothing to ask for the options left out
    result, seconds = judge(db, url, "--mode", "distribution", "--samples", "2")
    tally("no tokenizer", db, behaviour, result, seconds)
    assert result.returncode == 0, result.stderr
    found = outcomes(db)
    for job in found["truncated"]:
        details = json.loads(job["details"])
        assert (job["value"], job["parse_status"]) == (None, "incomplete")
        assert set(details["unscored"]) == set("12345") and details["unscored_mass_at_most"] > 0.01
        assert "distribution" not in details  # no renormalised guess
    for job in found["good"]:
        # options outside the top 20 can hold at most ~1e-4: recorded, and too little to matter
        details = json.loads(job["details"])
        assert job["parse_status"] == "ok" and details["unscored_mass_at_most"] < 0.01 * details["mass"]
    samples = sqlite3.connect(db).execute(
        "SELECT count(*) FROM ratings r JOIN items i ON i.key = r.item_key WHERE i.id = 'truncated' "
        "AND r.parse_status = 'incomplete'"
    )
    assert samples.fetchone()[0] == 4 * 2


@pytest.mark.slow  # retry back-offs: about 20 s
def test_logprob_replies_implicit_mode(tmp_path, serve_zoo):
    cases = ["good", "eos", "key_in_token", "logprob_1000", "token_number", "eos_always"]
    db = study_of_cases(tmp_path, cases, task="story-explicit")
    behaviour, url = serve_zoo()
    result, seconds = judge(db, url, "--mode", "implicit")
    tally("implicit", db, behaviour, result, seconds)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr + result.stdout and "the judge stopped" not in result.stderr
    found = {case: jobs[0] for case, jobs in outcomes(db).items()}
    for case in ("good", "eos", "key_in_token"):
        job = found[case]
        weights = zoo.weights_of(case, yesno=True)
        total = sum(weights.values())
        want = 100 * max(weights["Yes"] / total, 1 - weights["No"] / total)
        assert job["status"] == "done" and job["value"] == pytest.approx(want, abs=1e-6), case
    top5 = json.loads(found["key_in_token"]["details"])["top5"]
    assert any(token == "[key]" for token, _ in top5) and zoo.KEY not in json.dumps(top5)
    for case in ("logprob_1000", "token_number"):
        assert (found[case]["status"], found[case]["error_kind"]) == ("failed", "malformed")
    assert (found["eos_always"]["status"], found["eos_always"]["error_kind"]) == ("failed", "no_logprobs")
    assert_key_nowhere(db, zoo.KEY)


def test_a_server_that_never_answers_usably_stops_the_judge_soon(tmp_path, serve_zoo):
    db = study_of_cases(tmp_path, [f"x{i}" for i in range(12)])
    behaviour, url = serve_zoo(default_case="html")
    result, seconds = judge(db, url)
    tally("never usable", db, behaviour, result, seconds)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert "the judge stopped" in result.stderr and "none usable" in result.stderr and "not JSON" in result.stderr
    counts = dict(sqlite3.connect(db).execute("SELECT status, count(*) FROM jobs GROUP BY status").fetchall())
    assert counts.get("failed", 0) == 0 and counts.get("leased", 0) == 0  # put back, to retry later
    assert seconds < 60


# --- in one process: what the backend learns about a server ------------------------------------


def _ask(case: str) -> list[dict]:
    return [{"role": "user", "content": f"CASE={case}. How likable is the story?"}]


@pytest.mark.parametrize("bias,verdict", [("after", "after"), ("ignored", "ignored"), ("reject", "rejected")])
def test_a_logit_bias_that_cannot_be_trusted_leaves_options_unscored(serve_zoo, bias, verdict):
    behaviour, url = serve_zoo(bias=bias)
    backend = ApiBackend(JudgeSpec("api:zoo", api_key_env="OPENAI_API_KEY", base_url=url).validate())
    found = backend.option_probabilities(_ask("truncated"), list("12345"))
    assert set(found.unscored) == set("12345") and [found.probabilities[d] for d in "2345"] == [0.0] * 4
    weights = zoo.weights_of("truncated")
    listed = sorted(weights.values(), reverse=True)[:20]
    assert found.unscored_mass_at_most == pytest.approx(1 - sum(listed) / sum(weights.values()))
    assert backend.server.bias == verdict
    before = len(behaviour.requests)
    backend.option_probabilities(_ask("truncated"), list("12345"))
    assert len(behaviour.requests) - before == 1  # found out once: not asked again


def test_a_server_that_refuses_llama_cpp_sampler_fields(serve_zoo):
    behaviour, url = serve_zoo(strict=True)
    backend = ApiBackend(JudgeSpec("api:zoo", api_key_env="OPENAI_API_KEY", base_url=url).validate())
    found = backend.option_probabilities(_ask("eos"), list("12345"))  # greedy: end-of-text; then sampled
    weights = zoo.weights_of("eos")
    total = sum(weights.values())
    assert found.probabilities == pytest.approx({d: weights[d] / total for d in "12345"}, abs=1e-3)
    assert 0 < found.unscored_mass_at_most < 1e-3  # " 1" ... " 5": too little to ask for
    assert backend.server.sampler_extras is False
    sampled = [body for _, body in behaviour.requests if body.get("temperature") == 1.0]
    assert sampled and "top_k" not in sampled[-1]


def test_the_bound_on_unlisted_tokens_ignores_a_sampled_token_added_to_the_list():
    """llama-cpp-python lists the sampled token even when it is not among the top k, and merges
    tokens of the same text (15 entries for 20 asked): the least listed entry is then no bound."""
    from tui_rater.judge.backends.api_reply import token_listing

    top = [{"token": t, "logprob": lp} for t, lp in [("r", -2.3), ("J", -2.7), ("q", -4.9), ("Q", -5.9)]]
    sampled = {"token": "f", "logprob": -10.8}
    body = {
        "choices": [
            {"message": {"content": "f"}, "logprobs": {"content": [{**sampled, "top_logprobs": [*top, sampled]}]}}
        ]
    }
    listing = token_listing(body, 20, [])
    assert listing.ceiling == pytest.approx(math.exp(-5.9))  # not exp(-10.8): a token at -8 may be unlisted
    assert listing.probability("f") == pytest.approx(math.exp(-10.8))

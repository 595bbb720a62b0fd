"""One judge, several endpoints of one model (issue 25, item 3), and the paper's sampler sent to a server (item 1).

Real `tui-rater judge` runs in a subprocess against loopback servers: the zoo (tests/zoo.py, which records every
request body) and two real `llama_cpp.server` processes serving the same generated GGUF, one killed mid-run.
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

from tests import zoo
from tests.support import STORIES, free_port, run_cli_process, story_study, wait_for_port

PAPER_SAMPLER = {"top_k": 0, "min_p": 0.0}


def _judge(db: Path, *urls: str, flags: tuple[str, ...] = (), timeout: float = 120) -> subprocess.CompletedProcess:
    endpoints = [arg for url in urls for arg in ("--base-url", url)]
    return run_cli_process(
        "judge", "--db", db, "--model", "api:zoo", *endpoints, "--samples", "1", "--max-retries", "0", *flags,
        timeout=timeout,
    )  # fmt: skip


def _ratings(db: Path) -> list[dict]:
    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT job_id, details FROM ratings WHERE job_id IS NOT NULL ORDER BY id").fetchall()
    conn.close()
    return [{"job": job, **json.loads(details)} for job, details in rows]


def _count(db: Path, sql: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(sql).fetchone()[0]
    finally:
        conn.close()


def _chats(behaviour: zoo.Zoo) -> list[dict]:
    return [body for path, body in behaviour.requests if path.endswith("/chat/completions")]


# --- item 1: the paper's sampler through a server ----------------------------------------------------------------


def test_a_sampled_reply_asks_the_server_for_nucleus_sampling_over_the_whole_vocabulary(tmp_path, serve_zoo):
    behaviour, url = serve_zoo()
    db = story_study(tmp_path / "s.db", STORIES[:1])
    result = _judge(db, url, flags=("--temperature", "1", "--top-p", "0.9", "--limit", "1"))
    assert result.returncode == 0, result.stderr
    sampled = _chats(behaviour)
    assert sampled and all(b["top_p"] == 0.9 and {k: b[k] for k in PAPER_SAMPLER} == PAPER_SAMPLER for b in sampled)
    assert not any("sampling_sent" in rating for rating in _ratings(db))  # sent as asked: nothing to record

    behaviour, url = serve_zoo()  # constrained: the constraint and the sampler together
    db = story_study(tmp_path / "c.db", STORIES[:1])
    _judge(db, url, flags=("--mode", "constrained", "--temperature", "1", "--limit", "1"))
    constrained = [b for b in _chats(behaviour) if "response_format" in b or "grammar" in b]
    assert constrained and all({k: b.get(k) for k in PAPER_SAMPLER} == PAPER_SAMPLER for b in constrained)

    behaviour, url = serve_zoo()  # greedy: no sampler to send
    db = story_study(tmp_path / "g.db", STORIES[:1])
    assert _judge(db, url, flags=("--temperature", "0", "--limit", "1")).returncode == 0
    assert _chats(behaviour) and not any("top_k" in b for b in _chats(behaviour))


def test_a_server_that_refuses_top_k_samples_with_its_own_and_each_rating_says_so(tmp_path, serve_zoo):
    behaviour, url = serve_zoo(strict=True)  # 400 on top_k / min_p, as OpenAI answers them
    db = story_study(tmp_path / "s.db", STORIES[:1])
    result = _judge(db, url, flags=("--temperature", "1", "--top-p", "0.8", "--limit", "1"))
    assert result.returncode == 0, result.stderr
    ratings = _ratings(db)
    assert len(ratings) == 4  # the story task's four questions, each rated once
    assert all(r["sampling_sent"] == {"top_p": 0.8, "top_k": "the server's", "min_p": "the server's"} for r in ratings)
    chats = _chats(behaviour)
    assert sum("top_k" in body for body in chats) == 1  # refused once, then never sent again in this run
    assert sum("top_k" not in body for body in chats) == 4


def test_a_judge_may_sample_as_llama_cpp_s_server_does_and_is_then_another_judge(tmp_path, serve_zoo):
    """--top-k / --min-p (llama.cpp's server defaults: 40, 0.05) reach the body; the judge is a new one, named so."""
    behaviour, url = serve_zoo()
    db = story_study(tmp_path / "s.db", STORIES[:1])
    assert _judge(db, url, flags=("--temperature", "1", "--limit", "1")).returncode == 0
    result = _judge(db, url, flags=("--temperature", "1", "--top-k", "40", "--min-p", "0.05", "--limit", "1"))
    assert result.returncode == 0, result.stderr
    chats = _chats(behaviour)
    assert [(b["top_k"], b["min_p"]) for b in chats] == [(0, 0.0)] * 4 + [(40, 0.05)] * 4
    conn = sqlite3.connect(db)
    judges = conn.execute("SELECT label, config FROM raters WHERE kind = 'llm' ORDER BY id").fetchall()
    conn.close()
    assert len(judges) == 2  # the same model sampled another way is another judge
    paper, server = (json.loads(config) for _, config in judges)
    assert "top_k" not in paper and "min_p" not in paper  # as before these settings existed: the same identity
    assert (server["top_k"], server["min_p"]) == (40, 0.05)
    bad = _judge(db, url, flags=("--min-p", "1.5"))
    assert bad.returncode == 2 and "--min-p" in bad.stderr and "Traceback" not in bad.stderr


# --- item 3: several endpoints -----------------------------------------------------------------------------------


def test_endpoints_reporting_different_models_are_refused_before_the_study_changes(tmp_path, serve_zoo):
    _, first = serve_zoo(props={"model_path": "/models/qwen2.5-7b-instruct-q4_k_m.gguf"})
    _, second = serve_zoo(props={"model_path": "/models/llama-3.1-8b-instruct-q4_k_m.gguf"})
    db = story_study(tmp_path / "s.db", STORIES[:2])
    for flags in ((), ("--check",)):
        result = _judge(db, first, second, flags=flags)
        assert result.returncode == 2, result.stderr
        assert "the endpoints serve different models" in result.stderr and "Traceback" not in result.stderr
        assert "'qwen2.5-7b-instruct-q4_k_m.gguf'" in result.stderr
        assert "'llama-3.1-8b-instruct-q4_k_m.gguf'" in result.stderr
        assert _count(db, "SELECT count(*) FROM raters WHERE kind = 'llm'") == 0
        assert _count(db, "SELECT count(*) FROM jobs") == 0


def test_replicas_share_the_jobs_and_a_judge_made_with_one_url_goes_on_with_them(tmp_path, serve_zoo):
    # the same model file at other paths on other machines: replicas of one model
    first_zoo, first = serve_zoo(props={"model_path": "/data/a/tiny.gguf"})
    second_zoo, second = serve_zoo(props={"model_path": "/scratch/tiny.gguf"})
    db = story_study(tmp_path / "s.db", STORIES[:4])
    assert _judge(db, first, flags=("--limit", "1")).returncode == 0
    result = _judge(db, first, second, flags=("--workers", "1"))
    assert result.returncode == 0, result.stderr
    # one judge: the replica added after it made no new judge, and its earlier jobs were not asked again
    assert _count(db, "SELECT count(*) FROM raters WHERE kind = 'llm'") == 1
    assert _count(db, "SELECT count(*) FROM jobs WHERE status = 'done'") == 16
    ratings = _ratings(db)
    assert len(ratings) == 16 and len({r["job"] for r in ratings}) == 16
    spread = [r["endpoints"] for r in ratings[4:]]  # the second run's twelve jobs
    assert all(e in ([first], [second]) for e in spread)
    assert spread.count([first]) == spread.count([second]) == 6  # one worker: the endpoints take turns
    assert len(_chats(first_zoo)) == 4 + 6 and len(_chats(second_zoo)) == 6
    conn = sqlite3.connect(db)
    sources = dict(conn.execute("SELECT source, jobs FROM judge_sources").fetchall())
    servers = {source: json.loads(facts) for source, facts in conn.execute("SELECT source, facts FROM judge_servers")}
    conn.close()
    assert sources == {first: 10, second: 6}
    assert servers[second]["props"]["model_path"] == "/scratch/tiny.gguf" and first in servers


def test_an_endpoint_that_is_down_is_left_alone_and_its_requests_go_to_another(tmp_path, serve_zoo):
    behaviour, alive = serve_zoo()
    dead = f"http://127.0.0.1:{free_port()}/v1"  # nothing listens there: connection refused
    db = story_study(tmp_path / "s.db", STORIES[:3])
    result = _judge(db, dead, alive, flags=("--workers", "2"))
    assert result.returncode == 0, result.stderr
    assert _count(db, "SELECT count(*) FROM jobs WHERE status = 'done' AND attempts = 1") == 12  # no job failed once
    assert all(r["endpoints"] == [alive] for r in _ratings(db)) and len(_ratings(db)) == 12
    assert len(_chats(behaviour)) == 12


def test_the_run_stops_in_one_sentence_only_when_every_endpoint_is_down(tmp_path):
    dead = [f"http://127.0.0.1:{free_port()}/v1" for _ in range(2)]
    db = story_study(tmp_path / "s.db", STORIES[:4])
    began = time.monotonic()
    result = _judge(db, *dead)
    assert result.returncode != 0 and "Traceback" not in result.stderr
    assert "jobs in a row got no answer" in result.stderr and "none of the 2 endpoints answered" in result.stderr
    assert time.monotonic() - began < 60
    assert _count(db, "SELECT count(*) FROM ratings") == 0


# --- two real llama_cpp.server replicas, one killed mid-run --------------------------------------------------------


def _start_server(model: Path, log: Path) -> tuple[subprocess.Popen, str]:
    port = free_port()
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--n_ctx", "1024"]
    proc = subprocess.Popen(command, stdout=open(log, "w"), stderr=subprocess.STDOUT)
    wait_for_port(port, proc)
    return proc, f"http://127.0.0.1:{port}/v1"


def test_two_real_llama_cpp_servers_one_killed_mid_run(tmp_path, tiny_gguf):
    servers = [_start_server(tiny_gguf, tmp_path / f"server-{n}.log") for n in range(2)]
    (victim, killed), (_, survivor) = servers
    stories = [{**story, "id": f"{story['id']}-{n}"} for n in range(2) for story in STORIES]
    db = story_study(tmp_path / "s.db", stories)  # 32 jobs
    command = [sys.executable, "-m", "tui_rater.cli", "judge", "--db", str(db), "--model", "api:tiny"]
    command += ["--base-url", killed, "--base-url", survivor, "--samples", "1", "--max-retries", "0"]
    command += ["--max-tokens", "16", "--workers", "2"]
    run = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ)
    try:
        deadline = time.monotonic() + 120

        def both_served() -> bool:  # a slow first reply (a loaded machine) must not look like no balancing
            ratings = _ratings(db)
            return len(ratings) >= 4 and {killed, survivor} <= {url for r in ratings for url in r["endpoints"]}

        while not both_served() and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.02)
        victim.kill()
        victim.wait(20)
        stored_at_kill = _count(db, "SELECT coalesce(max(id), 0) FROM ratings")
        _, err = run.communicate(timeout=240)
    finally:
        for proc, _ in servers:
            if proc.poll() is None:
                proc.terminate()
                proc.wait(20)
        if run.poll() is None:
            run.kill()
    assert run.returncode in (0, 1), err  # 1: the random tiny model's replies rate nothing (no job failed)
    assert 4 <= stored_at_kill < 28, "the kill came too late to test anything"
    assert _count(db, "SELECT count(*) FROM jobs") == 32
    assert _count(db, "SELECT count(*) FROM jobs WHERE status = 'done'") == 32
    # a request the victim left unanswered went to the survivor at once: no job needed a second attempt
    assert _count(db, "SELECT count(*) FROM jobs WHERE attempts = 1") == 32
    print(f"ratings stored at the kill: {stored_at_kill} of 32")
    ratings = _ratings(db)
    assert len(ratings) == 32 and len({r["job"] for r in ratings}) == 32  # every job stored exactly once
    assert all(set(r["endpoints"]) <= {killed, survivor} for r in ratings)
    before = [r["endpoints"] for r in ratings[:stored_at_kill]]
    assert [killed] in before and [survivor] in before  # both served while both were up
    in_flight = 2  # the two workers' jobs at the kill may have had a request answered by the victim first
    assert all(r["endpoints"] == [survivor] for r in ratings[stored_at_kill + in_flight :])
    assert ratings[stored_at_kill + in_flight :], "no job ran after the kill"


def test_a_key_goes_to_each_endpoint_only_where_the_user_sent_it(monkeypatch, tmp_path):
    from tui_rater.judge.backends.api_pool import ApiPool
    from tui_rater.judge.spec import NO_KEY, JudgeSpec

    monkeypatch.setenv("TUI_RATER_CONFIG", str(tmp_path / "none.toml"))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-secret")
    monkeypatch.setenv("LAB_KEY", "lab-secret")
    urls = ("http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1")
    spec = JudgeSpec("api:qwen", base_url=urls[0], replicas=urls[1:]).validate()
    assert [m._key for m in ApiPool(spec).members] == [NO_KEY, NO_KEY]  # $OPENAI_API_KEY is OpenAI's alone
    named = JudgeSpec("api:qwen", base_url=urls[0], replicas=urls[1:], api_key_env="LAB_KEY").validate()
    assert [m._key for m in ApiPool(named).members] == ["lab-secret", "lab-secret"]
    assert [m.spec.base_url for m in ApiPool(named).members] == list(urls)


def test_endpoints_from_the_config_file_and_the_same_endpoint_twice(tmp_path):
    import pytest

    from tui_rater.config import api_key_from_config, load_settings
    from tui_rater.domain.errors import UserError
    from tui_rater.judge.spec import JudgeSpec

    path = tmp_path / "config.toml"
    path.write_text('[judge]\nbase_url = ["http://a:8001/v1", "http://b:8002/v1"]\napi_key = "lab-secret"\n')
    path.chmod(0o600)
    judge = load_settings(path, environ={}).judge
    assert (judge.base_url, judge.replicas) == ("http://a:8001/v1", ("http://b:8002/v1",))
    # the file's key goes to the file's own endpoints, every one of them, and nowhere else
    assert api_key_from_config("http://b:8002/v1", path) == "lab-secret"
    assert api_key_from_config("http://c:8003/v1", path) is None
    path.write_text("[judge]\nbase_url = []\n")
    with pytest.raises(UserError, match="a URL or a list of URLs"):
        load_settings(path, environ={})
    with pytest.raises(UserError, match="http://a:8001/v1 is given twice"):
        JudgeSpec("api:m", base_url="http://a:8001/v1", replicas=("http://a:8001/v1/",)).validate()


def test_judge_check_with_several_endpoints_asks_each_what_it_serves_and_says_which_it_checked(tmp_path, serve_zoo):
    first_zoo, first = serve_zoo(props={"model_path": "/a/tiny.gguf"})
    second_zoo, second = serve_zoo(props={"model_path": "/b/tiny.gguf"})
    db = story_study(tmp_path / "s.db", STORIES[:1])
    result = _judge(db, first, second, flags=("--check", "--check-items", "1"))
    assert "Traceback" not in result.stderr
    assert f"checking the first endpoint, {first}; the other 1 were asked what they serve" in result.stderr
    assert _chats(first_zoo) and not _chats(second_zoo)  # the questions went to the first
    assert _count(db, "SELECT count(*) FROM raters WHERE kind = 'llm'") == 0  # a check stores nothing


def test_annotate_takes_a_judges_endpoints_in_one_value(tmp_path):
    db = story_study(tmp_path / "s.db", STORIES[:1])
    twice = "http://127.0.0.1:9/v1 http://127.0.0.1:9/v1"  # split into endpoints: the same one twice is refused
    result = run_cli_process("annotate", "--db", db, "--annotator", "amy", "--judge", "api:a", "--base-url", twice)
    assert result.returncode == 2 and "--base-url http://127.0.0.1:9/v1 is given twice" in result.stderr, result.stderr


def test_the_same_endpoint_spelled_two_ways_is_refused(tmp_path):
    # a host's case and a scheme's default port do not make another server: asked as two replicas, it would be
    # counted twice and each job's endpoints would name it twice
    db = story_study(tmp_path / "s.db", STORIES[:1])
    before = Path(db).read_bytes()
    for first, second in (
        ("http://localhost:9/v1", "http://LocalHost:9/v1/"),
        ("http://localhost/v1", "http://localhost:80/v1"),
        ("https://Example.org/v1", "https://example.org:443/v1"),
    ):
        result = _judge(db, first, second)
        assert result.returncode == 2 and "is given twice" in result.stderr, (first, second, result.stderr)
        assert "Traceback" not in result.stderr
    assert Path(db).read_bytes() == before  # refused before the study changes


def test_an_endpoint_answering_garbage_is_left_alone_and_its_requests_go_to_another(tmp_path, serve_zoo):
    # a replica behind a proxy answering 200 with an HTML error page: that endpoint, not the request, is broken;
    # its jobs were failed (or put back again and again) while another endpoint answered them
    garbage_zoo, garbage = serve_zoo(default_case="html")
    alive_zoo, alive = serve_zoo()
    db = story_study(tmp_path / "s.db", STORIES[:3])
    result = _judge(db, garbage, alive, flags=("--workers", "1"))
    assert result.returncode == 0, result.stderr
    assert _count(db, "SELECT count(*) FROM jobs WHERE status = 'done' AND attempts = 1") == 12  # no job failed once
    assert all(r["endpoints"] == [alive] for r in _ratings(db)) and len(_ratings(db)) == 12
    assert len(_chats(garbage_zoo)) == 1 and len(_chats(alive_zoo)) == 12  # asked once, then left alone DOWN_S

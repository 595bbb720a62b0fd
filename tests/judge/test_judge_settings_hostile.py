"""A demanding user's judge settings, through the real CLI: every bad value is one sentence, exit 2, and the study
file untouched; a config file's local-model settings do not refuse an API judge."""

from __future__ import annotations

import os

import pytest

from tests.support import Script, digest, ok_body, run_cli_process, story_study


def _config(tmp_path, text: str) -> dict[str, str]:
    path = tmp_path / "config.toml"
    path.write_text(text)
    os.chmod(path, 0o600)
    return {**os.environ, "TUI_RATER_CONFIG": str(path)}


def _refused(result, study, before: str | None) -> str:
    assert result.returncode == 2, result.stderr
    assert digest(study) == before
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and "Traceback" not in result.stderr, result.stderr
    return lines[0]


@pytest.mark.parametrize(
    "line,message",
    [
        # the flags and the config file said [0, 100] and [1, 1000] while the judge refused past 5 and 100, in a
        # sentence naming a flag the user had not given
        ("temperature = 50.0", "[judge] temperature must be in [0, 5]"),
        ("samples = 500", "[judge] samples must be in [1, 100]"),
        # the settings beside the decoding ones had no range: -3 threads reached llama.cpp
        ("n_threads = -3", "[judge] n_threads must be in [0, 4096]"),
        ("n_threads = 100000", "[judge] n_threads must be in [0, 4096]"),
        ("max_retries = -1", "[judge] max_retries must be in [0, 100]"),
        ("top_k = 40.0", "[judge] top_k must be a whole number"),
        ("min_p = true", "[judge] min_p must be a number"),
    ],
)
def test_a_bad_judge_setting_in_the_config_file_is_the_config_files_sentence(tmp_path, line, message):
    study = story_study(tmp_path / "s.db")
    before = digest(study)
    env = _config(tmp_path, f"[judge]\n{line}\n")
    result = run_cli_process("judge", "--db", study, "--model", "api:m", "--base-url", "http://127.0.0.1:9/v1", env=env)
    assert _refused(result, study, before) == f"tui-rater: error: config file {tmp_path / 'config.toml'}: {message}"


@pytest.mark.parametrize(
    "flag,value,message",
    [
        ("--temperature", "9", "9 is out of range: give a number in [0, 5]"),
        ("--samples", "500", "500 is out of range: give a whole number from 1 to 100"),
    ],
)
def test_a_flag_refuses_what_the_judge_refuses_in_the_flags_words(tmp_path, flag, value, message):
    study = story_study(tmp_path / "s.db")
    before = digest(study)
    result = run_cli_process(
        "judge", "--db", study, "--model", "api:m", "--base-url", "http://127.0.0.1:9/v1", flag, value
    )
    assert message in _refused(result, study, before)
    assert "0, 100]" not in run_cli_process("judge", "--help").stdout  # the help says the range the judge takes


def test_the_config_files_local_model_settings_leave_an_api_judge_alone(tmp_path, fake_server):
    """[judge] n_threads (or n_gpu_layers) kept for a local model refused every API judge with '--threads applies to
    local .gguf models only', a flag the user had not given; the same flag given is still refused."""
    script = Script([(200, {}, ok_body(), 0)])
    url = fake_server(script)
    study = story_study(tmp_path / "s.db")
    env = _config(tmp_path, "[judge]\nn_threads = 1\nn_gpu_layers = 2\nn_ctx = 512\n")
    args = ("judge", "--db", study, "--model", "api:m", "--base-url", url, "--task", "story", "--samples", "1")
    result = run_cli_process(*args, "--limit", "1", env=env)
    assert result.returncode == 0, result.stderr
    assert script.bodies, "the API judge asked its server"
    before = digest(study)
    flagged = run_cli_process(*args, "--threads", "1", env=env)
    assert _refused(flagged, study, before) == "tui-rater: error: --threads applies to local .gguf models only"


def test_more_threads_than_cores_is_refused_before_the_model_loads(tmp_path, tiny_gguf):
    """--threads 4096 on a 2-core machine spun llama.cpp's threads against each other: a tiny model's first reply
    had not come after two minutes (5 s with 2 threads)."""
    study = story_study(tmp_path / "s.db")
    before = digest(study)
    cores = len(os.sched_getaffinity(0))  # the cores this process may use (the machine's share given it)
    threads = str(cores + 1)
    result = run_cli_process(
        "judge", "--db", study, "--model", tiny_gguf, "--threads", threads, "--limit", "1", timeout=60
    )
    assert _refused(result, study, before) == (
        f"tui-rater: error: --threads {threads} is more than the {cores} CPU cores tui-rater can use here; "
        f"give at most {cores}, or leave it out for every core"
    )


def test_top_k_and_min_p_are_refused_where_no_reply_is_sampled(tmp_path, serve_zoo):
    """Distribution mode reads the scale's probabilities whole: --top-k 40 --min-p 0.05 changed nothing sent or
    read but made another judge, labelled k40m0.05. Given, they are one sentence; the config file's (kept for
    sampled replies) are left out of such a judge."""
    _, url = serve_zoo()
    study = story_study(tmp_path / "s.db")
    before = digest(study)
    args = ("judge", "--db", study, "--model", "api:m", "--base-url", url, "--task", "story", "--mode", "distribution")
    for extra in (("--top-k", "40", "--min-p", "0.05"), ("--top-k", "40", "--check")):
        given = run_cli_process(*args, *extra)
        assert "--top-k" in _refused(given, study, before) and "leave them out" in given.stderr
    env = _config(tmp_path, "[judge]\ntop_k = 40\nmin_p = 0.05\n")
    result = run_cli_process(*args, "--limit", "1", env=env)
    assert result.returncode == 0, result.stderr
    assert "/distribution/plain/T1/p0.9/s0#" in result.stderr and "k40" not in result.stderr


def test_a_server_refusing_the_judges_own_cuts_is_said_at_the_end_of_the_run(tmp_path, serve_zoo):
    """A server that refuses top_k / min_p samples with its own; a judge labelled k40 had replies without that cut
    and nothing but each rating's sampling_sent said so. The run says it; a judge at the papers' default (no cut,
    which such a server's own sampling is) is not told."""
    _, url = serve_zoo(strict=True)
    args = ("judge", "--model", "api:m", "--base-url", url, "--task", "story", "--samples", "1", "--limit", "1")
    own = run_cli_process(*args, "--db", story_study(tmp_path / "own.db"), "--top-k", "40")
    assert own.returncode == 0, own.stderr
    assert (
        "tui-rater: note: the server refused top_k / min_p: 4 replies were sampled with its own settings, not this "
        "judge's --top-k / --min-p (each such rating records sampling_sent)"
    ) in own.stderr.splitlines()
    papers = run_cli_process(*args, "--db", story_study(tmp_path / "papers.db"))
    assert papers.returncode == 0, papers.stderr
    assert "note" not in papers.stderr


def test_a_config_files_thread_count_above_this_machines_cores_is_every_core(tmp_path, tiny_gguf):
    """[judge] n_threads kept for a bigger machine is every core here, not a refusal naming --threads (a flag the
    user did not give); the readings do not depend on it."""
    study = story_study(tmp_path / "s.db")
    env = _config(tmp_path, f"[judge]\nn_threads = {len(os.sched_getaffinity(0)) + 1}\n")
    args = ("judge", "--db", study, "--model", tiny_gguf, "--limit", "1", "--samples", "1", "--mode", "constrained")
    result = run_cli_process(*args, env=env, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "--threads" not in result.stderr

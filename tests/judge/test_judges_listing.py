"""`tui-rater judges`, `--judge-name` and judge labels, through the real CLI against loopback servers.

A judge configuration is named by a short label (``J1 zoo text``, or the user's ``--judge-name``) in
reports, the live pane and ``judges``; two names for the same model and URL are two judges; the
model id and ``system_fingerprint`` a server reports are recorded once per judge, and a change is a
second row, never merged; everything from data is shown literally.
"""

from __future__ import annotations

import hashlib
import json
import os
import sqlite3

from tests.support import STORIES, run_cli_process, story_study

ESC = "\x1b"


def _judge(db, url, *flags):
    """`tui-rater judge` with one worker (the order of the requests is the order of the jobs)."""
    result = run_cli_process(
        "judge", "--db", db, "--model", "api:zoo", "--base-url", url, "--samples", "2", "--workers", "1", *flags
    )
    assert result.returncode == 0, result.stderr
    return result


def _table(db) -> str:
    """`tui-rater judges` as a terminal shows it, wide enough that no value wraps."""
    result = run_cli_process("judges", "--db", db, env={**os.environ, "COLUMNS": "400"})
    assert result.returncode == 0, result.stderr
    return result.stdout


def _listing(db) -> list[dict]:
    result = run_cli_process("judges", "--db", db, "--format", "json")
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)["judges"]


def test_two_judge_names_on_one_server_are_two_judges_with_their_labels(tmp_path, serve_zoo):
    db = story_study(tmp_path / "judged.db", STORIES[:1])
    _, url = serve_zoo()
    first = _judge(db, url, "--judge-name", "fast server")
    assert "judge J1 fast server (api:zoo/text/plain/T1/p0.9/s0#" in first.stderr
    _judge(db, url, "--judge-name", "slow server")
    _judge(db, url)  # unnamed: labelled by its model and mode
    again = _judge(db, url, "--judge-name", "fast server")  # the same configuration: nothing new
    assert "judge J1 fast server" in again.stderr and "0 new jobs, 0 to run" in again.stderr
    judges = _listing(db)
    assert [j["label"] for j in judges] == ["J1 fast server", "J2 slow server", "J3 zoo text"]
    assert [j["config"].get("judge_name") for j in judges] == ["fast server", "slow server", None]
    # 1 story x 4 questions x 2 samples each, all read
    assert [(j["ratings"], j["failures"], j["jobs"]["done"]) for j in judges] == [(8, 0, 8)] * 3
    conn = sqlite3.connect(db)
    per_judge = conn.execute("SELECT rater_id, count(*) FROM ratings GROUP BY rater_id ORDER BY rater_id").fetchall()
    assert per_judge == [(j["id"], 8) for j in judges]
    # reports name them by their labels, and the legend ties each label to the id `judges` lists
    report = json.loads(run_cli_process("report", "--db", db, "--format", "json").stdout)["tasks"]["story"]
    legend = {r["evaluator"]: r["value"] for r in report if r["table"] == "judges"}
    assert legend == {j["label"]: j["id"] for j in judges}
    readings = {r["evaluator"] for r in report if r["table"] == "readings"}
    assert readings == {j["label"] for j in judges}
    table = run_cli_process("report", "--db", db).stdout
    assert "tui-rater judges" in table and "J2 slow server" in table


def test_the_served_model_and_a_fingerprint_change_mid_run_are_recorded_not_merged(tmp_path, serve_zoo):
    db = story_study(tmp_path / "judged.db", STORIES[:1])
    zoo, url = serve_zoo(served_model="zoo-7b-q4", fingerprints=("fp_one", "fp_two"), switch_every=5)
    _judge(db, url)
    assert zoo.chats == 8  # one reply per job: 4 questions x 2 samples
    [judge] = _listing(db)
    sources = [(s["source"], s["served_model"], s["system_fingerprint"], s["jobs"]) for s in judge["sources"]]
    assert sources == [(url, "zoo-7b-q4", "fp_one", 5), (url, "zoo-7b-q4", "fp_two", 3)]
    assert judge["source_changed"] is True
    assert judge["config"]["base_url"] == url and judge["config"]["api_model"] == "zoo"
    shown = _table(db)
    assert "system_fingerprint fp_one" in shown and "system_fingerprint fp_two" in shown
    assert "source changed" in shown and "model id zoo-7b-q4" in shown
    note = next(
        r["note"]
        for r in json.loads(run_cli_process("report", "--db", db, "--format", "json").stdout)["tasks"]["story"]
        if r["table"] == "judges"
    )
    assert "replies from 2 different sources" in note


def test_an_unchanging_server_is_one_row(tmp_path, serve_zoo):
    db = story_study(tmp_path / "judged.db", STORIES[:1])
    _, url = serve_zoo(served_model="zoo-7b-q4", fingerprints=("fp_same",))
    _judge(db, url)
    [judge] = _listing(db)
    assert [(s["served_model"], s["system_fingerprint"], s["jobs"]) for s in judge["sources"]] == [
        ("zoo-7b-q4", "fp_same", 8)
    ]
    assert judge["source_changed"] is False


def test_credentials_in_the_url_never_reach_the_listing(tmp_path, serve_zoo):
    db = story_study(tmp_path / "judged.db", STORIES[:1])
    _, url = serve_zoo(fingerprints=("fp_k",))
    secret = "sk-visible-in-url-1234567890"
    with_secret = url.replace("http://", f"http://user:{secret}@") + f"?api_key={secret}&api-version=2024-01"
    _judge(db, with_secret)
    listing = run_cli_process("judges", "--db", db, "--format", "json").stdout
    table = _table(db)
    assert secret not in listing and secret not in table
    [judge] = json.loads(listing)["judges"]
    assert judge["config"]["base_url"] == f"{url}?api_key=[redacted]&api-version=2024-01"
    assert {s["source"] for s in judge["sources"]} == {judge["config"]["base_url"]}


def test_hostile_names_and_fingerprints_are_shown_literally(tmp_path, serve_zoo):
    db = story_study(tmp_path / "judged.db", STORIES[:1])
    markup = "[bold red]boss[/] [link=x]y[/link]"
    fingerprint = f"fp_{ESC}]52;c;cHduZWQ={ESC}\\{ESC}[2J[red]x[/red]"
    _, url = serve_zoo(served_model=f"zoo{ESC}[31m", fingerprints=(fingerprint,))
    _judge(db, url, "--judge-name", markup)
    [judge] = _listing(db)
    assert judge["label"] == f"J1 {markup}"
    assert judge["sources"][0]["system_fingerprint"] == fingerprint  # stored as sent
    shown = _table(db)
    assert ESC not in shown
    assert f"J1 {markup}" in shown  # markup is text, not style
    assert "fp_⟨ESC⟩]52;c;cHduZWQ=⟨ESC⟩\\⟨ESC⟩[2J[red]x[/red]" in shown
    assert "model id zoo⟨ESC⟩[31m" in shown
    assert ESC not in run_cli_process("report", "--db", db).stdout
    assert f"| J1 {markup} |" in run_cli_process("report", "--db", db, "--format", "markdown").stdout


def test_bad_judge_names_are_one_sentence_and_store_nothing(tmp_path, serve_zoo):
    db = story_study(tmp_path / "judged.db", STORIES[:1])
    _, url = serve_zoo()
    for name, message in (
        ("", "--judge-name must not be empty"),
        ("   ", "--judge-name must not be empty"),
        ("two\nlines", "one line of text"),
        (f"esc{ESC}[31m", "without control characters"),
        ("x" * 41, "give at most 40"),
    ):
        result = run_cli_process("judge", "--db", db, "--model", "api:zoo", "--base-url", url, "--judge-name", name)
        assert result.returncode == 2, (name, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM raters").fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM jobs").fetchone()[0] == 0


def test_annotate_takes_one_judge_name_per_judge(tmp_path):
    db = story_study(tmp_path / "judged.db", STORIES[:1])
    result = run_cli_process(
        "annotate", "--db", db, "--annotator", "me", "--judge", "api:a", "--judge", "api:b", "--judge-name", "only one"
    )
    assert result.returncode == 2 and "give one --judge-name per --judge (2), or none; 1 given" in result.stderr
    assert sqlite3.connect(db).execute("SELECT count(*) FROM raters").fetchone()[0] == 0


def test_a_local_judge_lists_its_file_checksum_and_path(tmp_path, tiny_gguf):
    db = story_study(tmp_path / "judged.db", STORIES[:1])
    result = run_cli_process(
        "judge", "--db", db, "--model", tiny_gguf, "--samples", "1", "--max-tokens", "4", "--max-retries", "0"
    )
    assert result.returncode in (0, 1), result.stderr
    [judge] = _listing(db)
    assert judge["label"] == "J1 tiny text"
    assert judge["config"]["model_sha256"] == hashlib.sha256(tiny_gguf.read_bytes()).hexdigest()
    assert judge["config"]["backend"] == "llama.cpp" and judge["config"]["model_file"] == "tiny.gguf"
    assert [(s["source"], s["served_model"], s["jobs"]) for s in judge["sources"]] == [
        (str(tiny_gguf.resolve()), "", 4)
    ]
    shown = _table(db)
    assert judge["config"]["model_sha256"] in shown and "llama-cpp-python version" in shown


def test_the_real_llama_cpp_server_reports_its_model_id(tmp_path, llama_server):
    db = story_study(tmp_path / "judged.db", STORIES[:1])
    result = run_cli_process(
        "judge", "--db", db, "--model", "api:tiny", "--base-url", llama_server, "--samples", "1", "--max-tokens", "4"
    )
    assert result.returncode in (0, 1), result.stderr
    [judge] = _listing(db)
    # llama-cpp-python's server names the model it was asked for and sends no fingerprint: recorded as it said
    sources = [(s["source"], s["served_model"], s["system_fingerprint"], s["jobs"]) for s in judge["sources"]]
    assert sources == [(llama_server, "tiny", "", 4)]
    assert "model id tiny" in _table(db)

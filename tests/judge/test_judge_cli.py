"""`tui-rater judge`, `queue` and `reparse` as a user runs them."""

from __future__ import annotations

import sqlite3

from tests.support import SAMPLE, run_cli_process


def _demo_study(tmp_path):
    db = tmp_path / "s.db"
    assert run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db).returncode == 0
    return db


def test_judge_queue_and_reparse(tmp_path, tiny_gguf):
    db = _demo_study(tmp_path)
    result = run_cli_process(
        "judge",
        "--db",
        db,
        "--model",
        tiny_gguf,
        "--limit",
        "2",
        "--samples",
        "2",
        "--max-tokens",
        "8",
        "--max-retries",
        "0",
    )
    assert result.returncode in (0, 1), result.stderr
    assert "done: 16 jobs" in result.stdout
    again = run_cli_process(
        "judge",
        "--db",
        db,
        "--model",
        tiny_gguf,
        "--limit",
        "2",
        "--samples",
        "2",
        "--max-tokens",
        "8",
        "--max-retries",
        "0",
    )
    assert "0 new jobs, 0 to run" in again.stderr  # nothing is redone
    shown = run_cli_process("queue", "--db", db)
    assert shown.returncode == 0 and "16" in shown.stdout
    conn = sqlite3.connect(db)
    conn.execute("UPDATE ratings SET raw = 'I would rate it a 4.', value = NULL, parse_status = 'no_number'")
    conn.commit()
    reparsed = run_cli_process("reparse", "--db", db)
    assert "16 changed" in reparsed.stdout
    assert conn.execute("SELECT count(*) FROM ratings WHERE value = 4 AND parse_status = 'ok'").fetchone()[0] == 16


def test_judge_bad_input_is_one_sentence(tmp_path, tiny_gguf):
    db = _demo_study(tmp_path)
    cases = [
        (["--model", tmp_path / "missing.gguf"], "does not exist"),
        (["--model", SAMPLE / "stories.csv"], "not a GGUF file"),
        (["--model", tiny_gguf, "--variant", "v9"], "variant 'v9' does not apply"),
        (["--model", tiny_gguf, "--task", "nonesuch"], "unknown task"),
        (["--model", tiny_gguf, "--task", "story", "--variant", "v2"], "does not apply to task"),
        (["--model", "api:gpt-x", "--api-key-env", "TUI_RATER_NO_SUCH_KEY"], "no API key"),
    ]
    for flags, message in cases:
        result = run_cli_process("judge", "--db", db, *flags)
        assert result.returncode == 2, (flags, result.stderr)
        assert message in result.stderr and "Traceback" not in result.stderr
    assert sqlite3.connect(db).execute("SELECT count(*) FROM jobs").fetchone()[0] == 0


def test_queue_cancel_and_retry(tmp_path, tiny_gguf):
    from tui_rater.judge import queue
    from tui_rater.store.study import Study

    db = _demo_study(tmp_path)
    study = Study.open(db)
    rater = study.judge("j", {"x": 1})
    queue.enqueue(study, rater.id, [i.key for i in study.items()][:3], [("likability", "", 0), ("likability", "", 1)])
    out = run_cli_process("queue", "--db", db, "--cancel").stdout
    assert "cancelled 6 jobs" in out
    out = run_cli_process("queue", "--db", db, "--retry", "--rater", "j").stdout
    assert "queued 6 jobs again" in out
    assert queue.counts(study, rater.id)["queued"] == 6

"""`tui-rater judge`, `queue` and `reparse` as a user runs them."""

from __future__ import annotations

import sqlite3

from tests.support import SAMPLE, run_cli_process


def _demo_study(tmp_path):
    db = tmp_path / "s.db"
    assert run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db).returncode == 0
    return db


STATUSES = ("queued", "leased", "batched", "done", "failed", "cancelled")


def queue_table(stdout: str) -> dict[str, tuple[int, ...]]:
    """The "Judge queue" table `tui-rater queue` prints: judge label -> counts in STATUSES order. A label
    too long for the terminal is folded over several lines (their other cells empty): joined again
    (exactly, for a label without spaces: a space at a line break would be dropped)."""
    rows: list[list[str]] = []
    lines = stdout.split("Recent failures")[0].splitlines()
    header = next(i for i, line in enumerate(lines) if "judge" in line and "cancelled" in line)
    assert [c.strip() for c in lines[header].split("┃")[1:-1]] == ["judge", *STATUSES]
    for line in lines[header + 2 :]:
        cells = [c.strip() for c in line.split("│")[1:-1]]
        if len(cells) != len(STATUSES) + 1:
            continue  # the table's border
        if all(cells[1:]):
            rows.append(cells)
        else:  # the rest of a folded name
            assert not any(cells[1:]) and rows, line
            rows[-1][0] += cells[0]
    return {name: tuple(int(c) for c in counts) for name, *counts in rows}


def queue_in_file(db) -> dict[str, tuple[int, ...]]:
    """The same counts read from the study file with plain SQL, by each judge's label (else its name)."""
    conn = sqlite3.connect(db)
    found = conn.execute(
        "SELECT coalesce(r.label, r.name), j.status, count(*) FROM jobs j JOIN raters r ON r.id = j.rater_id "
        "GROUP BY 1, 2"
    ).fetchall()
    conn.close()
    by_judge: dict[str, dict[str, int]] = {}
    for name, status, n in found:
        by_judge.setdefault(name, {})[status] = n
    return {name: tuple(c.get(s, 0) for s in STATUSES) for name, c in by_judge.items()}


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
    assert shown.returncode == 0, shown.stderr
    listed = queue_table(shown.stdout)
    assert listed == queue_in_file(db) and list(listed.values()) == [(0, 0, 0, 16, 0, 0)]
    (label,) = listed  # whole, as --rater takes it
    assert queue_table(run_cli_process("queue", "--db", db, "--rater", label).stdout) == listed
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
    # another judge with a different count in each column (a column out of place shows), leased by a
    # worker of another host (its leases only expire): 1 done, 2 failed, 3 leased, 4 queued
    # its name longer than an 80-column table leaves for it (once cut with "…", so --rater could not take it)
    long_name = "k/gpt-4o-mini-2024-07-18/explicit-v4/T0.7/top-p-0.95/seed-12345"
    other, owner = study.judge(long_name, {"x": 2}), "elsewhere.invalid:1:w"
    queue.enqueue(study, other.id, [i.key for i in study.items()][:10], [("relevance", "", 0)])
    queue.complete(study, queue.lease(study, other.id, owner)[0], owner, [], {})
    for job in queue.lease(study, other.id, owner, max_jobs=2, min_jobs=2):
        queue.fail(study, job, owner, "auth", "no", retryable=False)
    assert len(queue.lease(study, other.id, owner, max_jobs=3, min_jobs=3)) == 3
    out = run_cli_process("queue", "--db", db, "--cancel", "--rater", "j").stdout
    assert out.startswith("cancelled 6 jobs\n")
    assert queue_table(out) == {"j": (0, 0, 0, 0, 0, 6)}  # --rater: that judge's row alone
    listed = queue_table(run_cli_process("queue", "--db", db).stdout)
    assert listed == queue_in_file(db) == {"j": (0, 0, 0, 0, 0, 6), long_name: (4, 3, 0, 1, 2, 0)}
    assert queue_table(run_cli_process("queue", "--db", db, "--rater", long_name).stdout) == {
        long_name: (4, 3, 0, 1, 2, 0)
    }
    out = run_cli_process("queue", "--db", db, "--retry", "--rater", "j").stdout
    assert out.startswith("queued 6 jobs again\n")
    assert queue_table(out) == {"j": (6, 0, 0, 0, 0, 0)}
    assert queue.counts(study, rater.id)["queued"] == 6


def test_threads_sets_llama_cpp_s_threads_for_a_local_model_only(tmp_path, tiny_gguf):
    db = tmp_path / "s.db"
    assert run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db).returncode == 0
    local = run_cli_process(
        "judge", "--db", db, "--model", tiny_gguf, "--threads", "1", "--limit", "1", "--samples", "1",
        "--max-tokens", "4", "--max-retries", "0",
    )  # fmt: skip
    assert local.returncode in (0, 1), local.stderr  # 1: the tiny model's replies hold no rating
    assert "Traceback" not in local.stderr
    conn = sqlite3.connect(db)
    config = conn.execute("SELECT config FROM raters WHERE kind = 'llm'").fetchone()[0]
    assert "n_threads" not in config  # not part of the judge
    conn.close()
    api = run_cli_process(
        "judge", "--db", db, "--model", "api:m", "--base-url", "http://127.0.0.1:9/v1", "--threads", "2"
    )
    assert api.returncode == 2 and "--threads applies to local .gguf models only" in api.stderr
    bad = run_cli_process("judge", "--db", db, "--model", tiny_gguf, "--threads", "0")
    assert bad.returncode == 2 and "--threads" in bad.stderr and "Traceback" not in bad.stderr

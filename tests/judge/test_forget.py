"""`tui-rater judges --forget LABEL`: a trial judge leaves the study, its reports and its queue, in one transaction."""

from __future__ import annotations

import json
import os
import pty
import sqlite3
import subprocess
import sys
import time

from tests.support import STORIES, run_cli_process
from tui_rater.store.study import Study


def _judged(tmp_path, tiny_gguf):
    """A study with a person's ratings and two judges (J1 text, J2 constrained), each with cached replies."""
    db = tmp_path / "f.db"
    study = Study.open(db)
    study.add_items(study.task("story"), STORIES)
    alice = study.human("alice")
    for item in study.items("story"):
        study.add_rating(item.key, "grammaticality", alice.id, 3)
    study.close()
    common = ("--db", db, "--model", tiny_gguf, "--limit", "2", "--samples", "1", "--max-retries", "0")
    assert run_cli_process("judge", *common, "--max-tokens", "8").returncode in (0, 1)
    assert run_cli_process("judge", *common, "--mode", "constrained").returncode == 0
    return db


def _rows(db, table: str, rater_id: int) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(f"SELECT count(*) FROM {table} WHERE rater_id = ?", [rater_id]).fetchone()[0]
    finally:
        conn.close()


def _judges(db) -> dict[str, int]:
    listed = json.loads(run_cli_process("judges", "--db", db, "--format", "json").stdout)["judges"]
    return {j["label"]: j["id"] for j in listed}


def test_forget_removes_the_judge_and_all_it_owns_and_nothing_else(tmp_path, tiny_gguf):
    db = _judged(tmp_path, tiny_gguf)
    judges = _judges(db)
    (j1,) = [label for label in judges if label.startswith("J1 ")]
    (j2,) = [label for label in judges if label.startswith("J2 ")]
    gone, kept = judges[j1], judges[j2]
    owned = {t: _rows(db, t, gone) for t in ("ratings", "jobs", "judge_sources", "replies")}
    assert owned["ratings"] == 8 and owned["jobs"] == 8 and owned["judge_sources"] == 1 and owned["replies"] > 0
    others = {t: _rows(db, t, kept) for t in ("ratings", "jobs", "judge_sources", "replies")}
    before_report = run_cli_process("report", "--db", db, "--format", "json")
    assert j1 in before_report.stdout

    result = run_cli_process("judges", "--db", db, "--forget", "J1", "--yes")
    assert result.returncode == 0, result.stderr
    assert f"forgot {j1}: removed 8 ratings, 8 jobs, 1 source, {owned['replies']} cached replies" in result.stdout

    assert {t: _rows(db, t, gone) for t in owned} == dict.fromkeys(owned, 0)
    assert {t: _rows(db, t, kept) for t in others} == others  # the other judge keeps everything
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM raters WHERE id = ?", [gone]).fetchone()[0] == 0
    assert conn.execute("SELECT count(*) FROM ratings r JOIN raters ra ON ra.id = r.rater_id "
                        "WHERE ra.name = 'alice'").fetchone()[0] == len(STORIES)  # fmt: skip
    assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    conn.close()
    assert list(_judges(db)) == [j2]
    report = run_cli_process("report", "--db", db, "--format", "json")
    assert report.returncode == 0 and j1 not in report.stdout and j2 in report.stdout
    queue = run_cli_process("queue", "--db", db)
    assert j1 not in queue.stdout
    # a new judge is numbered after the highest number in use: never a second J2
    again = run_cli_process(
        "judge", "--db", db, "--model", tiny_gguf, "--limit", "1", "--samples", "1", "--mode", "distribution"
    )
    assert again.returncode in (0, 1), again.stderr
    assert any(label.startswith("J3 ") for label in _judges(db))


def test_forget_asks_and_refuses_without_a_terminal(tmp_path, tiny_gguf):
    db = _judged(tmp_path, tiny_gguf)
    before = _judges(db)
    piped = run_cli_process("judges", "--db", db, "--forget", "J1")  # stdin is not a terminal
    assert piped.returncode == 2 and "needs a yes" in piped.stderr and "--yes" in piped.stderr
    assert "8 ratings, 8 jobs" in piped.stderr  # it says what would go
    for wanted, said in (("J9", "no judge 'J9'"), ("alice", "is an annotator, not a judge")):
        refused = run_cli_process("judges", "--db", db, "--forget", wanted, "--yes")
        assert refused.returncode == 2 and said in refused.stderr
    assert _judges(db) == before

    def answer(text: str) -> tuple[int, str]:
        """Run --forget in a terminal (a pty), answer the question with ``text``."""
        leader, follower = pty.openpty()
        cmd = [sys.executable, "-m", "tui_rater.cli", "judges", "--db", str(db), "--forget", "J1"]
        proc = subprocess.Popen(cmd, stdin=follower, stdout=follower, stderr=follower, env=dict(os.environ))
        os.close(follower)
        seen = b""
        deadline = time.monotonic() + 30
        while b"[y/N]" not in seen and time.monotonic() < deadline:
            seen += os.read(leader, 4096)
        os.write(leader, text.encode() + b"\n")
        code = proc.wait(30)
        try:
            while chunk := os.read(leader, 4096):
                seen += chunk
        except OSError:
            pass
        os.close(leader)
        return code, seen.decode(errors="replace")

    code, shown = answer("n")
    assert code == 1 and "8 ratings, 8 jobs, 1 source" in shown and "nothing removed" in shown
    assert _judges(db) == before
    code, shown = answer("y")
    assert code == 0 and "forgot J1" in shown
    assert len(_judges(db)) == len(before) - 1

"""Kill a judge process mid-run (SIGKILL), resume: nothing lost, nothing stored twice."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from tests.support import STORIES
from tui_rater.store.study import Study

pytestmark = pytest.mark.slow


def _done(db) -> int:
    conn = sqlite3.connect(db, timeout=30)
    try:
        return conn.execute("SELECT count(*) FROM jobs WHERE status = 'done'").fetchone()[0]
    finally:
        conn.close()


def test_sigkill_then_resume(tmp_path, tiny_gguf):
    db = tmp_path / "crash.db"
    study = Study.open(db)
    # distinct texts: identical prompts would be answered from the reply cache and end the run too soon
    study.add_items(
        study.task("story"),
        [dict(s, id=f"{s['id']}-{k}", story=f"{s['story']} (copy {k})") for k in range(10) for s in STORIES],
    )
    study.close()
    cmd = [
        sys.executable,
        "-m",
        "tui_rater.cli",
        "judge",
        "--db",
        str(db),
        "--model",
        str(tiny_gguf),
        "--max-tokens",
        "48",
        "--samples",
        "2",
        "--max-retries",
        "0",
    ]
    total = 40 * 4 * 2
    killed_at = []
    for trial in range(3):
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        target = (trial + 1) * total // 8
        deadline = time.monotonic() + 120
        while _done(db) < target and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        killed_at.append(_done(db))
    assert killed_at[-1] < total, f"the run finished before it could be killed: {killed_at}"
    finish = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert finish.returncode in (0, 1), finish.stderr
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM jobs WHERE status = 'done'").fetchone()[0] == total
    assert conn.execute("SELECT count(*) FROM ratings").fetchone()[0] == total
    assert (
        conn.execute("SELECT count(*) FROM (SELECT DISTINCT item_key, attribute, sample FROM ratings)").fetchone()[0]
        == total
    )
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

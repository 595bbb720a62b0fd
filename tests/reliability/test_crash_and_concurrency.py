"""Crashes (SIGKILL at random moments) and concurrent writers on one study file."""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from tests.support import ROOT
from tui_rater.store.study import Study

pytestmark = pytest.mark.slow

HERE = Path(__file__).parent
TRIALS = 20


def _study(tmp_path, name="s.db", copies=1) -> Path:
    db = tmp_path / name
    study = Study.open(db)
    rows = [
        {
            "id": f"{i}-{k}",
            "system": "human",
            "prompt": "P",
            "story": f"Story {i}-{k}. " + "The dragon counted stitches by the fire until dawn came. " * 6,
        }
        for k in range(copies)
        for i in range(12)
    ]
    study.add_items(study.task("story"), rows)
    study.close()
    return db


def _annotator(db, name, seconds):
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, str(HERE / "annotator_proc.py"), str(db), name, str(seconds)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )


def test_sigkill_annotator_loses_nothing_acknowledged(tmp_path):
    db = _study(tmp_path)
    rng = random.Random(1)
    acknowledged = set()
    for trial in range(TRIALS):
        proc = _annotator(db, f"ann-{trial % 3}", 30)
        lines = []
        reader = threading.Thread(target=lines.extend, args=(proc.stdout,), daemon=True)
        reader.start()
        time.sleep(rng.uniform(0.25, 0.9))  # a random moment after start-up
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        reader.join(5)
        acknowledged |= {int(line.split()[1]) for line in lines if line.startswith("ACK")}
    conn = sqlite3.connect(db)
    stored = {r[0] for r in conn.execute("SELECT id FROM ratings")}
    print(
        f"\nannotator kills: {TRIALS}, acknowledged ratings: {len(acknowledged)}, missing: {len(acknowledged - stored)}"
    )
    assert acknowledged and acknowledged <= stored
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_sigkill_judge_resumes_without_doubles(tmp_path, slower_gguf):
    db = _study(tmp_path, copies=12)  # 144 items x 4 attributes x 2 samples
    total = 144 * 4 * 2
    cmd = [
        sys.executable,
        "-m",
        "tui_rater.cli",
        "judge",
        "--db",
        str(db),
        "--model",
        str(slower_gguf),
        "--max-tokens",
        "64",
        "--samples",
        "2",
        "--max-retries",
        "0",
    ]
    rng = random.Random(2)
    kills = 0
    for _trial in range(TRIALS):
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(rng.uniform(0.2, 1.0))
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            kills += 1
        proc.wait()
    done_before = sqlite3.connect(db).execute("SELECT count(*) FROM jobs WHERE status = 'done'").fetchone()[0]
    print(f"\njudge kills: {kills} of {TRIALS} runs; done before the final run: {done_before}")
    assert kills >= TRIALS // 2
    finish = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert finish.returncode in (0, 1), finish.stderr
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM jobs WHERE status = 'done'").fetchone()[0] == total
    assert conn.execute("SELECT count(*) FROM ratings").fetchone()[0] == total
    assert (
        conn.execute("SELECT count(*) FROM (SELECT DISTINCT job_id, attribute, sample FROM ratings)").fetchone()[0]
        == total
    )
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_four_annotators_and_two_judges_for_30_seconds(tmp_path, tiny_gguf):
    seconds = float(os.environ.get("TUI_RATER_SOAK_S", "30"))
    db = _study(tmp_path, copies=10)
    judge_cmd = [
        sys.executable,
        "-m",
        "tui_rater.cli",
        "judge",
        "--db",
        str(db),
        "--model",
        str(tiny_gguf),
        "--max-tokens",
        "16",
        "--samples",
        "3",
        "--max-retries",
        "0",
    ]
    judges = [subprocess.Popen(judge_cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    annotators = [_annotator(db, f"soak-{k}", seconds) for k in range(4)]
    results = [p.communicate(timeout=seconds + 120) for p in annotators]
    for judge in judges:  # the judges may still be busy: stop them as a user would (Ctrl-C)
        if judge.poll() is None:
            judge.send_signal(signal.SIGINT)
    judge_out = [j.communicate(timeout=120) for j in judges]
    for (_out, err), proc in zip(results, annotators):
        assert proc.returncode == 0, err
        assert "locked" not in err and "Traceback" not in err
    for _out, err in judge_out:
        assert "locked" not in err and "Traceback" not in err
    conn = sqlite3.connect(db)
    for _k, (out, _) in enumerate(results):
        acked = [int(line.split()[1]) for line in out.splitlines() if line.startswith("ACK")]
        assert acked, "an annotator wrote nothing"
        found = conn.execute(f"SELECT count(*) FROM ratings WHERE id IN ({','.join(map(str, acked))})").fetchone()[0]
        assert found == len(acked)
    done = conn.execute("SELECT count(*) FROM jobs WHERE status = 'done'").fetchone()[0]
    judged = conn.execute("SELECT count(*) FROM ratings WHERE job_id IS NOT NULL").fetchone()[0]
    human = conn.execute("SELECT count(*) FROM ratings WHERE job_id IS NULL").fetchone()[0]
    print(f"\nsoak {seconds:g} s: {human} annotator ratings, {judged} judge ratings, {done} jobs done")
    assert done > 0 and judged == done  # one rating per text-mode job, none doubled
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"

"""`tui-rater judge`'s progress when two processes drain one judge's queue on the same study file."""

from __future__ import annotations

import re
import sqlite3
import subprocess
import sys

from tests.support import SAMPLE, Script, ok_body, run_cli_process


def test_two_judge_processes_on_one_file_each_end_with_the_whole_queue_done(tmp_path, fake_server):
    """Each bar counts the jobs of the queue, whoever did them: before, each process's bar ended near half way,
    with time still "left", and its last line did not say that another process did the rest."""
    db = tmp_path / "s.db"
    assert run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db).returncode == 0
    url = fake_server(Script([(200, {}, ok_body("Rating: 4"), 0.05)]))
    args = [sys.executable, "-m", "tui_rater.cli", "judge", "--db", str(db), "--model", "api:m"]
    args += ["--base-url", url, "--limit", "6", "--samples", "1", "--workers", "2"]
    # 24 jobs (6 stories x 4 questions): whichever plans first enqueues them, both drain them
    procs = [subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outputs
    done_here = []
    for out, err in outputs:
        bars = re.findall(r"(\d+)/(\d+)", out + err)
        assert bars and bars[-1][0] == bars[-1][1], err  # the bar ends full
        done = re.search(r"done: (\d+) jobs", out)
        assert done, out
        done_here.append(int(done.group(1)))
        others = re.search(r", (\d+) by another process on this file", out)
        total = int(bars[-1][1])
        assert int(done.group(1)) + (int(others.group(1)) if others else 0) == total, (out, err)
    assert sum(done_here) == 24
    with sqlite3.connect(db) as conn:
        query = "SELECT count(*) FROM ratings r JOIN raters j ON j.id = r.rater_id WHERE j.kind = 'llm'"
        assert conn.execute(query).fetchone()[0] == 24  # none stored twice, none lost

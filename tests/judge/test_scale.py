"""The queue at scale (issue 25, item 5): a lease reads one item's jobs, not the whole queue; planning a judge again
adds nothing and builds no row per job; a large study's jobs are queued behind the workers, who drain them all."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time

import pytest

from tests.support import STORIES, run_cli_process
from tui_rater.domain.decoding import Decoding
from tui_rater.judge import queue
from tui_rater.judge.spec import JudgeSpec
from tui_rater.judge.worker import run_judge
from tui_rater.service.judging import plan_judge, start_judge
from tui_rater.store import jobs
from tui_rater.store.study import Study


def _many(n: int) -> list[dict[str, str]]:
    # distinct texts: identical prompts would be answered from the reply cache
    return [dict(STORIES[k % 4], id=f"m{k}", story=f"{STORIES[k % 4]['story']} ({k})") for k in range(n)]


def _plan(sql: str, conn: sqlite3.Connection) -> str:
    return " | ".join(row[3] for row in conn.execute("EXPLAIN QUERY PLAN " + sql, [1] * sql.count("?")))


def test_the_lease_queries_walk_an_index_in_item_order_without_sorting_the_queue(tmp_path):
    """Before: SELECT DISTINCT over every ready job, then a temporary B-tree to order them (0.5 s a lease on 1.2M
    jobs); now the next item comes off jobs_next in order, and its jobs through the UNIQUE (item_key, ...) index."""
    study = Study.open(tmp_path / "s.db")
    conn = study._db.conn
    for sql in (jobs.NEXT_QUEUED, jobs.NEXT_EXPIRED):
        plan = _plan(sql, conn)
        assert "INDEX jobs_next (rater_id=? AND status=?)" in plan and "TEMP B-TREE" not in plan, plan
    assert "(item_key=?)" in _plan(jobs.ITEM_READY, conn) and "jobs_next" not in _plan(jobs.ITEM_READY, conn)
    count = _plan("SELECT count(*) FROM jobs WHERE status IN ('queued', 'leased') AND rater_id = ?", conn)
    assert "COVERING INDEX jobs_next" in count  # the progress bar's count reads the index alone


def test_a_lease_takes_the_lowest_ready_item_whether_queued_or_expired(tmp_path):
    study = Study.open(tmp_path / "s.db")
    study.add_items(study.task("story"), _many(6))
    rater = study.judge("j", {"x": 1})
    keys = [item.key for item in study.items("story")]
    assert queue.enqueue(study, rater.id, keys, [("a", "", 0), ("b", "", 0)]) == 12
    first = queue.lease(study, rater.id, "w1", now=100.0, lease_s=10.0)
    assert {job.item_key for job in first} == {keys[0]} and [job.attribute for job in first] == ["a", "b"]
    second = queue.lease(study, rater.id, "w2", now=101.0, lease_s=10.0)
    assert {job.item_key for job in second} == {keys[1]}
    # the first lease ran out: its item (the lowest) comes before every queued one
    again = queue.lease(study, rater.id, "w3", now=111.0, lease_s=10.0, min_jobs=3)
    assert [job.item_key for job in again] == [keys[0], keys[0], keys[2], keys[2]]
    assert [job.id for job in again[:2]] == [job.id for job in first]


def test_planning_again_adds_nothing_with_one_statement_per_task_and_no_row_per_job(tmp_path, tiny_gguf):
    """Before: a Python tuple per job and an INSERT per tuple on every start (12.8 s for nothing new on 100k
    items); now one INSERT ... SELECT per task, whose rows SQLite builds."""
    study = Study.open(tmp_path / "s.db")
    study.add_items(study.task("story"), _many(30))
    spec = JudgeSpec(str(tiny_gguf), mode="constrained", decoding=Decoding(samples=3)).validate()
    first = plan_judge(study, spec, ["story"])
    assert first.added == first.pending == 30 * 4 * 3 and not first.rest
    statements: list[str] = []
    study._db.conn.set_trace_callback(statements.append)
    again = plan_judge(study, spec, ["story"])
    study._db.conn.set_trace_callback(None)
    assert again.added == 0 and again.pending == 360 and again.rater.id == first.rater.id
    inserts = [s for s in statements if "INTO jobs" in s]
    assert len(inserts) == 1, inserts
    # the jobs of an item are in its shapes' order, the items in import order
    rows = study._db.conn.execute("SELECT item_key, attribute, sample FROM jobs ORDER BY id").fetchall()
    keys = [item.key for item in study.items("story")]
    attributes = [a.name for a in study.task("story").attributes]
    assert rows == [(k, a, s) for k in keys for a in attributes for s in range(3)]
    # --limit: only the first items
    limited = plan_judge(
        study, JudgeSpec(str(tiny_gguf), mode="constrained", decoding=Decoding(samples=1)).validate(), ["story"], 7
    )
    assert limited.added == 7 * 4
    assert {
        r[0] for r in study._db.conn.execute("SELECT item_key FROM jobs WHERE rater_id = ?", [limited.rater.id])
    } == set(keys[:7])


def test_the_longest_items_are_chosen_in_sql_among_the_first_ones(tmp_path):
    study = Study.open(tmp_path / "s.db")
    items = _many(10)
    items[3]["story"] = "long " * 300
    items[8]["story"] = "longer " * 300
    study.add_items(study.task("story"), items)
    assert [item.id for item in study.longest_items("story", 2)] == ["m8", "m3"]
    assert [item.id for item in study.longest_items("story", 1, first=5)] == ["m3"]


def test_workers_wait_for_the_feeding_before_they_call_the_queue_drained(tmp_path, deterministic_judge, monkeypatch):
    """The drain rule: a queue found empty while jobs are still being queued is not drained. The workers start on
    an empty queue and find nothing for a second; the jobs come later, and every one is done exactly once."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    db = tmp_path / "s.db"
    study = Study.open(db)
    study.add_items(study.task("story"), _many(5))
    spec = JudgeSpec("api:m", base_url=deterministic_judge, decoding=Decoding(samples=1)).validate()
    plan = plan_judge(study, spec, ["story"], first=0)
    assert plan.added == 0 and plan.items_left == 5
    fed = threading.Event()
    threads, progress, _ = run_judge(db, plan.rater.id, spec, plan.config, workers=2, fed=fed)
    time.sleep(1.0)
    assert all(t.is_alive() for t in threads)  # waiting, not drained
    added = queue.enqueue_task(study, plan.rater.id, "story", plan.rest[0].shapes, 0, 5)
    fed.set()
    progress.add()
    for t in threads:
        t.join(60)
    assert not any(t.is_alive() for t in threads) and progress.fatal is None
    assert added == progress.done == 20
    assert queue.counts(study, plan.rater.id)["done"] == 20


def test_a_run_queues_the_rest_behind_its_workers_and_does_every_job_once(tmp_path, deterministic_judge, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    db = tmp_path / "s.db"
    study = Study.open(db)
    study.add_items(study.task("story"), _many(23))
    spec = JudgeSpec("api:m", base_url=deterministic_judge, decoding=Decoding(samples=2)).validate()
    plan = plan_judge(study, spec, ["story"], limit=21, first=4)
    assert plan.added == 4 * 8 and plan.items_left == 17
    run = start_judge(db, plan, workers=3, chunk_items=3)
    assert run.wait(120) and run.progress.fatal is None
    assert run.feeder is not None and run.feeder.added == 17 * 8 and run.total() == 21 * 8
    assert run.progress.done == 21 * 8 and queue.counts(study, plan.rater.id)["done"] == 21 * 8
    stored = study._db.conn.execute(
        "SELECT count(*), count(DISTINCT job_id || ' ' || attribute || ' ' || sample), count(DISTINCT item_key) "
        "FROM ratings WHERE rater_id = ?",
        [plan.rater.id],
    ).fetchone()
    assert stored == (21 * 8, 21 * 8, 21)  # each job's rating once; the 22nd and 23rd items untouched (--limit)


@pytest.mark.slow
def test_ctrl_c_while_jobs_are_still_being_queued_exits_130_in_2_s_with_none_leased(tmp_path, tiny_gguf):
    db = tmp_path / "s.db"
    study = Study.open(db)
    study.add_items(study.task("story"), _many(9000))
    study.close()
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    args = [sys.executable, "-m", "tui_rater.cli", "judge", "--db", str(db), "--model", str(tiny_gguf)]
    proc = subprocess.Popen(
        [*args, "--mode", "constrained"], stderr=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env
    )
    assert proc.stderr is not None
    for line in proc.stderr:
        if "worker(s)" in line:
            break
    assert "(queueing the jobs of 7000 more items meanwhile)" in line, line
    time.sleep(0.3)  # the bar is up (Ctrl-C before it is the CLI's general case), the rest still being queued
    proc.send_signal(signal.SIGINT)
    start = time.monotonic()
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert time.monotonic() - start < 2.0
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM jobs WHERE status = 'leased'").fetchone()[0] == 0
    assert "Traceback" not in err
    assert run_cli_process("queue", "--db", db).returncode == 0


def test_an_api_judge_s_workers_share_a_small_run_s_replies(tmp_path, fake_server, monkeypatch):
    """One item, 12 replies (4 questions x 3 samples), 4 workers: the replies are asked side by side, not by the one
    worker that leased the whole item (a 3-item run left 13 of 16 workers idle and the server decoding one reply
    at a time)."""
    from tests.support import Script, ok_body

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    script = Script([(200, {}, ok_body("4"), 0.4)])
    url = fake_server(script)
    db = tmp_path / "s.db"
    study = Study.open(db)
    study.add_items(study.task("story"), _many(1))
    spec = JudgeSpec("api:m", base_url=url, decoding=Decoding(samples=3), max_retries=0).validate()
    run = start_judge(db, plan_judge(study, spec, ["story"]), workers=4)
    assert run.wait(60) and run.progress.fatal is None and run.progress.done == 12
    times = sorted(script.times)
    assert len(times) == 12
    # at most 4 requests at a time: 3 rounds of 0.4 s, not 12 (one worker asking all the item's jobs in turn)
    in_flight = max(sum(1 for t in times if start <= t < start + 0.35) for start in times)
    assert in_flight >= 3, times


def test_the_rest_is_queued_once_a_worker_holds_its_backend_not_while_the_client_loads(
    tmp_path, deterministic_judge, monkeypatch
):
    """Issue 35 item 4: the feeder's chunks took the GIL and the write lock while the workers' client library was
    being imported (`import openai`: a second of pure Python), so launch -> first request lasted as long as both.
    Now nothing more is queued until a worker's first job has ended; a backend that takes its time (here: held
    back for 1 s) sees the queue as the plan left it."""
    from tui_rater.judge.worker import make_backend

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    db = tmp_path / "s.db"
    study = Study.open(db)
    study.add_items(study.task("story"), _many(12))
    spec = JudgeSpec("api:m", base_url=deterministic_judge, decoding=Decoding(samples=1)).validate()
    plan = plan_judge(study, spec, ["story"], first=2)
    gate, seen = threading.Event(), []

    def slow_backend(spec: JudgeSpec):  # the real backend, made after the gate opens
        seen.append(queue.counts(study, plan.rater.id)["queued"] + queue.counts(study, plan.rater.id)["leased"])
        gate.wait(30)
        return make_backend(spec)

    run = start_judge(db, plan, workers=2, chunk_items=2, backend_factory=slow_backend)
    time.sleep(1.0)
    assert run.feeder is not None and run.feeder.added == 0 and not run.feeder.fed.is_set()
    assert queue.counts(study, plan.rater.id)["queued"] + queue.counts(study, plan.rater.id)["leased"] == plan.added
    gate.set()
    assert run.wait(120) and run.progress.fatal is None
    assert run.feeder.added == 10 * 4 and run.progress.done == 12 * 4
    assert seen and max(seen) == plan.added


def test_the_rest_is_queued_once_a_first_request_is_answered_not_while_it_is_made(tmp_path, fake_server, monkeypatch):
    """Issue 35 item 4: a chunk queued while the first request was being made (the feeder began once the backend was
    made) held the write lock and the GIL the worker needed first. The first request held by the server: nothing
    more is queued until its reply comes, and then every job is queued and done once."""
    from tests.support import Script, ok_body

    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    db = tmp_path / "s.db"
    study = Study.open(db)
    study.add_items(study.task("story"), _many(6))
    script = Script([(200, {}, ok_body("4"), 6.0), (200, {}, ok_body("4"), 0)])  # the first reply held 6 s
    spec = JudgeSpec("api:m", base_url=fake_server(script), decoding=Decoding(samples=1)).validate()
    plan = plan_judge(study, spec, ["story"], first=2)
    run = start_judge(db, plan, workers=1, chunk_items=2)
    deadline = time.monotonic() + 60
    while not script.times and time.monotonic() < deadline:
        time.sleep(0.01)
    assert script.times, "the first request never came"
    time.sleep(1.0)  # the reply is still held: a feeder begun with the backend would have queued its chunks by now
    assert len(script.times) == 1
    assert run.feeder is not None and run.feeder.added == 0 and not run.feeder.fed.is_set()
    assert run.wait(120) and run.progress.fatal is None
    assert run.feeder.added == 4 * 4 and run.progress.done == 6 * 4
    assert queue.counts(study, plan.rater.id)["done"] == 6 * 4


def test_a_run_whose_first_items_are_done_still_queues_the_rest(tmp_path, deterministic_judge, monkeypatch):
    """No job to lease at the start (the plan queued nothing): the workers find the queue empty and the feeder
    starts then (it waits for a worker's backend or an empty queue, never for a job that cannot come)."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    db = tmp_path / "s.db"
    study = Study.open(db)
    study.add_items(study.task("story"), _many(5))
    spec = JudgeSpec("api:m", base_url=deterministic_judge, decoding=Decoding(samples=1)).validate()
    plan = plan_judge(study, spec, ["story"], first=0)
    assert plan.added == 0 and plan.items_left == 5
    run = start_judge(db, plan, workers=2, chunk_items=2)
    assert run.wait(120) and run.progress.fatal is None
    assert run.progress.done == 5 * 4 and queue.counts(study, plan.rater.id)["done"] == 5 * 4

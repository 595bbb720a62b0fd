"""A plug-in protocol's values are checked (issue 36.5), through the real CLI with the walk-through's package
installed as a user installs it (`test_fourth_protocol_package.py`).

Its `parse` returned 1e308 on a 1-10 question: `judge` said "6 of 6 readings usable" and stored it, and `report`
then exited 70 ("a bug in tui-rater"); a NaN was stored as NULL and counted usable; a `parse` that never returned
held `judge` forever. Now a value off the question's scale or not finite is the typed failure `invalid_value`
naming the plug-in, and a reading that does not return fails its job with a reason and ends the judge.
"""

from __future__ import annotations

import json
import sqlite3

import pytest

from tests.judge.test_fourth_protocol_package import HUMAN_RATINGS, ITEMS, MODULE, TASK, cli, install
from tests.support import Script, ok_body
from tui_rater.domain.protocols.guard import PLUGIN_DEADLINE_S

RETURNS = "\n    def parse(self, text, attribute, variant):\n        return ParseResult({value})\n"


def _study(tmp_path, module: str):
    (tmp_path / "mt.toml").write_text(TASK)
    (tmp_path / "items.csv").write_text(ITEMS)
    (tmp_path / "human.csv").write_text(HUMAN_RATINGS)
    env = install(tmp_path, module)
    db = tmp_path / "mt.db"
    importing = ("import", tmp_path / "items.csv", "--task", "mt-bench", "--task-file", tmp_path / "mt.toml")
    assert (done := cli(*importing, "--db", db, env=env)).returncode == 0, done.stderr
    assert (done := cli("import-ratings", tmp_path / "human.csv", "--db", db, env=env)).returncode == 0, done.stderr
    return db, env


def _judged(db):
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT value, parse_status, details FROM ratings WHERE job_id IS NOT NULL").fetchall()


@pytest.mark.parametrize("value", ["1e308", "float('nan')", "-float('inf')", "11.0"])
def test_a_plugin_value_off_the_scale_or_not_finite_is_a_typed_failure_naming_it(tmp_path, fake_server, value):
    db, env = _study(tmp_path, MODULE + RETURNS.format(value=value))
    url = fake_server(Script([(200, {}, ok_body("[[7]]"), 0)]))
    done = cli("judge", "--db", db, "--model", "api:m", "--base-url", url, "--samples", "1", env=env)
    assert done.returncode == 1, (done.stdout, done.stderr)  # nothing usable: not a success
    assert "Traceback" not in done.stderr
    assert "0 of 6 readings usable; typed failures: 6 invalid_value from protocol 'bracket-rating'" in done.stdout
    judged = _judged(db)
    assert [(v, status) for v, status, _ in judged] == [(None, "invalid_value")] * 6
    said = json.loads(judged[0][2])["invalid_value"]
    assert said.startswith("protocol 'bracket-rating' (a plug-in, mt_bench_protocol.BracketRating) read ")
    assert said.endswith("not a value on the question's scale (likert 1-10)")
    report = cli("report", "--db", db, "--task", "mt-bench", "--format", "json", env=env)
    assert report.returncode == 0, report.stderr  # was 70, "a bug in tui-rater", on the stored 1e308
    reparsed = cli("reparse", "--db", db, env=env)  # reparse reads through the same check: nothing changes
    assert reparsed.returncode == 0 and "0 changed" in reparsed.stdout, reparsed.stdout + reparsed.stderr


def test_a_plugin_value_on_the_scale_is_stored(tmp_path, fake_server):
    db, env = _study(tmp_path, MODULE + RETURNS.format(value="7.5"))
    url = fake_server(Script([(200, {}, ok_body("[[7]]"), 0)]))
    done = cli("judge", "--db", db, "--model", "api:m", "--base-url", url, "--samples", "1", env=env)
    assert done.returncode == 0, done.stderr
    assert "6 of 6 readings usable" in done.stdout
    assert [(v, status) for v, status, _ in _judged(db)] == [(7.5, "ok")] * 6


def test_a_plugin_parse_that_never_returns_fails_its_job_and_the_judge_ends(tmp_path, fake_server):
    hangs = "\n    def parse(self, text, attribute, variant):\n        __import__('threading').Event().wait()\n"
    db, env = _study(tmp_path, MODULE + hangs)
    url = fake_server(Script([(200, {}, ok_body("[[7]]"), 0)]))
    done = cli("judge", "--db", db, "--model", "api:m", "--base-url", url, "--samples", "1", env=env)
    assert done.returncode == 2, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert (
        "tui-rater: error: the judge stopped: protocol 'bracket-rating' (a plug-in, mt_bench_protocol.BracketRating) "
        f"did not return from reading a reply within {PLUGIN_DEADLINE_S:g} s"
    ) in done.stderr
    with sqlite3.connect(db) as conn:
        jobs = dict(conn.execute("SELECT status, count(*) FROM jobs GROUP BY status").fetchall())
        kinds = {k for (k,) in conn.execute("SELECT error_kind FROM jobs WHERE status = 'failed'")}
    assert jobs.get("failed", 0) >= 1 and kinds == {"protocol"}, jobs
    assert not jobs.get("leased"), jobs  # nothing left held: the next run can go on
    assert not _judged(db)

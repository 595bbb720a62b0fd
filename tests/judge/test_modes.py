"""A judge's mode is an object (domain/modes.py, issue 23 item 2): the worker asks and reads through it, reparse
reads the stored answers again through the same object, `judge --check` asks the mode what to read and how to judge
it, and a new mode is one module (tests/judge/geval_mode.py)."""

from __future__ import annotations

import json

import pytest

from tests.judge import geval_mode
from tests.support import SAMPLE
from tui_rater.domain.modes import MODES, Details
from tui_rater.service.reparse import reparse
from tui_rater.store.study import Study


@pytest.fixture
def geval():
    geval_mode.install()
    try:
        yield geval_mode.GEVAL
    finally:
        MODES.pop(geval_mode.GEVAL.name)


def test_a_new_mode_is_one_module(tmp_path, cli, deterministic_judge, geval):
    db = tmp_path / "s.db"
    assert cli("import", SAMPLE / "stories.csv", "--task", "story", "--db", db)[0] == 0
    code, _out, err = cli(
        "judge", "--db", db, "--model", "api:det", "--base-url", deterministic_judge, "--mode", "geval", "--limit", "2"
    )
    assert code == 0, err
    study = Study.open(db)
    rows = study._db.conn.execute(
        "SELECT r.id, r.value, r.parse_status, r.details FROM ratings r JOIN raters ra ON ra.id = r.rater_id "
        "WHERE ra.kind = 'llm'"
    ).fetchall()
    assert len(rows) == 2 * 4  # two stories, four questions, one reading each (a pass, not three samples)
    for _id, value, status, details in rows:
        stored = json.loads(details)
        weighted = sum(p * int(label) for label, p in stored[Details.DISTRIBUTION].items())
        assert status == "ok" and value == pytest.approx(weighted)
        assert 1 < value < 5 and value != round(value)  # a weighted score, not a drawn option
    config = json.loads(study._db.conn.execute("SELECT config FROM raters WHERE kind = 'llm'").fetchone()[0])
    assert config["mode"] == "geval"
    # reparse reads the stored passes through the same object: nothing changes, a tampered value comes back
    assert reparse(study).changed == 0
    tampered = rows[0][0]
    with study._db.conn:
        study._db.conn.execute("UPDATE ratings SET value = 1 WHERE id = ?", [tampered])
    result = reparse(study)
    assert result.checked == 8 and result.changed == 1
    restored = study._db.conn.execute("SELECT value FROM ratings WHERE id = ?", [tampered]).fetchone()[0]
    assert restored == pytest.approx(rows[0][1])
    study.close()


def test_a_new_mode_brings_its_own_pre_flight_check(tmp_path, cli, deterministic_judge, geval):
    """`judge --check --mode geval` reads what G-Eval's check names (the options' logprobs on the server) and
    judges them by G-Eval's own rule, defined in its module: questions below --min-mass counted, not the median."""
    db = tmp_path / "s.db"
    assert cli("import", SAMPLE / "stories.csv", "--task", "story", "--db", db)[0] == 0
    check = ("judge", "--db", db, "--model", "api:det", "--base-url", deterministic_judge, "--mode", "geval")
    code, out, err = cli(*check, "--check", "--check-items", "1", "--format", "json")
    assert code == 0, err
    report = json.loads(out)
    masses = [c["mass"] for c in report["checks"]]
    assert len(masses) == 4 and all(m == pytest.approx(0.95) for m in masses)  # the server puts 95% on the options
    assert report["verdict"] == "ready" and report["recommended"] == "geval"
    geval_check = report["modes"]["geval"]
    assert (
        geval_check["reason"] == "4 of 4 checked questions have at least --min-mass 0.5 on the options G-Eval weights"
    )
    assert geval_check["mass"] == pytest.approx(0.95)
    # above the mass every question has, no question would give a score: G-Eval's rule says so, in its words
    code, out, err = cli(*check, "--check", "--check-items", "1", "--format", "json", "--min-mass", "0.96")
    report = json.loads(out)
    assert code == 1 and report["verdict"] == "not ready", err
    assert report["reason"].startswith("0 of 4 checked questions have at least --min-mass 0.96 on the options G-Eval")
    study = Study.open(db)
    assert study._db.conn.execute("SELECT count(*) FROM raters WHERE kind = 'llm'").fetchone()[0] == 0  # nothing stored
    study.close()


def test_the_mode_flag_lists_the_registered_modes(capsys, geval):
    from tui_rater.cli import main

    with pytest.raises(SystemExit) as done:
        main(["judge", "--help"])
    assert done.value.code == 0
    assert "{text,constrained,distribution,implicit,geval}" in "".join(capsys.readouterr().out.split())


def test_an_unknown_mode_is_one_sentence(tmp_path):
    from tui_rater.domain.errors import UserError
    from tui_rater.domain.modes import mode_of

    with pytest.raises(UserError, match="--mode must be one of text, constrained, distribution, implicit, not 'x'"):
        mode_of("x")

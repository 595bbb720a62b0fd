"""Degenerate studies through the real CLI (a hostile user's pass): every rating the same, so that nothing varies.
Each figure the report gives must be a number or say why it has none -- never NaN (which is not JSON at all: a
strict reader such as JavaScript's ``JSON.parse`` refuses the whole file) and never "nan" in a sentence."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from tests.support import PANEL_TASK, run_cli_process

TASK = PANEL_TASK
LIKERT = 'scale = { kind = "likert", low = 1, high = 5 }'
PEOPLE, JUDGES = ("h1", "h2", "h3"), ("j-a", "j-b")


def _no_constants(name: str) -> float:
    raise ValueError(f"{name} is not JSON")


@pytest.fixture
def flat_study(tmp_path: Path, cli) -> tuple[Path, Path]:
    """20 items in 2 systems; 3 people and 2 judges rate every item 3 on a 1-5 scale (no spread anywhere)."""
    task, items, ratings, db = tmp_path / "t.toml", tmp_path / "items.csv", tmp_path / "r.csv", tmp_path / "s.db"
    task.write_text(TASK)
    items.write_text("id,system,text\n" + "".join(f"x{i},{'a' if i % 2 else 'b'},Text {i}\n" for i in range(20)))
    rows = [f"x{i},{r},quality,{'human' if r in PEOPLE else 'llm'},3\n" for i in range(20) for r in PEOPLE + JUDGES]
    ratings.write_text("item,rater,attribute,kind,value\n" + "".join(rows))
    assert cli("import", items, "--task", "panel", "--task-file", task, "--db", db)[0] == 0
    assert cli("import-ratings", ratings, "--task-file", task, "--db", db)[0] == 0
    return db, task


def test_flat_study_report_is_strict_json_without_nan(flat_study, cli, tmp_path: Path) -> None:
    db, task = flat_study
    out = tmp_path / "r.json"
    code, _, err = cli("report", "--db", db, "--task-file", task, "--format", "json", "--out", out)
    assert code == 0, err
    assert "RuntimeWarning" not in err
    records = json.loads(out.read_text(), parse_constant=_no_constants)["tasks"]["panel"]
    for record in records:
        assert "nan" not in record["note"].split(), record
    # stratified PPI++ by system: the people agree on 3 in both strata, so its interval is the point 3 (as the
    # classical and PPI++ intervals beside it are), not NaN with "nan degrees of freedom"
    stratified = [r for r in records if r["statistic"] == "stratified_system"]
    assert stratified
    for record in stratified:
        assert record["value"] == 3.0
        assert math.isclose(record["ci_low"], 3.0) and math.isclose(record["ci_high"], 3.0), record


def _people_alike(tmp_path: Path, cli) -> tuple[Path, Path]:
    """30 items; the people rate every item 3, each of two judges gives three varying samples."""
    task, items, ratings, db = tmp_path / "t.toml", tmp_path / "items.csv", tmp_path / "r.csv", tmp_path / "s.db"
    task.write_text(TASK)
    items.write_text("id,system,text\n" + "".join(f"x{i},{'a' if i % 2 else 'b'},Text {i}\n" for i in range(30)))
    rows = [f"x{i},{p},quality,human,0,3\n" for i in range(30) for p in PEOPLE]
    rows += [f"x{i},{j},quality,llm,{s},{1 + (i * 7 + s * 3 + k) % 5}\n" for i in range(30) for k, j in
             enumerate(JUDGES) for s in range(3)]  # fmt: skip
    ratings.write_text("item,rater,attribute,kind,sample,value\n" + "".join(rows))
    assert cli("import", items, "--task", "panel", "--task-file", task, "--db", db)[0] == 0
    assert cli("import-ratings", ratings, "--task-file", task, "--db", db)[0] == 0
    return db, task


def test_people_all_alike_and_a_varying_judge_claim_no_ratings_saved(tmp_path: Path, cli) -> None:
    """The people rate every item 3, each judge's three samples vary: the people's interval is the point 3, so no
    estimate can save (or cost) human ratings -- the stratified estimate said "-30 ratings saved" from round-off."""
    db, task = _people_alike(tmp_path, cli)
    out = tmp_path / "r.json"
    code, _, err = cli("report", "--db", db, "--task-file", task, "--format", "json", "--out", out)
    assert code == 0, err
    records = json.loads(out.read_text(), parse_constant=_no_constants)["tasks"]["panel"]
    distribution = [r for r in records if r["table"] == "ppi_distribution"]
    assert {r["statistic"] for r in distribution} >= {"stratified_system_saved", "stratified_system_width"}
    for record in distribution:
        if record["statistic"].endswith("_saved"):
            assert record["value"] in (None, 0.0), record
        if record["statistic"].endswith("_width"):
            assert record["value"] in (None, 0.0), record


def test_people_all_alike_report_prints_no_python_warning(tmp_path: Path) -> None:
    """A user's terminal shows sentences, not numpy's RuntimeWarning lines (the reliability model's ELBO took
    0 x log 0 on answers no one gave): the people all choose the same topic, the judges' samples vary."""
    task, items, ratings, db = tmp_path / "t.toml", tmp_path / "items.csv", tmp_path / "r.csv", tmp_path / "s.db"
    choice = 'scale = { kind = "choice", choices = ["news", "sport", "other"] }'
    task.write_text(TASK.replace('name = "quality"', 'name = "topic"').replace(LIKERT, choice))
    items.write_text("id,system,text\n" + "".join(f"x{i},{'a' if i % 2 else 'b'},Text {i}\n" for i in range(30)))
    rows = [f"x{i},{p},topic,human,0,1\n" for i in range(30) for p in PEOPLE]
    rows += [f"x{i},{j},topic,llm,{s},{(i * 7 + s * 3 + k) % 3}\n" for i in range(30) for k, j in enumerate(JUDGES)
             for s in range(3)]  # fmt: skip
    ratings.write_text("item,rater,attribute,kind,sample,value\n" + "".join(rows))
    for args in (("import", items, "--task", "panel"), ("import-ratings", ratings)):
        done = run_cli_process(*args, "--task-file", task, "--db", db)
        assert done.returncode == 0, done.stderr
    done = run_cli_process("report", "--db", db, "--task-file", task, "--format", "json", "--out", tmp_path / "r.json")
    assert done.returncode == 0, done.stderr
    assert "Warning" not in done.stderr, done.stderr

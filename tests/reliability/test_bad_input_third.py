"""Issue 24 (trust, third pass): inputs that were accepted, or changed the study without a word, through the
real CLI. Each is now one sentence on stderr, exit status 2, and the study file byte for byte as it was."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.reliability.test_files import one_sentence
from tests.support import SAMPLE, copy_demo, digest, run_cli_process


@pytest.fixture
def study(demo_original, tmp_path) -> Path:
    return copy_demo(demo_original, tmp_path)


# (the command's words after the study, what the sentence names)
BAD_FLAGS = {
    "judge --limit -1": (["judge", "--model", "m.gguf", "--limit", "-1"], "--limit: -1 is out of range"),
    "judge --limit 0": (["judge", "--model", "m.gguf", "--limit", "0"], "--limit: 0 is out of range"),
    "judge --workers 0": (["judge", "--model", "m.gguf", "--workers", "0"], "--workers: 0 is out of range"),
    "judge --timeout nan": (["judge", "--model", "m.gguf", "--timeout", "nan"], "--timeout: nan is not a finite"),
    "judge --timeout -1": (["judge", "--model", "m.gguf", "--timeout", "-1"], "--timeout: -1 is out of range"),
    "judge --timeout inf": (["judge", "--model", "m.gguf", "--timeout", "inf"], "--timeout: inf is not a finite"),
    "judge --seed of 23 digits": (["judge", "--model", "m.gguf", "--seed", "1" * 23], "--seed: 1111"),
    "judge --seed -1": (["judge", "--model", "m.gguf", "--seed", "-1"], "--seed: -1 is out of range"),
    "judge --max-retries 100000": (["judge", "--model", "m.gguf", "--max-retries", "100000"], "--max-retries"),
    "judge --top-p 0": (["judge", "--model", "m.gguf", "--top-p", "0"], "--top-p: 0 is out of range"),
    "judge --temperature nan": (["judge", "--model", "m.gguf", "--temperature", "nan"], "--temperature"),
    "judge --samples 0": (["judge", "--model", "m.gguf", "--samples", "0"], "--samples: 0 is out of range"),
    "report --spa-tau nan": (["report", "--spa-tau", "nan"], "--spa-tau: nan is not a finite"),
    "spa setup --packets 1000000": (["spa", "setup", "--systems", "a,b", "--packets", "1000000"], "10,000"),
    "annotate --seed x": (["annotate", "--annotator", "a", "--seed", "x"], "--seed: 'x' is not a whole number"),
    # an abbreviation is not taken for the flag it starts (import-ratings --task X became --task-file X)
    "import-ratings --task": (["import-ratings", str(SAMPLE / "hanna_human_ratings.csv"), "--task", "x"], "--task"),
}


@pytest.mark.parametrize("case", list(BAD_FLAGS))
def test_bad_flags_are_one_sentence_and_change_nothing(study, case):
    words, named = BAD_FLAGS[case]
    before = digest(study)
    error = one_sentence(run_cli_process(*words, "--db", study))
    assert named in error, error
    assert digest(study) == before


@pytest.mark.parametrize("value", ["3.5", "2.0001", "4.99", "0", "6"])
def test_a_persons_likert_rating_between_points_is_refused(study, tmp_path, value):
    ratings = tmp_path / "r.csv"
    ratings.write_text(f"item,attribute,rater,value\nh95,relevance,zed,{value}\n")
    before = digest(study)
    error = one_sentence(run_cli_process("import-ratings", ratings, "--db", study))
    assert "row 1" in error and "column 'value'" in error, error
    assert digest(study) == before


def test_a_judges_half_point_is_still_imported(study, tmp_path):
    # Chiang & Lee keep a judge's x.5 (App. D.2.1): only a person's rating must be on the points
    ratings = tmp_path / "r.csv"
    ratings.write_text("item,attribute,rater,value,kind\nh95,relevance,zed-llm,3.5,llm\n")
    assert run_cli_process("import-ratings", ratings, "--db", study).returncode == 0
    with sqlite3.connect(study) as conn:
        values = conn.execute(
            "SELECT value FROM ratings JOIN raters ON raters.id = rater_id WHERE name = 'zed-llm'"
        ).fetchall()
    assert values == [(3.5,)]


def _run_bytes(*args: bytes | str, cwd: Path) -> subprocess.CompletedProcess:
    """The CLI with arguments given as bytes (a name that is not UTF-8 cannot be a str argument)."""
    argv = [os.fsencode(sys.executable), b"-m", b"tui_rater.cli", *(os.fsencode(a) for a in args)]
    return subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize(
    "words",
    [
        ["annotate", "--annotator", b"bad\xffname", "--task", "hanna"],
        ["import", b"stories\xfe.csv", "--task", "story"],
        ["judge", "--model", b"model\xff.gguf", "--task", "hanna"],
    ],
    ids=["annotator", "file name", "model path"],
)
def test_arguments_that_are_not_utf8_are_one_sentence(study, words):
    before = digest(study)
    result = _run_bytes(*words, "--db", str(study), cwd=study.parent)
    error = one_sentence(result)
    assert "not valid UTF-8" in error
    assert digest(study) == before


def test_an_annotator_name_with_an_escape_is_refused_like_a_judge_name(study):
    before = digest(study)
    error = one_sentence(run_cli_process("annotate", "--annotator", "eve\x1b[2J", "--task", "hanna", "--db", study))
    assert "--annotator must be one line of text" in error
    assert digest(study) == before
    error = one_sentence(run_cli_process("annotate", "--annotator", "x" * 81, "--task", "hanna", "--db", study))
    assert "give at most 80" in error


def test_annotate_with_a_missing_judge_adds_no_rater(study):
    before = digest(study)
    error = one_sentence(
        run_cli_process("annotate", "--annotator", "newcomer", "--task", "hanna", "--judge", "nope.gguf", "--db", study)
    )
    assert "nope.gguf" in error
    assert digest(study) == before  # the annotator's rater row used to be written before the judge was checked


TASK = """
[[task]]
name = "essay"
fields = ["essay"]
[[task.attributes]]
name = "{name}"
question = "How good is it?"
scale = {{ kind = "likert", low = 1, high = {high} }}
"""


def _task_file(tmp_path: Path, name: str = "quality", high: int = 5) -> Path:
    path = tmp_path / f"essay-{name}-{high}.toml"
    path.write_text(TASK.format(name=name, high=high))
    return path


@pytest.mark.parametrize(
    ("name", "high", "difference"),
    [
        ("quality", 3, "question 'quality': scale was"),
        ("goodness", 5, "question 'quality' is missing from the new one"),
    ],
    ids=["scale narrowed", "question renamed"],
)
def test_a_changed_task_definition_is_refused_once_rated(tmp_path, name, high, difference):
    db = tmp_path / "study.db"
    items = tmp_path / "essays.csv"
    items.write_text("id,essay\ne1,One essay.\ne2,Another essay.\n")
    first = _task_file(tmp_path)
    assert run_cli_process("import", items, "--task", "essay", "--task-file", first, "--db", db).returncode == 0
    ratings = tmp_path / "r.csv"
    ratings.write_text("item,attribute,rater,value\ne1,quality,ann,5\n")
    assert run_cli_process("import-ratings", ratings, "--task-file", first, "--db", db).returncode == 0
    before = digest(db)
    changed = _task_file(tmp_path, name, high)
    error = one_sentence(run_cli_process("import", items, "--task", "essay", "--task-file", changed, "--db", db))
    assert "1 rating(s) under another definition" in error and difference in error, error
    assert digest(db) == before
    # the same definition again adds nothing and is no error
    assert run_cli_process("import", items, "--task", "essay", "--task-file", first, "--db", db).returncode == 0


def test_an_unrated_task_may_still_be_redefined(tmp_path):
    db = tmp_path / "study.db"
    items = tmp_path / "essays.csv"
    items.write_text("id,essay\ne1,One essay.\n")
    assert (
        run_cli_process("import", items, "--task", "essay", "--task-file", _task_file(tmp_path), "--db", db).returncode
        == 0
    )
    changed = _task_file(tmp_path, "quality", 7)
    assert run_cli_process("import", items, "--task", "essay", "--task-file", changed, "--db", db).returncode == 0
    with sqlite3.connect(db) as conn:
        (definition,) = conn.execute("SELECT definition FROM tasks WHERE name = 'essay'").fetchone()
    assert json.loads(definition)["attributes"][0]["scale"]["high"] == 7


def test_two_spa_setups_at_once_one_wins_and_the_other_is_refused(tmp_path):
    db = tmp_path / "study.db"
    assert run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db).returncode == 0
    with sqlite3.connect(db) as conn:
        systems = [s for (s,) in conn.execute("SELECT DISTINCT system FROM items ORDER BY system LIMIT 2")]
    common = [sys.executable, "-m", "tui_rater.cli", "spa", "setup", "--db", str(db), "--m", "2"]
    runs = [
        subprocess.Popen(
            [*common, "--systems", ",".join(systems), "--packets", str(packets)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for packets in (3, 5)
    ]
    results = [(run.wait(timeout=120), *run.communicate()) for run in runs]
    codes = sorted(code for code, _, _ in results)
    assert codes == [0, 2], results
    winner = next(i for i, (code, _, _) in enumerate(results) if code == 0)
    with sqlite3.connect(db) as conn:
        packets = conn.execute("SELECT count(*) FROM items WHERE task = 'spa'").fetchone()[0]
    assert packets == (3, 5)[winner]
    loser = results[1 - winner]
    assert "already has" in loser[2] and "0 packets" not in loser[1]


def test_a_study_with_a_second_name_is_refused(study, tmp_path):
    # SQLite keeps a -wal per name: two annotators on s.db and hard.db each saved into their own WAL
    # and one's 15 ratings (and rater row) were gone after both quit with exit 0
    hard = tmp_path / "hard.db"
    os.link(study, hard)
    before = digest(study)
    for name in (study, hard):
        for words in (["info"], ["annotate", "--annotator", "amy", "--task", "hanna"], ["report", "--task", "hanna"]):
            error = one_sentence(run_cli_process(*words, "--db", name))
            assert "has 2 names (hard links)" in error, error
    assert digest(study) == before
    hard.unlink()
    link = tmp_path / "soft.db"
    link.symlink_to(study)  # one real name: SQLite resolves the link, so this is the same study
    assert run_cli_process("info", "--db", link).returncode == 0


def test_a_foreign_sqlite_file_holding_only_a_view_is_not_taken_for_a_study(tmp_path):
    foreign = tmp_path / "views.db"
    with sqlite3.connect(foreign) as conn:
        conn.execute("CREATE VIEW answer AS SELECT 42 AS value")
    conn.close()
    before = digest(foreign)
    error = one_sentence(run_cli_process("info", "--db", foreign))
    assert "not a tui-rater database" in error and "1 other schema object" in error, error
    assert digest(foreign) == before

"""The CLI: one clear sentence and exit 2 for bad input, the study file untouched."""

from __future__ import annotations

import json
import re
import subprocess
import sys

import pytest

from tests.support import ROOT, SAMPLE, digest, run_cli_process
from tui_rater.store.study import Study

GOOD_ITEMS = "id,system,prompt,story\na,human,P,A story.\nb,gpt2,P,Another story.\n"

BAD_ITEM_FILES = {
    "missing column": ("x.csv", b"id,prompt\na,P\n", "missing column 'story'"),
    "unknown column": ("x.csv", b"id,prompt,story,colour\na,P,S,red\n", "unknown column 'colour'"),
    "empty file": ("x.csv", b"", "is empty"),
    "header only": ("x.csv", b"id,prompt,story\n", "no rows"),
    "bad utf-8": ("x.csv", b"id,prompt,story\na,P,caf\xe9\n", "not valid UTF-8"),
    "duplicate ids": ("x.csv", b"id,prompt,story\na,P,S\na,P,T\n", "duplicate id 'a'"),
    "empty value": ("x.csv", b"id,prompt,story\na,P,\n", "row 1, column 'story'"),
    "ragged row": ("x.csv", b"id,prompt,story\na,P,S,extra,more\n", "x.csv"),
    "wrong type": ("x.jsonl", b'{"id": "a", "prompt": "P", "story": 42.5}\n', "expected text"),
    "bad json": ("x.jsonl", b'{"id": "a", "prompt": "P", "story": "S"}\n{"id": \n', "line 2: not valid JSON"),
    "bad parquet": ("x.parquet", b"PAR1 this is not parquet", "cannot read it as Parquet"),
    "unknown extension": ("x.xlsx", b"whatever", "unknown file type"),
    "giant field": ("x.csv", b"id,prompt,story\na,P," + b"w" * 100_001 + b"\n", "more than the limit"),
    "id clash": ("x.csv", b"id,system,prompt,story\na,human,P,Different text.\n", "already in the study"),
}


@pytest.fixture
def study_file(tmp_path, cli):
    items = tmp_path / "items.csv"
    items.write_text(GOOD_ITEMS)
    db = tmp_path / "study.db"
    code, _out, err = cli("import", items, "--task", "story", "--db", db)
    assert code == 0, err
    return db


@pytest.mark.parametrize("case", sorted(BAD_ITEM_FILES))
def test_bad_item_files(case, tmp_path, cli, study_file):
    name, content, message = BAD_ITEM_FILES[case]
    bad = tmp_path / name
    bad.write_bytes(content)
    before = digest(study_file)
    code, _out, err = cli("import", bad, "--task", "story", "--db", study_file)
    assert code == 2
    assert message in err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert digest(study_file) == before


def test_bad_file_does_not_create_a_study(tmp_path, cli):
    bad = tmp_path / "x.csv"
    bad.write_bytes(b"id,prompt\na,P\n")
    code, _, _err = cli("import", bad, "--task", "story", "--db", tmp_path / "new.db")
    assert code == 2 and not (tmp_path / "new.db").exists()


BAD_RATING_FILES = {
    "off the scale": ("item,rater,attribute,value\na,t1,likability,6\n", "off the scale"),
    "not a number": ("item,rater,attribute,value\na,t1,likability,great\n", "is not a number"),
    "unknown item": ("item,rater,attribute,value\nzzz,t1,likability,3\n", "no item 'zzz'"),
    "unknown attribute": ("item,rater,attribute,value\na,t1,humour,3\n", "no attribute 'humour'"),
    "missing column": ("item,rater,value\na,t1,3\n", "missing column 'attribute'"),
    "bad kind": ("item,rater,attribute,value,kind\na,t1,likability,3,robot\n", "neither 'human' nor 'llm'"),
    "duplicate": ("item,rater,attribute,value\na,t1,likability,3\na,t1,likability,4\n", "a second rating"),
    "bad sample": ("item,rater,attribute,value,sample\na,t1,likability,3,-1\n", "column 'sample'"),
    # a human's "sample 1" would be a second rating under one name: the reports kept one of the two
    "human sample": (
        "item,rater,attribute,value,sample\na,t1,likability,3,0\na,t1,likability,5,1\n",
        "a human has one",
    ),
    # the first rows are fine: the import is atomic, so none of them may land
    "late error": ("item,rater,attribute,value\na,t1,likability,3\nb,t1,likability,9\n", "row 2"),
}


@pytest.mark.parametrize("case", sorted(BAD_RATING_FILES))
def test_bad_rating_files(case, tmp_path, cli, study_file):
    content, message = BAD_RATING_FILES[case]
    bad = tmp_path / "r.csv"
    bad.write_text(content)
    before = digest(study_file)
    code, out, err = cli("import-ratings", bad, "--db", study_file)
    assert code == 2, out
    assert message in err and "Traceback" not in err
    assert digest(study_file) == before


def test_a_humans_rating_under_another_sample_is_left_out_of_the_report_and_said(tmp_path, cli, study_file):
    """A study written by an earlier import-ratings may hold a person's second rating of an item under sample 1.
    It is never in force: every table uses the sample-0 rating (the reports kept one of the two by row order),
    and the report says how many were left out."""
    import sqlite3

    good = tmp_path / "r.csv"
    good.write_text("item,rater,attribute,value\na,t1,likability,1\nb,t1,likability,3\n")
    assert cli("import-ratings", good, "--db", study_file)[0] == 0
    conn = sqlite3.connect(study_file)
    with conn:  # what the old import wrote: the same row again, under sample 1, with another value
        conn.execute(
            "INSERT INTO ratings (item_key, rater_id, attribute, value, sample, presentation, raw, parse_status, "
            "created_at, retracted, details) SELECT item_key, rater_id, attribute, 5, 1, presentation, raw, "
            "parse_status, created_at, retracted, details FROM ratings WHERE value = 1"
        )
    conn.close()
    code, out, err = cli("report", "--db", study_file, "--task", "story", "--format", "json")
    assert code == 0, err
    assert "note: 1 rating(s) by t1 under a sample other than 0 are left out of every table" in err
    records = json.loads(out)["tasks"]["story"]
    [mean] = [
        r
        for r in records
        if (r["table"], r["statistic"], r["evaluator"], r["attribute"], r["system"])
        == ("table12", "mean", "t1", "likability", "human")
    ]
    assert (mean["value"], mean["n"]) == (1.0, 1), mean  # item a (human): sample 0's 1, not sample 1's 5
    assert cli("export", "--db", study_file, "--what", "ratings", "--out", tmp_path / "r.jsonl")[0] == 0
    exported = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert sorted(r["value"] for r in exported) == [1.0, 3.0]


def test_conflicting_rating_reimport_changes_nothing(tmp_path, cli, study_file):
    good = tmp_path / "r.csv"
    good.write_text("item,rater,attribute,value\na,t1,likability,3\n")
    assert cli("import-ratings", good, "--db", study_file)[0] == 0
    before = digest(study_file)
    good.write_text("item,rater,attribute,value\nb,t1,likability,2\na,t1,likability,4\n")
    code, _, err = cli("import-ratings", good, "--db", study_file)
    assert code == 2 and "already rated" in err
    assert digest(study_file) == before


def test_bad_flags_and_task_files(tmp_path, cli, study_file):
    items = tmp_path / "items.csv"
    items.write_text(GOOD_ITEMS)
    before = digest(study_file)

    def refused(*args, message):
        code, _out, err = cli(*args)
        assert code == 2 and err.count(message) == 1 and err.count("\n") == 1, (args, code, err)

    refused("import", items, "--task", "nonesuch", "--db", study_file, message="unknown task 'nonesuch'")
    refused("import", items, "--task", "story", "--map", "story", "--db", study_file, message="NAME=COLUMN")
    toml = tmp_path / "t.toml"
    toml.write_text("[[task]]\nname = 'x'\nfields = []\n")
    refused("tasks", "--task-file", toml, message="'fields' must be a non-empty list")
    toml.write_text("this is = = not toml")
    refused("tasks", "--task-file", toml, message="not valid TOML")
    refused("info", "--db", tmp_path / "none.db", message="does not exist")
    assert not (tmp_path / "none.db").exists()
    assert digest(study_file) == before


def test_custom_task_travels_with_the_study(tmp_path, cli):
    db = tmp_path / "s.db"
    code, out, err = cli(
        "import", SAMPLE / "dialogue.csv", "--task", "dialogue", "--task-file", SAMPLE / "custom_task.toml", "--db", db
    )
    assert code == 0, err
    ratings = tmp_path / "r.csv"
    ratings.write_text("item,rater,attribute,value\nd1,me,engagingness,80\nd2,me,naturalness,1\n")
    code, out, err = cli("import-ratings", ratings, "--db", db)  # no --task-file needed now
    assert code == 0, err
    assert "2 new ratings" in out


def test_tasks_lists_builtins_and_custom(cli):
    code, out, _ = cli("tasks", "--task-file", SAMPLE / "custom_task.toml")
    assert code == 0
    # the first column of the table, exactly ("story" is also a prefix of other names)
    listed = re.findall(r"^│ (\S+)\s+│", out, flags=re.MULTILINE)
    expected = {"story", "title-fluency", "title-meaning", "hanna", "story-explicit", "story-pairwise", "dialogue"}
    assert expected <= set(listed)
    for attribute in ("grammaticality", "engagingness", "naturalness"):
        assert attribute in out


def test_demo_imports_samples_once(tmp_path):
    first = run_cli_process("demo", "--no-app", cwd=tmp_path)
    assert first.returncode == 0, first.stderr
    assert (tmp_path / "tui-rater.db").exists()  # the documented default file
    info = json.loads(run_cli_process("info", "--json", cwd=tmp_path).stdout)
    second = run_cli_process("demo", "--no-app", cwd=tmp_path)
    assert second.returncode == 0, second.stderr
    assert re.findall(r": (\d+) new", second.stdout) and set(re.findall(r": (\d+) new", second.stdout)) == {"0"}
    assert json.loads(run_cli_process("info", "--json", cwd=tmp_path).stdout) == info  # nothing imported twice
    tasks = {row["task"] for row in info["items"]}
    assert {"story", "title-fluency", "title-meaning", "hanna"} <= tasks
    assert sum(r["n"] for r in info["items"] if r["task"] == "story") >= 48
    assert info["ratings"] == 1728 + sum(1 for _ in open(SAMPLE / "hanna_llm_ratings.csv")) - 1


def test_export_formats(tmp_path, cli, study_file):
    ratings = tmp_path / "r.csv"
    ratings.write_text("item,rater,attribute,value\na,t1,likability,3\nb,t1,relevance,5\n")
    assert cli("import-ratings", ratings, "--db", study_file)[0] == 0
    exported = {}
    for what in ("items", "ratings", "wide"):
        out = tmp_path / f"{what}.jsonl"
        code, _, err = cli("export", "--what", what, "--out", out, "--db", study_file)
        assert code == 0, err
        exported[what] = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["story"]) for r in exported["items"]] == [("a", "A story."), ("b", "Another story.")]
    assert sorted((r["item"], r["rater"], r["attribute"], r["value"]) for r in exported["ratings"]) == [
        ("a", "t1", "likability", 3.0),
        ("b", "t1", "relevance", 5.0),
    ]
    wide = {r["id"]: r for r in exported["wide"]}
    assert (wide["a"]["t1:likability"], wide["a"]["t1:relevance"]) == (3.0, None)
    assert (wide["b"]["t1:likability"], wide["b"]["t1:relevance"]) == (None, 5.0)
    code, _, err = cli("export", "--out", tmp_path / "x.xls", "--db", study_file)
    assert code == 2 and "unknown file type" in err and not (tmp_path / "x.xls").exists()


def test_env_and_config_file_defaults(tmp_path):
    import os

    config = tmp_path / "config.toml"
    config.write_text(f'db = "{tmp_path / "from-config.db"}"\n')
    env = {**os.environ, "TUI_RATER_CONFIG": str(config)}
    items = tmp_path / "items.csv"
    items.write_text(GOOD_ITEMS)
    assert run_cli_process("import", items, "--task", "story", env=env).returncode == 0
    assert (tmp_path / "from-config.db").exists()
    env["TUI_RATER_DB"] = str(tmp_path / "from-env.db")
    assert run_cli_process("import", items, "--task", "story", env=env).returncode == 0
    assert (tmp_path / "from-env.db").exists()
    config.write_text("unknown_setting = 1\n")
    result = run_cli_process("info", env=env)
    assert result.returncode == 2 and "unknown setting 'unknown_setting'" in result.stderr


def test_headless_commands_do_not_import_textual():
    code = (
        "import sys; from tui_rater.cli import main; import tui_rater.store.io, tui_rater.store.study, "
        "tui_rater.domain.prompts, tui_rater.domain.parsing, tui_rater.domain.diff, tui_rater.judge.queue, "
        "tui_rater.judge.worker, tui_rater.judge.spec, tui_rater.service.judging, tui_rater.service.reparse, "
        "tui_rater.store.session, tui_rater.domain.display; "
        "bad = [m for m in sys.modules if m.split('.')[0] in ('textual', 'llama_cpp', 'openai')]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout + result.stderr


def test_spa_db_before_the_subcommand_is_used(tmp_path):
    """`tui-rater spa --db X setup` writes to X, not to ./tui-rater.db."""
    db = tmp_path / "spa.db"
    assert run_cli_process("demo", "--no-app", "--db", db, cwd=tmp_path).returncode == 0
    result = run_cli_process("spa", "--db", db, "setup", "--systems", "human,Platypus2-70b", "--m", "4", cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "tui-rater.db").exists()
    assert "spa" in Study.open(db).item_task_names()


def _parsers(parser, words=()):
    """Every parser of the CLI, with the command words that reach it (subcommands of subcommands too)."""
    import argparse

    yield " ".join(words) or "tui-rater", parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*words, name))


def test_no_command_takes_an_abbreviated_flag():
    # `import-ratings --task X` silently became `--task-file X`: every parser, present and future, refuses them
    from tui_rater.cli import _parser

    found = dict(_parsers(_parser()))
    assert {"import-ratings", "judge", "report", "spa setup"} <= set(found)
    assert [words for words, parser in found.items() if parser.allow_abbrev] == []

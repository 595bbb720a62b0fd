"""Names, ids, replies and error bodies from data never reach the terminal as escapes or markup.

Every command runs as a real process on a study built by ``hostile.py``; its stdout and stderr must
hold no ESC, BEL or C1 byte, no traceback, and show the data literally (``⟨ESC⟩``, ``mallory [/]``).
"""

from __future__ import annotations

import csv
import json
import os
import shutil

import pytest

from tests.reliability import hostile
from tests.support import run_cli_process
from tests.ui.tmux import TmuxApp, annotate_command, needs_tmux, ratings_in_force, wait_for

COMMANDS = [
    ("info",),
    ("info", "--json"),
    ("report",),
    ("report", "--format", "markdown"),
    ("report", "--format", "csv"),
    ("report", "--format", "json"),
    ("queue",),
    ("tasks",),
    ("tasks", "--verbose"),
    ("reparse",),
]


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """Built once (imports and two judge runs), then read by every test of this module."""
    with hostile.loopback_servers() as start:
        return hostile.build(tmp_path_factory.mktemp("hostile"), start)


def assert_literal(out: str, err: str, command: str) -> None:
    for char in hostile.RAW:
        assert char not in out, f"{command}: {char!r} reached stdout"
        assert char not in err, f"{command}: {char!r} reached stderr"
    assert "Traceback" not in err and "MarkupError" not in err, f"{command}: {err}"


def test_building_the_study_printed_nothing_raw(study):
    codes = {command: code for command, code, _out, _err in study.outputs}
    for command, _code, out, err in study.outputs:
        assert_literal(out, err, command)
    # the first judge rated everything; the second's every request was refused (400): exit 1, no traceback
    assert [code for _command, code, _out, _err in study.outputs] == [0, 0, 0, 1], codes
    imported = study.outputs[0][2]
    assert "items⟨ESC⟩]0;pwned-title⟨BEL⟩.csv: 3 new items for task rate⟨ESC⟩]52;c;" in imported


WIDE = {**os.environ, "COLUMNS": "1000"}  # Rich tables on one line each: the checks read whole cells


@pytest.mark.parametrize("args", COMMANDS, ids=" ".join)
def test_every_command_shows_data_literally(study, args):
    result = run_cli_process(*args, "--db", study.db, env=WIDE)
    assert result.returncode == 0, result.stderr
    assert_literal(result.stdout, result.stderr, " ".join(args))
    if args in (("info",), ("report",), ("report", "--format", "markdown")):
        assert "⟨ESC⟩]52;c;" in result.stdout  # the names are shown, as placeholders, not dropped
    if args[0] == "info" or args == ("report",):
        assert hostile.RATER in result.stdout  # `mallory [/]` as written, not a markup error
    if args == ("queue",):
        assert "refused ⟨ESC⟩]52;c;" in result.stdout  # the server's error body, literally
        assert "[/][bold red]red" in result.stdout


def test_json_keeps_the_data_and_escapes_the_bytes(study):
    result = run_cli_process("info", "--json", "--db", study.db)
    info = json.loads(result.stdout)
    assert hostile.SYSTEM in {row["system"] for row in info["items"]}  # exact data after JSON decoding
    assert hostile.RATER in {row["name"] for row in info["raters"]}


def test_exports_and_report_files_keep_the_data_exactly(study, tmp_path):
    out = tmp_path / "ratings.csv"
    result = run_cli_process("export", "--db", study.db, "--out", out)
    assert result.returncode == 0
    assert_literal(result.stdout, result.stderr, "export")
    with open(out, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    assert {hostile.RATER, hostile.RATER_2} <= {row["rater"] for row in rows}
    assert any(row["raw"] == "Rating: 4. " + hostile.EVIL for row in rows)  # a file is data: unchanged
    report = tmp_path / "report.md"
    result = run_cli_process("report", "--db", study.db, "--format", "markdown", "--out", report)
    assert result.returncode == 0 and hostile.EVIL in report.read_text(encoding="utf-8")


def test_error_messages_quote_data_literally(study, tmp_path):
    """A UserError quoting a file's column, a task name, a rater: printed through the one sanitiser."""
    bad = tmp_path / f"bad{hostile.TITLE}.csv"
    bad.write_text(f"id,text,{hostile.EVIL}\nx,y,z\n", encoding="utf-8")
    cases = [
        ("import", bad, "--task", hostile.TASK_NAME, "--task-file", study.task_file),
        ("import", bad, "--task", "nope" + hostile.EVIL),
        ("queue", "--rater", hostile.EVIL),
        ("export", "--out", tmp_path / f"x{hostile.EVIL}.csv", "--task", "nope" + hostile.EVIL),
    ]
    for args in cases:
        result = run_cli_process(*args, "--db", study.db)
        assert result.returncode == 2, result.stderr
        assert_literal(result.stdout, result.stderr, str(args[0]))
        assert result.stderr.startswith("tui-rater: error: ") and result.stderr.count("\n") == 1, result.stderr
        assert "⟨ESC⟩" in result.stderr or "\\x1b" in result.stderr  # a placeholder, or a repr's escape


# --- the app, in a real terminal --------------------------------------------------------------------

CLIPBOARD_ON = "set -g set-clipboard on"  # tmux keeps what OSC 52 writes as a paste buffer


def _terminal_state(app: TmuxApp) -> tuple[str, str]:
    """(the pane's title, tmux's paste buffers): what OSC 0/2 and OSC 52 would have changed."""
    return app._tmux("display", "-p", "-t", "app", "#{pane_title}").strip(), app._tmux("list-buffers")


@needs_tmux
def test_the_control_a_raw_printf_does_change_title_and_clipboard(tmp_path):
    """Without this, an unchanged title would prove nothing: tmux does obey these escapes."""
    command = ["sh", "-c", 'printf "%s\\n" "$1"; sleep 5', "sh", hostile.EVIL]
    app = TmuxApp(command, tmp_path, conf=CLIPBOARD_ON)
    try:
        assert wait_for(lambda: "pwned-title" in _terminal_state(app)[0], 10)
        assert hostile.CLIPBOARD in app._tmux("show-buffer")
    finally:
        app.close()


@needs_tmux
def test_the_app_shows_every_name_and_reply_literally(study, tmp_path):
    db = tmp_path / "copy.db"
    shutil.copy(study.db, db)  # the other tests read the original
    # the annotator's own name is plain: `--annotator` refuses control characters (as --judge-name does);
    # every other name on screen came from files and servers and carries the escapes
    command = annotate_command(db, "ann", hostile.TASK_NAME, "--reveal", "--no-blind")
    app = TmuxApp(command, tmp_path, size=(120, 45), conf=CLIPBOARD_ON)
    try:
        title_before = _terminal_state(app)[0]
        app.wait_text(
            "rate⟨ESC⟩]52;c;", "written by: sys⟨ESC⟩]52;c;", "▶ [·] q⟨ESC⟩]52;c;", "How good? ⟨ESC⟩]52;c;", "keys 1-5"
        )  # the status line (task name), the item, its system, the attribute and its question
        # (keys that toggle: an Escape followed at once by a letter would reach the app as Alt+letter)
        app.keys("?")
        app.wait_text("Keys", "esc close")
        app.keys("?")
        app.wait_screen(lambda screen: "esc close" not in screen)
        app.keys("a")  # the agreement pane: judge names, failures (attribute names), gaps (item ids)
        app.wait_text("judge queue:", "J1 judge⟨ESC⟩]52;c;", "bad_request", "gap")  # its label
        app.keys("a")
        app.wait_text("keys 1-5")
        app.keys("g")  # a notification quoting typed markup
        app.wait_text("Go to item")
        app.keys("[/]x")
        app.key("Enter")
        app.wait_text("No item '[/]x'")
        app.keys("44")  # both questions: the reveal screen, with the raters' names and the judge's raw reply
        app.wait_text("Other raters' ratings", "mallory [/]: 4", "eve⟨ESC⟩]52;c;", "Rating: 4.", "(sample 0): 4")
        app.key("Enter")
        app.wait_text("written by: plain", "A plain text.")  # the next item (the status line is too narrow)
        app.keys("q")
        assert app.wait_status() == 0
        title, buffers = _terminal_state(app)
        assert "pwned" not in title and title == title_before
        assert buffers == ""  # OSC 52 never reached the terminal: no clipboard write
        assert "Traceback" not in app.printed()
    finally:
        app.close()
    saved = ratings_in_force(db, "ann")
    assert saved == {(hostile.ITEM_ID, hostile.ATTRIBUTE): 4.0, (hostile.ITEM_ID, "plain"): 4.0}

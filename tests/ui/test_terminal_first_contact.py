"""A newcomer's first contact, in a real terminal at 80x24: the README's first command on a fresh study, the
reveal's keys, and the words the screen uses (issue 22, items 1-3)."""

from __future__ import annotations

import json
import re
import shlex
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from tests.ui.tmux import ROOT, TmuxApp, annotate_command, flat, needs_tmux, ratings_in_force, wait_for
from tui_rater.judge.hub import FIRST_JUDGE

pytestmark = [pytest.mark.terminal, needs_tmux]

CLI = [sys.executable, "-m", "tui_rater.cli"]
# a judge row with numbers: its label, then α and τ as numbers (not n/a)
LIVE_ROW = re.compile(r"hanna-mistral-7b-p1\s+-?\d\.\d\d\s+-?\d\.\d\d\s+\d+%")


def footer(screen: str) -> str:
    return [line for line in screen.splitlines() if line.strip()][-1]


def pasted_commands(printed: str) -> list[str]:
    """The commands in the next-steps lines, as a shell reads them: backslash continuations joined (a line the
    terminal had wrapped would cut its command short here)."""
    text = printed.split("Next steps (copy and paste):", 1)[1].replace("\\\n", " ")
    return [" ".join(line.split()) for line in text.splitlines() if line.strip().startswith("tui-rater ")]


def test_the_readme_first_command_opens_a_live_comparison_and_quitting_says_what_next(tmp_path):
    """`tui-rater demo` in a fresh folder: the first screen is task hanna, whose agreement pane has numbers (humans
    and an LLM rated the same stories), not "No human and LLM ratings"; the footer names the scale's keys and keeps
    `q quit` at 80 columns; quitting prints the report / judge / annotate commands for this file and task, and the
    printed report command runs as pasted."""
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    command = [*CLI, "demo", "--annotator", "newcomer"]
    app = TmuxApp(command, tmp_path, env=f"cd {shlex.quote(str(fresh))} && env PYTHONPATH={shlex.quote(str(ROOT))}")
    try:
        screen = app.wait_text("hanna · newcomer · item 1/96", "q quit", timeout=60)
        line = footer(screen)
        assert "1-5 rate" in line and "c comment" in line and "0-9" not in line and "note" not in line, line
        app.keys("a")
        pane = app.wait_screen(lambda s: LIVE_ROW.search(s) is not None)
        assert "No human and LLM ratings" not in flat(pane)
        assert "may the judge replace the humans?" in flat(pane)
        assert footer(pane).rstrip().endswith("q quit"), footer(pane)  # the whole footer, at 80 columns
        app.key("Escape")
        app.wait_text("item 1/96", "1-5 rate")
        app.keys("q")
        assert app.wait_status() == 0
        printed = app.transcript()
    finally:
        app.close()
    assert "Next steps (copy and paste):" in printed
    commands = pasted_commands(printed)
    assert commands == [
        "tui-rater report --db tui-rater.db --task hanna",
        "tui-rater judge --db tui-rater.db --task hanna --model " + FIRST_JUDGE + " --mode constrained --limit 20",
        "tui-rater annotate --db tui-rater.db --task hanna --annotator newcomer",
    ]
    report = subprocess.run(
        [*CLI, *shlex.split(commands[0])[1:]], cwd=fresh, capture_output=True, text=True, timeout=300
    )
    assert report.returncode == 0, report.stderr
    assert "hanna-mistral-7b-p1" in report.stdout


def test_off_scale_digits_say_so_and_ctrl_c_names_the_quit_key(tmp_path, demo):
    """A digit off a 1-5 scale was ignored silently; now a line says it is not on the scale, and nothing is saved.
    Ctrl-C showed Textual's hint with literal markup (`Press [b]ctrl+q[/b]`); it names `q`."""
    db = demo
    app = TmuxApp(annotate_command(db, "typo", "hanna"), tmp_path, env="env TERM=xterm")
    try:
        app.wait_text("item 1/96", "q quit")
        app.keys("7")
        app.wait_text("7 is not on this scale (1–5)")
        app.key("C-c")
        screen = app.wait_text("Press q to quit (not Ctrl-C).")
        assert "[b]" not in screen and "ctrl+q" not in screen
        assert app.running()
        app.keys("4")  # the digit on the scale still rates
        assert wait_for(lambda: ratings_in_force(db, "typo") == {("h00", "relevance"): 4.0})
        app.keys("q")
        assert app.wait_status() == 0
    finally:
        app.close()


def reviews(db: Path, annotator: str) -> list[tuple[str, str]]:
    conn = sqlite3.connect(db, timeout=30)
    try:
        rows = conn.execute(
            "SELECT n.attribute, n.text FROM notes n JOIN raters r ON r.id = n.rater_id "
            "WHERE r.name = ? AND n.kind = 'review' ORDER BY n.id",
            [annotator],
        ).fetchall()
    finally:
        conn.close()
    return [(attribute, json.loads(text)["verdict"]) for attribute, text in rows]


def revisions(db: Path, annotator: str) -> list[tuple[str, float]]:
    conn = sqlite3.connect(db, timeout=30)
    try:
        return conn.execute(
            "SELECT r.attribute, r.value FROM ratings r JOIN raters ra ON ra.id = r.rater_id "
            "WHERE ra.name = ? AND r.revises IS NOT NULL ORDER BY r.id",
            [annotator],
        ).fetchall()
    finally:
        conn.close()


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_reveal_arrows_move_the_marker_and_the_review_applies_to_the_marked_question(tmp_path, demo, size):
    """On hanna's reveal (six questions, each with four other raters) ↑/↓ scrolled the list and left ▶ on the
    first question, so every agree / disagree / revision went to relevance. Now they move ▶, the list scrolls to
    keep it in view (complexity, the last, is below the first screen at 80x24), and the keys act on it."""
    db = demo
    app = TmuxApp(annotate_command(db, "teacher", "hanna", "--reveal"), tmp_path, size=size, env="env TERM=xterm")
    try:
        app.wait_text("item 1/96", "q quit")
        app.keys("333333")
        app.wait_text("Other raters' ratings of this item", "▶ relevance")
        app.key("Down")
        app.wait_text("▶ coherence")
        app.keys("x")  # disagree: coherence
        app.wait_text("coherence you: 3 [disagree]")
        for name in ("empathy", "surprise", "engagement", "complexity"):
            app.key("Down")
            app.wait_text(f"▶ {name}")  # in view: the list scrolled to it
        app.keys("y")  # agree: complexity
        app.wait_text("complexity you: 3 [agree]")
        app.key("Up")
        app.wait_text("▶ engagement")
        app.keys("r")
        app.wait_text("Your revised engagement rating:")
        app.keys("5")
        app.key("Enter")
        app.wait_text("engagement you: 5")
        app.key("Down", "Down")  # past the last question, back to the first: the list's top again
        app.wait_text("Other raters' ratings of this item", "▶ relevance")
        app.key("Enter")  # the next item
        app.wait_text("item 2/96")
        app.keys("q")
        assert app.wait_status() == 0
    finally:
        app.close()
    assert reviews(db, "teacher") == [("coherence", "disagree"), ("complexity", "agree")]
    assert revisions(db, "teacher") == [("engagement", 5.0)]
    assert ratings_in_force(db, "teacher")[("h00", "engagement")] == 5.0
    assert ratings_in_force(db, "teacher")[("h00", "relevance")] == 3.0


TITLES = "id,title\nt1,Stocks fall\nt2,Oil prices climb\nt3,Rebels seize town\n"


def test_the_end_of_the_task_is_said_on_screen(tmp_path):
    """At the last item the screen stayed put and said nothing. Now it says how many are left (and where the
    first is), and once every item is rated, that the task is done and what comes next."""
    items = tmp_path / "titles.csv"
    items.write_text(TITLES)
    db = tmp_path / "t.db"
    subprocess.run([*CLI, "import", str(items), "--task", "title-fluency", "--db", str(db)], check=True, cwd=ROOT)
    app = TmuxApp(annotate_command(db, "finisher", "title-fluency"), tmp_path, env="env TERM=xterm")
    try:
        app.wait_text("item 1/3", "q quit")
        assert "last item" not in flat(app.screen())
        app.keys("g")
        app.wait_text("Go to item")
        app.keys("3")
        app.key("Enter")
        app.wait_text("item 3/3")
        app.keys("4")
        app.wait_text("That was the last item: 2 of 3 are not rated yet; the first is item 1 (g goes to it)")
        app.keys("g")
        app.wait_text("Go to item")
        app.keys("1")
        app.key("Enter")
        app.wait_text("item 1/3")
        app.keys("5")
        app.wait_text("item 2/3")
        app.keys("2")
        screen = app.wait_text("Done: all 3 items of title-fluency are rated.", "3/3 rated")
        assert "q quits and prints the report and judge commands" in flat(screen)
        app.keys("q")
        assert app.wait_status() == 0
        assert "Next steps (copy and paste):" in app.printed()
    finally:
        app.close()


def test_long_judge_labels_are_abbreviated_deliberately_and_shown_whole(tmp_path):
    """The agreement pane cut a judge's label at 30 characters (and at 16 in the distributions), losing its mode
    (`… constra`). At 80 columns the table keeps the judge's number and mode and cuts the model's name in the
    middle, the full label is listed under the table, and the distributions give a long name a line of its own."""
    from tui_rater.store.study import Study

    items = tmp_path / "titles.csv"
    items.write_text(TITLES)
    db = tmp_path / "labels.db"
    subprocess.run([*CLI, "import", str(items), "--task", "title-fluency", "--db", str(db)], check=True, cwd=ROOT)
    study = Study.open(db)
    config = {"backend": "llama.cpp", "model_file": "qwen2.5-0.5b-instruct-q4_k_m.gguf", "mode": "constrained"}
    judge = study.judge("qwen-constrained-rater", config)
    label = study._db.conn.execute("SELECT label FROM raters WHERE id = ?", [judge.id]).fetchone()[0]
    assert label == "J1 qwen2.5-0.5b-instruct-q… constrained"  # (labels.py cuts a model name at 24)
    human = study.human("bob")
    for item, (h, j) in zip(study.items("title-fluency"), [(1, 2), (3, 3), (5, 4)]):
        study.add_rating(item.key, "fluency", human.id, h)
        study.add_rating(item.key, "fluency", judge.id, j)
    study.close()
    app = TmuxApp(annotate_command(db, "reader", "title-fluency"), tmp_path, env="env TERM=xterm")
    try:
        app.wait_text("item 1/3", "q quit")
        app.keys("a")
        # the running sums show first (α, τ: n/a until the full computation arrives): wait for the numbers
        screen = app.wait_screen(lambda s: re.search(r"J1 qwen2\.5-0\.5b-i… constrained\s+-?\d\.\d\d", s))
        rows = [line for line in screen.splitlines() if line.strip().startswith("J1 qwen2.5-0.5b-i… constrained ")]
        assert re.search(r"constrained\s+-?\d\.\d\d", rows[0]), rows  # the numbers follow, in their columns
        assert "J1 qwen2.5-0.5b-i… constrained = J1 qwen2.5-0.5b-instruct-q… constrained" in screen
        assert "constra " not in screen.replace("constrained", "")
        app.key("End")
        app.key("PageDown")
        screen = app.wait_text("rating distributions")
        assert re.search(r"^ J1 qwen2\.5-0\.5b-instruct-q… constrained\s*$", screen, re.M), screen
        assert footer(screen).rstrip().endswith("q quit")
    finally:
        app.close()

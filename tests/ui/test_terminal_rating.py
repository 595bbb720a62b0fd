"""Rating and correcting in a real terminal (tmux at 80x24, TERM=xterm, no mouse): where the focus goes after
a key, what the footer and the questions pane promise, and what the file holds afterwards."""

from __future__ import annotations

import pytest

from tests.support import story_study
from tests.ui.tmux import TmuxApp, annotate_command, flat, needs_tmux, ratings_in_force

pytestmark = [pytest.mark.terminal, needs_tmux]


def test_correcting_two_questions_of_a_complete_item_stays_on_it(tmp_path):
    """README: "rate the focused question and move on; after the last question the next item appears". Going
    back to a complete item to fix two questions threw the annotator onto the next item after the first one;
    now each correction moves to the next question, and only the item's last question moves on."""
    db = story_study(tmp_path / "s.db")
    app = TmuxApp(annotate_command(db, "fixer", "story"), tmp_path, env="env TERM=xterm")
    try:
        app.wait_text("item 1/4", "q quit")
        app.keys("4325")
        app.wait_text("item 2/4")
        app.keys("p")
        app.wait_text("item 1/4", "▶ [4] grammaticality")
        app.keys("2")  # grammaticality corrected: on to cohesiveness, same item
        screen = app.wait_text("[2] grammaticality", "▶ [3] cohesiveness")
        assert "item 1/4" in screen
        app.keys("1")  # cohesiveness corrected: on to likability
        screen = app.wait_text("[1] cohesiveness", "▶ [2] likability")
        assert "item 1/4" in screen
        app.key("Down")
        app.wait_text("▶ [5] relevance")
        app.keys("4")  # the last question: the next item appears
        app.wait_text("item 2/4", "▶ [·] grammaticality")
    finally:
        app.close()
    assert ratings_in_force(tmp_path / "s.db", "fixer") == {
        ("s0", "grammaticality"): 2.0,
        ("s0", "cohesiveness"): 1.0,
        ("s0", "likability"): 2.0,
        ("s0", "relevance"): 4.0,
    }


def test_with_reveal_a_correction_reopens_the_reveal_only_after_the_last_question(tmp_path):
    """--reveal: the other raters are shown once an item is rated. Correcting a question that is not the last
    opened the reveal (and then the next item) on every key; now it moves to the next question, and the reveal
    comes back when the item's last question is answered again."""
    db = story_study(tmp_path / "s.db")
    app = TmuxApp(annotate_command(db, "fixer", "story", "--reveal"), tmp_path, env="env TERM=xterm")
    reveal = "Other raters' ratings of this item"
    try:
        app.wait_text("item 1/4", "q quit")
        app.keys("4325")
        app.wait_text(reveal)
        app.key("Enter")
        app.wait_text("item 2/4", "▶ [·] grammaticality")
        app.keys("p")
        app.wait_text("item 1/4", "▶ [4] grammaticality")
        app.keys("2")
        app.wait_text("[2] grammaticality", "▶ [3] cohesiveness")
        app.keys("1")  # had the reveal opened after "2", this key would have gone to it
        screen = app.wait_text("[1] cohesiveness", "▶ [2] likability")
        assert reveal not in flat(screen) and "item 1/4" in screen
        app.key("Down")
        app.wait_text("▶ [5] relevance")
        app.keys("4")
        app.wait_text(reveal)
        app.key("Enter")
        app.wait_text("item 2/4", "▶ [·] grammaticality")
    finally:
        app.close()
    assert ratings_in_force(tmp_path / "s.db", "fixer") == {
        ("s0", "grammaticality"): 2.0,
        ("s0", "cohesiveness"): 1.0,
        ("s0", "likability"): 2.0,
        ("s0", "relevance"): 4.0,
    }

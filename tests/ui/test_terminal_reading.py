"""Reading before rating, in a real terminal (tmux at 80x24, TERM=xterm, no mouse): the keys an annotator
over SSH uses to get through a long text, and the help screen that names them."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.support import story_study
from tests.ui.tmux import TmuxApp, all_ratings, annotate_command, needs_tmux, ratings_in_force

pytestmark = [pytest.mark.terminal, needs_tmux]

# 2,400 numbered words: about 200 lines at 80 columns, some twenty pages of the story pane
LONG = "START " + " ".join(f"w{i:04d}" for i in range(2400)) + " END-OF-STORY"


def top_word(screen: str) -> str:
    """The first story word on screen (the story pane's top line, under the status line)."""
    found = re.search(r"\b(START|w\d{4}|END-OF-STORY)\b", screen)
    return found.group(1) if found else ""


def test_a_burst_of_page_downs_reaches_the_end_of_a_long_story(tmp_path):
    """Key repeat over SSH arrives in bunches: 30 PageDowns in one write move 30 pages (they moved one to
    three), so the whole story can be read before rating; PageUps in one write come back to its start."""
    db = story_study(tmp_path / "s.db", [{"id": "long", "prompt": "A prompt.", "story": LONG}])
    app = TmuxApp(annotate_command(db, "reader", "story"), tmp_path, env="env TERM=xterm")
    try:
        app.wait_text("item 1/1", "q quit")
        app.key(*["PageDown"] * 30)
        screen = app.wait_text("END-OF-STORY", timeout=10)
        assert "▶ [·] grammaticality" in screen  # the questions stayed in view
        app.key(*["PageUp"] * 30)
        app.wait_screen(lambda s: "START" in s and "Story fragment:" in s, timeout=10)
        app.keys("4")
        app.wait_text("▶ [·] cohesiveness")
    finally:
        app.close()
    assert ratings_in_force(db, "reader") == {("long", "grammaticality"): 4.0}


def test_page_down_after_moving_on_starts_at_the_next_story_top(tmp_path):
    """The last rating and a PageDown in one burst: the next story opens at its top, then one page down
    (the move's scroll to the top must not undo the page, nor the page the move)."""
    stories = [{"id": f"s{n}", "prompt": "P.", "story": LONG.replace("START", f"START{n}")} for n in range(2)]
    db = story_study(tmp_path / "s.db", stories)
    app = TmuxApp(annotate_command(db, "reader", "story"), tmp_path, env="env TERM=xterm")
    try:
        app.wait_text("item 1/2", "q quit")
        app.key("1", "2", "3", "4", "PageDown", "PageDown")

        def page(screen: str) -> int:
            word = top_word(screen)
            return int(word[1:]) if "item 2/2" in screen and word.startswith("w") else -1

        # two pages of 11 lines of 12 words, less the instructions' lines on the first (w0191 at 80x24;
        # one page alone: w0059)
        screen = app.wait_screen(lambda s: page(s) >= 120, timeout=10)
        assert page(screen) <= 260
    finally:
        app.close()


def test_home_and_end_go_to_the_top_and_the_end_of_a_long_story(tmp_path):
    """A 100,000-character story is some 130 pages of PageDown: End shows its end at once, Home its top again;
    End in the burst of the rating that moved on shows the next story's end (not the last one's, nor its top)."""
    stories = [{"id": f"s{n}", "prompt": "P.", "story": LONG.replace("START", f"START{n}")} for n in range(2)]
    db = story_study(tmp_path / "s.db", stories)
    app = TmuxApp(annotate_command(db, "reader", "story"), tmp_path, env="env TERM=xterm")
    try:
        app.wait_text("item 1/2", "q quit")
        app.key("End")
        screen = app.wait_text("END-OF-STORY", timeout=10)
        assert "START0" not in screen and "▶ [·] grammaticality" in screen
        app.key("Home")
        app.wait_screen(lambda s: "START0" in s and "END-OF-STORY" not in s, timeout=10)
        app.key("1", "2", "3", "4", "End")
        screen = app.wait_screen(lambda s: "item 2/2" in s and "END-OF-STORY" in s, timeout=10)
        assert "START1" not in screen
        app.key("Home")
        app.wait_screen(lambda s: "START1" in s and "END-OF-STORY" not in s, timeout=10)
    finally:
        app.close()


def help_rows(screen: str) -> dict[str, str]:
    """The help screen's rows: description -> the keys it lists (the box's borders left out)."""
    rows = {}
    for line in screen.splitlines():
        line = re.sub(r"[▁▂▃▄▅▆▇█]+ ?│", " │", line)  # the box's scroll bar (the note below the rows)
        found = re.search(r"│\s*(\S.*?)  (\S.*?)\s*│", line)
        if found:
            rows[found.group(2)] = found.group(1).strip()
    return rows


def test_the_help_lists_every_key_of_an_action_and_each_does_it(tmp_path):
    """The help said "↑↓ next question" (↑ goes back), "←→ next item", "question_mark", and never named tab,
    shift+tab's partner or n: each key it lists now is one that does the action, pressed here."""
    db = story_study(tmp_path / "s.db")
    app = TmuxApp(annotate_command(db, "keys", "story"), tmp_path, env="env TERM=xterm")
    try:
        app.wait_text("item 1/4", "q quit")
        app.keys("?")
        rows = help_rows(app.wait_text("Keys", "this help"))
        assert rows["next question"].split() == ["↓", "tab"]
        assert rows["previous question"].split() == ["↑", "shift+tab"]
        assert rows["next item"].split() == ["→", "n"]
        assert rows["previous item"].split() == ["←", "p"]
        assert rows["undo the last rating"].split() == ["u", "^z"]
        assert rows["scroll the text"] == "pgdn" and rows["scroll the text back"] == "pgup"
        assert rows["the text's top"] == "home" and rows["the text's end"] == "end"
        assert rows["this help"] == "?" and "question_mark" not in app.screen()
        assert rows["quit (once every rating is in the file)"] == "q"  # every row in view at 80x24
        app.key("Escape")
        app.wait_screen(lambda s: "this help" not in s)
        tmux_name = {"↓": "Down", "tab": "Tab", "↑": "Up", "shift+tab": "BTab", "→": "Right", "←": "Left"}
        for forward, back in (("↓", "↑"), ("tab", "shift+tab")):
            app.key(tmux_name[forward])
            app.wait_text("▶ [·] cohesiveness")
            app.key(tmux_name[back])
            app.wait_text("▶ [·] grammaticality")
        for forward, back in (("→", "←"), ("n", "p")):
            app.key(tmux_name.get(forward, forward))
            app.wait_text("item 2/4")
            app.key(tmux_name.get(back, back))
            app.wait_text("item 1/4")
        app.keys("?")
        app.wait_text("this help")
        app.keys("?")  # the key that opens the help closes it too
        app.wait_screen(lambda s: "this help" not in s)
    finally:
        app.close()


def spa_study(db: Path) -> Path:
    """Three writers on six prompts, one SPA packet of four: nine questions (six probabilities, three Likert)."""
    from tui_rater.store import spa
    from tui_rater.store.study import Study

    study = Study.open(db)
    rows = [
        {"id": f"{s}-{i}", "system": s, "prompt": f"Prompt {i}.", "story": f"{s} story {i}. Tick tock."}
        for i in range(6)
        for s in ("human", "gpt2", "gpt3")
    ]
    study.add_items(study.task("story"), rows)
    spa.setup(study, ["human", "gpt2", "gpt3"], m=4, packets=1, seed=1)
    study.close()
    return db


def test_spa_at_80x24_says_how_many_questions_follow_and_saves_what_was_typed(tmp_path):
    """SPA's nine questions wrap to two lines each at 80 columns: six of them overflowed the questions pane,
    cutting the last one and the "… 3 questions below" line, so the three Likert questions came unannounced.
    Every question is answered from the keyboard (digits, Backspace, Enter) and the file holds exactly that."""
    db = spa_study(tmp_path / "spa.db")
    app = TmuxApp(annotate_command(db, "spa-rater", "spa"), tmp_path, env="env TERM=xterm")
    typed = ["55", "45", "100", "0", "70", "30"]
    try:
        screen = app.wait_text("item 1/1", "q quit")
        assert re.search(r"… \d questions below", screen)
        names = []
        for value in typed:
            shown = app.wait_text("type 0-100, then Enter")
            names.append(re.search(r"▶ \[·\] (p_[A-C]_over_[A-C]):", shown).group(1))
            app.keys("9")
            app.key("BSpace")
            app.keys(value)
            app.key("Enter")
            app.wait_text(f"[{value}] {names[-1]}")
            assert re.search(r"… \d questions (below|above)", app.screen())
        for value in "423":

            def focused(screen: str) -> str | None:
                found = re.search(r"▶ \[·\] (likert_[A-C]):", screen)
                return found.group(1) if found and found.group(1) not in names else None

            names.append(focused(app.wait_screen(focused)))
            app.keys(value)
        app.wait_text("1/1 rated")
    finally:
        app.close()
    expected = {("packet-1", name): float(v) for name, v in zip(names, [*typed, "4", "2", "3"])}
    assert ratings_in_force(db, "spa-rater") == expected
    assert len(all_ratings(db, "spa-rater")) == 9  # nothing twice

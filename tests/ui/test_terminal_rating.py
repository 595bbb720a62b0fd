"""Rating and correcting in a real terminal (tmux at 80x24, TERM=xterm, no mouse): where the focus goes after
a key, what the footer and the questions pane promise, and what the file holds afterwards."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.support import story_study
from tests.ui.tmux import TmuxApp, annotate_command, flat, needs_tmux, ratings_in_force

pytestmark = [pytest.mark.terminal, needs_tmux]


# what both correction tests leave in the file: item s0 as corrected, nothing twice
CORRECTED = {
    ("s0", "grammaticality"): 2.0,
    ("s0", "cohesiveness"): 1.0,
    ("s0", "likability"): 2.0,
    ("s0", "relevance"): 4.0,
}


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
        app.keys("q")  # quit waits for every rating to be in the file (closing the terminal may not)
        assert app.wait_status() == 0
    finally:
        app.close()
    assert ratings_in_force(tmp_path / "s.db", "fixer") == CORRECTED


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
        app.keys("q")
        assert app.wait_status() == 0
    finally:
        app.close()
    assert ratings_in_force(tmp_path / "s.db", "fixer") == CORRECTED


PAIRS = [
    {"id": f"p{i}", "prompt": f"Prompt {i}.", "story_a": f"Storyline A{i}.", "story_b": f"Storyline B{i}."}
    for i in range(3)
]


def pairwise_study(db: Path) -> Path:
    from tui_rater.store.study import Study

    study = Study.open(db)
    study.add_items(study.task("story-pairwise"), PAIRS)
    study.close()
    return db


def footer(screen: str) -> str:
    return screen.rstrip("\n").splitlines()[-1]


def test_the_pairwise_footer_names_the_key_that_opens_the_agreement_pane(tmp_path):
    """On an A / B / tie screen `a` answers A; the footer said "a stat" all the same. It names ^a there, which
    opens the pane, and `a` still answers A."""
    db = pairwise_study(tmp_path / "p.db")
    app = TmuxApp(annotate_command(db, "chooser", "story-pairwise"), tmp_path, env="env TERM=xterm")
    try:
        screen = app.wait_text("item 1/3", "q quit")
        line = footer(screen)
        assert "^a stat" in line and "a stat" not in line.replace("^a stat", ""), line
        app.key("C-a")
        app.wait_text("judge queue:")  # the agreement pane
        app.key("Escape")
        app.wait_text("item 1/3", "q quit")
        app.keys("a")
        app.wait_text("item 2/3")
    finally:
        app.close()
    assert ratings_in_force(db, "chooser") == {("p0", "preference"): 0.0}


def test_the_footer_keeps_a_for_the_agreement_pane_where_a_answers_nothing(tmp_path):
    db = story_study(tmp_path / "s.db")
    app = TmuxApp(annotate_command(db, "rater", "story"), tmp_path, env="env TERM=xterm")
    try:
        line = footer(app.wait_text("item 1/4", "q quit"))
        assert " a stat" in line and "^a" not in line, line
    finally:
        app.close()


MIXED_TASK = """
[[task]]
name = "mixed"
fields = ["prompt", "story_a", "story_b"]

[[task.attributes]]
name = "preference"
question = "Which storyline is better?"
protocol = "pairwise"
params = { first = "story_a", second = "story_b" }
scale = { kind = "choice", choices = ["Storyline-1", "Storyline-2", "Both are equally good"] }

[[task.attributes]]
name = "fluency"
question = "How fluent is Storyline-1?"
scale = { kind = "likert", low = 1, high = 5 }
"""


def test_the_footer_follows_the_focused_question_in_a_task_mixing_pairwise_and_likert(tmp_path):
    """`a` answers the pairwise question and opens the agreement pane on the Likert one: the footer says which,
    as the focus moves between them (and after an answer moves it)."""
    from tui_rater.store.study import Study

    task_file = tmp_path / "mixed.toml"
    task_file.write_text(MIXED_TASK)
    study = Study.open(tmp_path / "m.db", task_files=[task_file])
    task = study.task("mixed")
    study.remember_task(task)
    study.add_items(task, PAIRS)
    study.close()
    app = TmuxApp(annotate_command(tmp_path / "m.db", "mixer", "mixed"), tmp_path, env="env TERM=xterm")
    try:
        assert "^a stat" in footer(app.wait_text("▶ [·] preference", "q quit"))
        app.key("Down")
        assert " a stat" in footer(app.wait_screen(lambda s: "▶ [·] fluency" in s and " a stat" in footer(s)))
        app.key("Up")
        app.wait_screen(lambda s: "▶ [·] preference" in s and "^a stat" in footer(s))
        app.keys("b")  # answers B, then the focus is on fluency
        app.wait_screen(lambda s: "▶ [·] fluency" in s and " a stat" in footer(s))
        app.keys("a")  # on the Likert question `a` is the agreement pane's key
        app.wait_text("judge queue:")  # the agreement pane
    finally:
        app.close()
    assert ratings_in_force(tmp_path / "m.db", "mixer") == {("p0", "preference"): 1.0}


TIE = "Both storylines are equally well-written and consistent with the beginning of the story."


def hint_line(screen: str) -> str:
    return next(line.strip() for line in screen.splitlines() if line.strip().startswith("a = "))


@pytest.mark.parametrize(("size", "whole"), [((80, 24), False), ((140, 30), True)])
def test_a_choice_hint_cut_to_the_width_says_so_and_is_whole_where_it_fits(tmp_path, size, whole):
    """The tie's label was cut at 28 characters with nothing to say so ("t = Both storylines are equally"). At
    80 columns it is cut to the line and ends in "…"; at 140 columns the whole label is shown."""
    db = pairwise_study(tmp_path / "p.db")
    env = "TERM=xterm"
    app = TmuxApp(annotate_command(db, "chooser", "story-pairwise"), tmp_path, size=size, env=env)
    try:
        screen = app.wait_text("item 1/3", "q quit")
        if whole:  # the first frame may be drawn before the terminal's size is known
            screen = app.wait_screen(lambda s: hint_line(s).endswith(TIE))
        line = hint_line(screen)
    finally:
        app.close()
    assert line.startswith("a = Storyline-1  b = Storyline-2  t = Both storylines are equally"), line
    tie = line.split("t = ", 1)[1]
    if whole:
        assert tie == TIE, line
    else:  # cut where the line ends (two columns of padding, five of indent), and says so
        assert tie.endswith("…") and TIE.startswith(tie[:-1]) and len(line) == size[0] - 7, line


def test_long_choice_labels_give_way_longest_first_and_each_cut_one_says_so():
    from tui_rater.domain.questions import Attribute, Choice, Scale
    from tui_rater.ui.render import scale_hint

    labels = ("Short", "A middling label here", "A very long label that goes on and on and on")
    choices = tuple(Choice(chr(65 + i), label) for i, label in enumerate(labels))
    attribute = Attribute("pick", "Which?", Scale("choice", 0, 2, choices=choices))
    assert (
        scale_hint(attribute) == scale_hint(attribute, 200) == "1 = Short  2 = A middling label here  3 = " + labels[2]
    )
    for width in (70, 50, 36):
        hint = scale_hint(attribute, width)
        assert len(hint) <= width and hint.startswith("1 = Short  2 = "), hint
        parts = hint.split("  ")
        assert [p[:4] for p in parts] == ["1 = ", "2 = ", "3 = "], hint
        for part, label in zip(parts, labels):
            shown = part[4:]
            assert shown == label or (shown.endswith("…") and label.startswith(shown[:-1])), hint
    assert scale_hint(attribute, 10).endswith("…") and len(scale_hint(attribute, 10)) == 10


def test_the_app_shows_the_ratings_in_force_its_own_and_in_the_reveal(tmp_path):
    """The app shows what the reports use. A person's rating under a sample other than 0 (earlier versions'
    import-ratings wrote them) is never in force: the app showed it as the person's answer when it was the
    later row. And the reveal showed another person's changed rating beside the one that replaced it."""
    from tui_rater.store.session import AnnotationSession
    from tui_rater.store.study import Study

    db = story_study(tmp_path / "s.db")
    study = Study.open(db)
    bob = AnnotationSession.open(study, "story", "bob")
    bob.rate(0, "likability", 2.0)
    bob.rate(0, "likability", 4.0)  # bob changed his mind: 4 is his rating
    carol = AnnotationSession.open(study, "story", "carol")
    carol.rate(0, "grammaticality", 4.0)
    s0 = carol.items[0].key  # what an old import-ratings wrote later, under sample 1
    study.add_rating(s0, "grammaticality", carol.rater.id, 1.0, sample=1, parse_status="imported")
    study.close()
    app = TmuxApp(annotate_command(db, "carol", "story", "--reveal"), tmp_path, env="env TERM=xterm")
    try:
        screen = app.wait_text("item 1/4", "▶ [·] cohesiveness")
        assert "[4] grammaticality" in screen and "[1] grammaticality" not in screen
        app.keys("325")
        screen = flat(app.wait_text("Other raters' ratings of this item", "bob: 4"))
        assert "bob: 2" not in screen, screen
        app.key("Enter")
        app.wait_text("item 2/4")
        app.keys("q")  # quit waits for every rating to be in the file
        assert app.wait_status() == 0
    finally:
        app.close()
    assert ratings_in_force(db, "carol") == {
        ("s0", "grammaticality"): 4.0,
        ("s0", "cohesiveness"): 3.0,
        ("s0", "likability"): 2.0,
        ("s0", "relevance"): 5.0,
    }


def test_a_key_remapped_in_the_config_file_leaves_the_choice_letters_to_the_choices(tmp_path):
    """[keys] next_attribute = "down,tab,t": on the A / B / tie question `t` answers tie, and on the Likert one it
    moves to the next question. Textual applies the config's keymap after the main screen takes the choice letters
    from the bindings, so `t` (a priority binding) moved the focus and the tie was never saved."""
    from tests.ui.tmux import all_ratings
    from tui_rater.store.study import Study

    task_file, config = tmp_path / "mixed.toml", tmp_path / "config.toml"
    task_file.write_text(MIXED_TASK)
    config.write_text('[keys]\nnext_attribute = "down,tab,t"\nskip = "s,b"\n')
    study = Study.open(tmp_path / "m.db", task_files=[task_file])
    task = study.task("mixed")
    study.remember_task(task)
    study.add_items(task, PAIRS)
    study.close()
    command = annotate_command(tmp_path / "m.db", "mixer", "mixed")
    app = TmuxApp(command, tmp_path, env=f"env TERM=xterm TUI_RATER_CONFIG={config}")
    try:
        app.wait_text("▶ [·] preference", "q quit")
        app.keys("t")  # answers tie; the focus moves on to fluency
        app.wait_screen(lambda s: "▶ [·] fluency" in s and "[·] preference" not in s)
        app.keys("t")  # on the Likert question: the next question (back to preference)
        app.wait_screen(lambda s: "▶ [" in s and "] preference" in s.split("▶", 1)[1].split("\n", 1)[0])
        app.keys("b")  # answers B (not skip): then fluency, still item 1
        screen = app.wait_screen(lambda s: "▶ [·] fluency" in s)
        assert "item 1/3" in screen
        app.keys("4")
        app.wait_text("item 2/3")
        app.keys("q")
        assert app.wait_status() == 0
    finally:
        app.close()
    assert all_ratings(tmp_path / "m.db", "mixer") == [
        ("p0", "preference", 2.0, 0),
        ("p0", "preference", 1.0, 0),
        ("p0", "fluency", 4.0, 0),
    ]


def test_a_choice_hint_is_cut_again_to_the_new_width_when_the_terminal_is_resized(tmp_path):
    """The hint was cut to the width before the resize (the app's size changes after its resize handler): from 140
    to 80 columns the whole tie label was clipped by the screen with no "…", and back to 140 it stayed cut."""
    db = pairwise_study(tmp_path / "p.db")
    app = TmuxApp(annotate_command(db, "chooser", "story-pairwise"), tmp_path, size=(140, 30), env="TERM=xterm")
    try:
        app.wait_text("item 1/3", "q quit")

        def hint(screen: str) -> str:  # "" while a redraw leaves it out
            return next((line.strip() for line in screen.splitlines() if line.strip().startswith("a = ")), "")

        app.wait_screen(lambda s: hint(s).endswith(TIE))
        app._tmux("resize-window", "-t", "app", "-x", "80", "-y", "24")
        app.wait_screen(lambda s: hint(s).endswith("…") and len(hint(s)) <= 78)
        app._tmux("resize-window", "-t", "app", "-x", "140", "-y", "30")
        app.wait_screen(lambda s: hint(s).endswith(TIE))
    finally:
        app.close()


def test_a_package_protocols_keys_and_labels_are_shown_literally():
    # a protocol from another package says which keys answer; the hint shows them as it shows data
    from tui_rater.domain import protocols
    from tui_rater.domain.protocols import ChoiceAnswer, HumanInput
    from tui_rater.domain.questions import Attribute, Choice, Scale
    from tui_rater.ui.render import scale_hint

    class LoudKeys(ChoiceAnswer):
        name = "loud-keys"

        def human_input(self, attribute):
            return HumanInput("key", ("\x1b[2J", "b"), (0.0, 1.0), labels=("\x1b]0;pwn\x07x", "[bold]y"))

    protocols.register(LoudKeys())
    try:
        choices = (Choice("A", "x"), Choice("B", "y"))
        attribute = Attribute("pick", "Which?", Scale("choice", 0, 1, choices=choices), protocol="loud-keys")
        assert scale_hint(attribute) == "⟨ESC⟩[2J = ⟨ESC⟩]0;pwn⟨BEL⟩x  b = [bold]y"
    finally:  # the other tests see the papers' protocols only
        del protocols.REGISTRY["loud-keys"]

"""The agreement pane redraws only the part a change altered (issue 35 item 1: keys < 50 ms p99 while the pane
computes): its head (the counts, the judge queue) and the question in focus are two widgets; a look that finds a
rating of another question redraws the head alone, and a redraw that would show the same text redraws nothing --
Textual's layout and rendering of the whole pane on the UI thread, for nothing, after every rating stored."""

from __future__ import annotations

from textual.widgets import Static

from tests.support import wait_until


def _rated(study, questions):
    """A judge and a person on the first four stories, for each of ``questions``; (the stories, the judge)."""
    judge, person = study.judge("judge-x", {"m": "x"}), study.human("bob")
    for item, value in zip(study.items("story"), (1, 5, 3, 4)):
        for question in questions:
            study.add_rating(item.key, question, judge.id, value)
            study.add_rating(item.key, question, person.id, 6 - value)
    return study.items("story"), judge


async def _full_figures(app, pilot):
    """The agreement pane opened (`a`) and its full computation's figures shown."""
    from tui_rater.ui.agreement import AgreementScreen

    await pilot.press("a")
    screen = app.screen
    assert isinstance(screen, AgreementScreen)
    await wait_until(pilot, lambda: screen.data is not None and not screen.data.stale, "the full figures")
    return screen


async def test_a_rating_of_another_question_redraws_the_head_only(app_for, study) -> None:

    items, judge = _rated(study, ("grammaticality",))
    app = app_for()
    async with app.run_test(size=(100, 40)) as pilot:
        screen = await _full_figures(app, pilot)
        head, body = screen.query_one("#agreement-head", Static), screen.query_one("#agreement-text", Static)
        assert screen.data.attributes[screen.focus_attr].attribute == "grammaticality"
        shown_head, shown_body = head.content, body.content
        screen.redraw()  # nothing changed: nothing redrawn
        assert head.content is shown_head and body.content is shown_body
        before = screen.shown.n_ratings
        study.add_rating(items[0].key, "cohesiveness", judge.id, 2)  # another question than the one in focus
        await wait_until(pilot, lambda: screen.shown.n_ratings == before + 1, "the running sums' look")
        await wait_until(pilot, lambda: not screen.shown.stale, "the full computation caught up")
        await pilot.pause(0.3)
        assert f"{before + 1} ratings" in str(head.render())
        assert head.content is not shown_head
        assert body.content is shown_body  # grammaticality's figures: as they were, not redrawn
        shown_body = body.content
        await pilot.press("right")  # the next question: the body redrawn
        assert body.content is not shown_body and "cohesiveness" in str(body.render())


def test_same_height_only_when_no_line_count_or_wrap_can_differ() -> None:
    from rich.text import Text

    from tui_rater.ui.agreement import same_height

    two = Text("α 0.51\nτ 0.40")
    assert same_height(Text("α 0.52\nτ 0.41"), two, 20)
    assert not same_height(None, two, 20)  # nothing shown yet: its size is found by a layout
    assert not same_height(Text("one line"), two, 20)
    assert not same_height(Text("α 0.52\nτ 0.41\n"), two, 20)  # a last newline is a line more
    assert not same_height(Text("α 0.52\n" + "x" * 21), two, 20)  # wrapped: 3 lines at 20 columns
    assert not same_height(Text("α 0.52\nτ 0.41"), Text("α 0.52\n" + "字" * 11), 20)  # wide characters: 22 cells
    assert not same_height(Text("a\nb"), Text("a\nb"), 0)  # (not laid out yet)


async def test_a_question_drawn_without_a_layout_shows_all_its_lines(app_for, study) -> None:
    """Each question's figures take as many lines here: → draws the next one without Textual's layout. The part keeps
    the height of its lines and the screen shows the new question's text, the same as a pane drawn from scratch."""
    from tui_rater.ui.agreement import render_parts

    _rated(study, ("grammaticality", "cohesiveness"))
    app = app_for()
    async with app.run_test(size=(100, 60)) as pilot:
        screen = await _full_figures(app, pilot)
        await pilot.pause(0.3)
        body = screen.query_one("#agreement-text", Static)
        layouts = body._layout_updates
        shown = screen._drawn["#agreement-text"]
        await pilot.press("right")
        await pilot.pause(0.3)
        drawn = screen._drawn["#agreement-text"]
        assert "◀ cohesiveness ▶" in drawn.plain and drawn.plain.count("\n") == shown.plain.count("\n")
        assert body._layout_updates == layouts  # drawn without a layout
        _, expected = render_parts(screen.shown, screen.focus_attr, screen.selected_gap, screen.question_keys())
        assert drawn == expected  # the text is the pane's, as drawn from scratch
        assert body.size.height == len(drawn.wrap(app.console, body.content_region.width))
        lines = [strip.text for strip in screen._compositor.render_strips() if strip.text.strip()]
        for line in drawn.plain.split("\n"):
            if line.strip():
                assert any(line.strip() in shown_line for shown_line in lines), line

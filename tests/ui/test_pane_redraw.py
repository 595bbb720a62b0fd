"""The agreement pane redraws only the part a change altered (issue 35 item 1: keys < 50 ms p99 while the pane
computes): its head (the counts, the judge queue) and the question in focus are two widgets; a look that finds a
rating of another question redraws the head alone, and a redraw that would show the same text redraws nothing --
Textual's layout and rendering of the whole pane on the UI thread, for nothing, after every rating stored."""

from __future__ import annotations

from textual.widgets import Static

from tests.support import wait_until


async def test_a_rating_of_another_question_redraws_the_head_only(app_for, study) -> None:
    from tui_rater.ui.agreement import AgreementScreen

    items = study.items("story")
    judge, person = study.judge("judge-x", {"m": "x"}), study.human("bob")
    for item, value in zip(items, (1, 5, 3, 4)):
        study.add_rating(item.key, "grammaticality", judge.id, value)
        study.add_rating(item.key, "grammaticality", person.id, 6 - value)
    app = app_for()
    async with app.run_test(size=(100, 40)) as pilot:
        await pilot.press("a")
        screen = app.screen
        assert isinstance(screen, AgreementScreen)
        await wait_until(pilot, lambda: screen.data is not None and not screen.data.stale, "the full figures")
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

"""Pilot tests of the pairwise (Chen et al.) and SPA screens."""

from __future__ import annotations

from tests.support import ratings_of, settle
from tui_rater.store.session import AnnotationSession
from tui_rater.ui.app import make_app


async def test_pairwise_keys_a_b_t(pairwise_app):
    study, app = pairwise_app
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("b", "t", "a")
        await settle(app, pilot)
        assert app.screen is app.screen_stack[0]  # "a" answered; it did not open the agreement pane
        await pilot.press("ctrl+a")
        assert app.screen is not app.screen_stack[0]
    assert ratings_of(study, "alice") == [("p0", "preference", 1), ("p1", "preference", 2), ("p2", "preference", 0)]


async def test_pairwise_side_by_side_when_wide_and_stacked_when_narrow(pairwise_app):
    _study, app = pairwise_app
    async with app.run_test(size=(120, 30)) as pilot:
        assert app.item_layout == "columns"
        await pilot.resize_terminal(90, 30)
        await pilot.pause()
        assert app.item_layout == "stacked"
        plain = str(app.query_one("#item-text").render())
        assert plain.index("Storyline-1:") < plain.index("Storyline A0") < plain.index("Storyline-2:")


async def test_spa_screen_one_packet_per_annotator(spa_study):
    study = spa_study
    first = make_app(AnnotationSession.open(study.reopen(), "spa", "ann-1"))
    async with first.run_test(size=(80, 24)) as pilot:
        shown = str(first.query_one("#item-text").render())
        assert "Writer A" in shown and "Writer B" in shown and "Prompt 4:" in shown
        assert "gpt2" not in shown.split("Writer A", 1)[1][:40]  # writers are anonymised
        questions = str(first.query_one("#questions").render())
        assert "what is the % chance that writer A is a better writer than writer B?" in questions
        await pilot.press("7", "0", "enter", "3", "5", "enter", "4", "2")
        await settle(first, pilot)
    second = AnnotationSession.open(study.reopen(), "spa", "ann-2")
    again = AnnotationSession.open(study.reopen(), "spa", "ann-1")
    assert second.items[0].id != again.items[0].id  # a fresh packet for a new annotator
    assert again.items[0].id == first.session.items[0].id
    values = sorted(v for _, _, v in ratings_of(study, "ann-1"))
    assert values == [2, 4, 35, 70]


async def test_spa_writers_side_by_side_when_wide(spa_study):
    study = spa_study
    app = make_app(AnnotationSession.open(study.reopen(), "spa", "wide"))
    async with app.run_test(size=(120, 30)) as pilot:
        assert app.item_layout == "columns"
        await pilot.resize_terminal(80, 24)
        await pilot.pause()
        assert app.item_layout == "stacked"

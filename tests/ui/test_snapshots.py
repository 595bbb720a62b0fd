"""One snapshot per screen at 80x24 (the SSH floor) and 120x40."""

from __future__ import annotations

import pytest

from tests.support import settle, wait_until
from tui_rater.ui.screens import RevealScreen

SIZES = [(80, 24), (120, 40)]


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_story_screen(snap_compare, app_for, size):
    app = app_for()

    async def run_before(pilot):
        await pilot.press("4")
        await settle(app, pilot)  # the rating in the file: [4], not [4…]

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_title_pair_screen(snap_compare, app_for, size):
    assert snap_compare(app_for(task="title-meaning"), terminal_size=size)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_help_screen(snap_compare, app_for, size):
    assert snap_compare(app_for(), terminal_size=size, press=["question_mark"])


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_input_screen(snap_compare, app_for, size):
    assert snap_compare(app_for(), terminal_size=size, press=["c", "h", "i"])


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_reveal_screen(snap_compare, app_for, study, size):
    judge = study.judge("judge-a", {"m": 1})
    item = study.items("story")[0]
    study.add_rating(
        item.key,
        "grammaticality",
        judge.id,
        4,
        raw="I would rate the grammatical correctness of the text of the story fragment as a 4.",
    )
    app = app_for(reveal=True)

    async def run_before(pilot):
        await pilot.press("4", "3", "2", "5")
        await settle(app, pilot)
        await wait_until(pilot, lambda: isinstance(app.screen, RevealScreen), "the reveal screen")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
def test_agreement_screen(snap_compare, app_for, study, size):
    judge = study.judge("judge-a", {"m": 1})
    human = study.human("bob")
    for item, (h, j) in zip(study.items("story"), [(1, 2), (2, 2), (4, 5), (5, 5)]):
        study.add_rating(item.key, "grammaticality", human.id, h)
        study.add_rating(item.key, "grammaticality", judge.id, j)
    app = app_for()

    async def run_before(pilot):
        await pilot.press("a")
        await wait_until(pilot, lambda: app.screen.data is not None, "the agreement figures")
        await pilot.pause()

    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_pairwise_screen(snap_compare, pairwise_app, size):
    _, app = pairwise_app
    assert snap_compare(app, terminal_size=size)


@pytest.mark.parametrize("size", [(80, 24), (120, 40)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_spa_screen(snap_compare, spa_study, size):
    from tui_rater.store.session import AnnotationSession
    from tui_rater.ui.app import make_app

    assert snap_compare(
        make_app(AnnotationSession.open(spa_study.reopen(), "spa", "ann")), terminal_size=size, press=["6", "5"]
    )

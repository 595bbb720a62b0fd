from __future__ import annotations

import time

import pytest

from tui_rater.store.session import AnnotationSession
from tui_rater.store.study import Study
from tui_rater.ui.app import AppOptions, make_app

STORIES = [
    {
        "id": f"s{i}",
        "system": "gpt2" if i < 2 else "human",
        "prompt": f"Prompt {i}: a dragon learns to knit.",
        "story": f"Story {i}. " + "The dragon sat by the fire and counted stitches. " * 3,
    }
    for i in range(4)
]
TITLES = [
    {
        "id": "t1",
        "system": "textfooler",
        "original": "Stocks fall after weak retail sales report",
        "attacked": "Stocks dip after frail retail sales report",
    },
    {"id": "t2", "system": "benign", "original": "Oil prices climb", "attacked": "Oil prices climb"},
]


@pytest.fixture
def study(tmp_path) -> Study:
    study = Study.open(tmp_path / "ui.db")
    study.add_items(study.task("story"), STORIES)
    study.add_items(study.task("title-meaning"), TITLES)
    study.add_items(study.task("story-explicit"), [{"id": "e1", "prompt": "P", "story": "S."}])
    return study


@pytest.fixture
def app_for(study):
    def build(annotator="alice", task="story", **options):
        session = AnnotationSession.open(study.reopen(), task, annotator, order=options.pop("order", "imported"))
        return make_app(session, AppOptions(**options))

    return build


def ratings_of(study, annotator):
    return [
        tuple(r)
        for r in study.db.conn.execute(
            "SELECT i.id, r.attribute, r.value FROM ratings r JOIN items i ON i.key = r.item_key "
            "JOIN raters ra ON ra.id = r.rater_id WHERE ra.name = ? AND r.retracted = 0 ORDER BY r.id",
            [annotator],
        )
    ]


async def wait_until(pilot, condition, what: str, timeout: float = 10.0) -> None:
    """Let the app run until ``condition()`` holds (polled every 10 ms); fail after ``timeout``."""
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"not within {timeout:g} s: {what}"
        await pilot.pause(0.01)


async def settle(app, pilot):
    """Until every change typed so far is committed and the screen shows it as saved."""
    await pilot.pause()
    await wait_until(pilot, lambda: not app.view.unsaved, "every change saved and shown as saved")
    await pilot.pause()

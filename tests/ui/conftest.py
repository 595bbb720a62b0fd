from __future__ import annotations

import pytest

from tui_rater.store import spa
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


PAIRS = [
    {
        "id": f"p{i}",
        "system": "gpt2 vs human",
        "prompt": f"Prompt {i}",
        "story_a": f"Storyline A{i}: the robot waters the plants.",
        "story_b": f"Storyline B{i}: rain falls.",
    }
    for i in range(3)
]


@pytest.fixture
def pairwise_app(tmp_path):
    """(study, app) for Chen et al.'s pairwise task, annotator alice."""
    study = Study.open(tmp_path / "p.db")
    study.add_items(study.task("story-pairwise"), PAIRS)
    return study, make_app(AnnotationSession.open(study.reopen(), "story-pairwise", "alice"))


@pytest.fixture
def spa_study(tmp_path):
    """Six prompts written by 'human' and 'gpt2', set up for SPA in two packets of four."""
    study = Study.open(tmp_path / "spa.db")
    rows = []
    for i in range(6):
        for system in ("human", "gpt2"):
            rows.append(
                {
                    "id": f"{system}-{i}",
                    "system": system,
                    "prompt": f"Prompt {i}: a clock that runs backwards",
                    "story": f"{system} story {i}. The clock ticked the wrong way.",
                }
            )
    study.add_items(study.task("story"), rows)
    spa.setup(study, ["human", "gpt2"], m=4, packets=2, seed=3)
    return study

"""`progress` marks a careless person from the reliability model (``service/rater_marks.py``), through the real CLI:
a seeded study of four careful people and one who answers at random, fast; the model's mark names the figure. The
careful people are not marked, and a study where everyone is equally noisy marks nobody by the model."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from tests.support import run_cli_process
from tui_rater.store.study import Study

TASK = "title-fluency"


def cli(*args: object) -> tuple[int, str, str]:
    done = run_cli_process(*args)
    return done.returncode, done.stdout, done.stderr


def _study(tmp_path: Path, spreads: dict[str, float | None], items: int = 40) -> Path:
    """People rating Likert 1-5 fluency: each the truth plus noise of their spread (None: uniformly at random, in
    a second per item; the others take 5-12 s)."""
    db = tmp_path / "m.db"
    lines = ["id,title"] + [f"t{i},Title number {i}" for i in range(items)]
    (tmp_path / "i.csv").write_text("\n".join(lines) + "\n")
    code, _out, err = cli("import", tmp_path / "i.csv", "--task", TASK, "--db", db)
    assert code == 0, err
    rng = np.random.default_rng(7)
    study = Study.open(db)
    keys = [item.key for item in study.items(TASK)]
    truth = rng.integers(1, 6, len(keys))
    for name, spread in spreads.items():
        rater = study.human(name)
        for key, true in zip(keys, truth, strict=True):
            if spread is None:
                value, seconds = float(rng.integers(1, 6)), 1.0
            else:
                value, seconds = float(np.clip(np.rint(true + rng.normal(0, spread)), 1, 5)), float(rng.uniform(5, 12))
            study.add_rating(key, "fluency", rater.id, value, parse_status="human", seconds=seconds)
    study.close()
    return db


def _marks(db: Path) -> dict[str, list[str]]:
    code, out, err = cli("progress", "--db", db, "--task", TASK, "--format", "json")
    assert code == 0, err
    (found,) = json.loads(out)
    return {row["annotator"]: row["marks"] for row in found["annotators"]}


def test_progress_marks_a_careless_rater_from_the_model(tmp_path: Path) -> None:
    db = _study(tmp_path, {"ann": 0.4, "ben": 0.5, "cat": 0.6, "dan": 0.5, "eve": None})
    marks = _marks(db)
    model = {name: [m for m in found if m.startswith("model: κ")] for name, found in marks.items()}
    assert len(model["eve"]) == 1 and "on fluency" in model["eve"][0] and "(40 items)" in model["eve"][0]
    assert not any(model[name] for name in ("ann", "ben", "cat", "dan"))
    code, out, err = cli("progress", "--db", db, "--task", TASK)
    assert code == 0, err
    assert "model: κ" in out


def test_equally_noisy_people_are_not_marked_by_the_model(tmp_path: Path) -> None:
    db = _study(tmp_path, {"ann": 1.2, "ben": 1.2, "cat": 1.2, "dan": 1.2})
    assert not any(m.startswith("model:") for found in _marks(db).values() for m in found)

"""``report --reference model`` through the real CLI: the humans' score of an item is the consensus the reliability
model of the people implies -- here, on a choice question, Dawid-Skene's most likely answer, computed again with
crowd-kit; the judge's κ against it is scikit-learn's κ of the judge's answers against crowd-kit's labels."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from tests.stats.golden import CHOICE_TASK
from tests.stats.ratings import insert
from tests.support import run_cli_process
from tui_rater.domain.tasks import task_from_definition
from tui_rater.store.study import Study

pd = pytest.importorskip("pandas")
crowdkit = pytest.importorskip("crowdkit.aggregation")

PEOPLE = {"c1": 0.9, "c2": 0.8, "c3": 0.45, "c4": 0.4}  # the share of items each answers right, else at random


def _study(path: Path) -> tuple[list[int], dict[str, list[float]], list[float]]:
    rng = np.random.default_rng(9)
    study = Study.open(path)
    task = task_from_definition(CHOICE_TASK)
    study.remember_task(task)
    study.add_items(task, [{"id": f"x{i}", "context": f"Said {i}?", "response": f"Reply {i}."} for i in range(60)])
    keys = [item.key for item in study.items("exchange")]
    truth = rng.choice(3, size=len(keys))
    answers = {}
    for name, right in PEOPLE.items():
        rater = study.human(name)
        answers[name] = [float(t if rng.random() < right else rng.choice(3)) for t in truth]
        for key, value in zip(keys, answers[name], strict=True):
            study.add_rating(key, "kind", rater.id, value)
    judge = study.judge("kinds", {"api_model": "k", "mode": "text"})
    judged = [float(t if rng.random() < 0.75 else rng.choice(3)) for t in truth]
    for key, value in zip(keys, judged, strict=True):
        insert(study, key, "kind", judge.id, value)
    study.close()
    return keys, answers, judged


def test_the_model_reference_is_dawid_skene_consensus_of_the_people(tmp_path: Path) -> None:
    db = tmp_path / "r.db"
    keys, answers, judged = _study(db)
    out = tmp_path / "r.json"
    done = run_cli_process("report", "--db", db, "--reference", "model", "--format", "json", "--out", out)
    assert done.returncode == 0, done.stderr
    found = json.loads(out.read_text())
    (kappa,) = [
        r
        for r in found["tasks"]["exchange"]
        if r["table"] == "nominal_pairs" and r["statistic"] == "cohen_kappa" and r["evaluator"] == "humans"
        and r["evaluator_b"] == "kinds"
    ]  # fmt: skip
    rows = [(name, f"t{k}", int(v)) for name, vs in answers.items() for k, v in zip(keys, vs, strict=True)]
    frame = pd.DataFrame(rows, columns=["worker", "task", "label"])
    labels = crowdkit.DawidSkene().fit(frame).labels_
    consensus = [labels[f"t{k}"] for k in keys]
    assert kappa["value"] == pytest.approx(cohen_kappa_score(judged, consensus), abs=1e-9)
    assert "--reference model" in json.dumps(found["metadata"])
    # the plain reference (a vote of the four people) gives another κ: the option changed what it compares with
    plain = run_cli_process("report", "--db", db, "--format", "json", "--out", tmp_path / "p.json")
    assert plain.returncode == 0, plain.stderr
    (before,) = [
        r
        for r in json.loads((tmp_path / "p.json").read_text())["tasks"]["exchange"]
        if r["table"] == "nominal_pairs" and r["statistic"] == "cohen_kappa" and r["evaluator"] == "humans"
        and r["evaluator_b"] == "kinds"
    ]  # fmt: skip
    assert before["value"] != kappa["value"]

"""A jury of local judges in distribution mode (real llama.cpp, generated GGUFs, one with Qwen2's real vocabulary):
its value of an item is the members' stored scale distributions averaged and read by the protocol -- the expected
score of a 1-5 question; for a pair, in the item's terms after both orders, the most probable answer -- checked
against pandas / numpy on the judgements the CLI exports."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from tests.support import STORIES
from tui_rater.cli import main
from tui_rater.judge.tiny_gguf import write_tiny_gguf
from tui_rater.service.reports import built_reports
from tui_rater.store.study import Study

PAIRS = [
    {
        "id": f"p{i}",
        "system": "gpt2 vs human",
        "prompt": f"Prompt {i}.",
        "story_a": f"A cat {i}.",
        "story_b": f"A dog {i}.",
    }
    for i in range(3)
]


def run(*args: object) -> int:
    return main([str(a) for a in args])


def _judge_all(folder: Path, models: list[tuple[str, Path]], tasks: tuple[str, ...]) -> Path:
    db = folder / "d.db"
    study = Study.open(db)
    study.add_items(study.task("story"), STORIES[:2])
    study.add_items(study.task("story-pairwise"), PAIRS)
    study.close()
    for name, model in models:
        for task in tasks:
            code = run(
                "judge", "--db", db, "--model", model, "--task", task, "--mode", "distribution", "--min-mass", "0",
                "--samples", "1", "--judge-name", name, "--as", "lead",
            )  # fmt: skip
            assert code == 0, (name, task)
    return db


@pytest.fixture(scope="module")
def judged(tmp_path_factory, tiny_gguf, qwen_gguf) -> Path:
    """Three generated GGUFs (one on Qwen2's real vocabulary) in distribution mode, on both tasks."""
    folder = tmp_path_factory.mktemp("jury-dist")
    third = write_tiny_gguf(folder / "third.gguf", seed=8)
    models = [("m-tiny", tiny_gguf), ("m-qwen", qwen_gguf), ("m-third", third)]
    return _judge_all(folder, models, ("story", "story-pairwise"))


def _expected(db: Path, tmp: Path, labels: list[str]) -> pd.DataFrame:
    """Per (item, attribute): the members' distributions in the item's terms, averaged (each member's presentations
    first), read as the expected value (1-5) or the most probable answer (a pair: 0 first, 1 second, 2 tie)."""
    out = tmp / "judgements.jsonl"
    assert run("export", "--what", "judgements", "--db", db, "--out", out) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    per: dict[tuple[str, str], dict[str, list[tuple[str, np.ndarray]]]] = {}
    for row in rows:
        if row.get("judge") not in labels or row.get("sample") != 0 or not row.get("distribution"):
            continue
        p = row["distribution"]
        if row["attribute"] == "preference":  # Chiang & Lee's A/B/tie; the swapped order names the other story
            a, b, tie = (p.get(k, 0.0) for k in ("A", "B", "C"))  # C: "Both are equally good"
            if row.get("presentation") == "swapped":
                a, b = b, a
            vector = np.array([a, b, tie])
        else:
            vector = np.array([p.get(str(v), 0.0) for v in range(1, 6)])
        per.setdefault((row["item"], row["attribute"]), {}).setdefault(row["judge"], []).append(
            (row["presentation"], vector)
        )
    found = []
    for (item, attribute), members in per.items():
        if sorted(members) != sorted(labels):
            continue
        # per presentation, the members' distributions averaged; a pair's orders that disagree are a tie (2)
        orders = {}
        for passes in members.values():
            for presentation, vector in passes:
                orders.setdefault(presentation, []).append(vector)
        if attribute == "preference":
            if sorted(orders) != ["original", "swapped"] or any(len(v) != len(labels) for v in orders.values()):
                continue
            read = [float(np.argmax(np.mean(v, axis=0))) for v in orders.values()]
            value = read[0] if read[0] == read[1] else 2.0
        else:
            jury = np.mean(orders[""], axis=0)
            value = float(jury @ np.arange(1, 6) / jury.sum())
        found.append({"item": item, "attribute": attribute, "expected": value})
    return pd.DataFrame(found)


@pytest.mark.parametrize("task", ["story", "story-pairwise"])
def test_a_distribution_jury_averages_the_members_distributions_and_reads_them_as_the_protocol(judged, tmp_path, task):
    _check(judged, tmp_path, task)


@pytest.mark.slow
def test_a_distribution_jury_of_real_small_models(tmp_path, smollm2_gguf, gemma_gguf, qwen_gguf):
    """SmolLM2-135M-Instruct and Gemma 3 270M (the real GGUFs of the test extra) beside a generated model: --min-mass
    0, as their readings of these prompts need (the base Gemma puts little mass on the scale)."""
    models = [("smollm2", smollm2_gguf), ("gemma", gemma_gguf), ("m-qwen", qwen_gguf)]
    _check(_judge_all(tmp_path, models, ("story",)), tmp_path, "story")


def _check(db: Path, tmp_path: Path, task: str) -> None:
    study = Study.open(db)
    labels = [
        label
        for (label,) in study._db.conn.execute(
            "SELECT DISTINCT ra.label FROM ratings r JOIN raters ra ON ra.id = r.rater_id "
            "JOIN items i ON i.key = r.item_key WHERE ra.kind = 'llm' AND i.task = ? ORDER BY ra.id",
            [task],
        )
    ]
    assert len(labels) == 3  # one judge per model (each task's protocol has its own default variant)
    name = f"dist-{task}"
    code = run("jury", name, "--members", ",".join(labels), "--aggregate", "distribution", "--task", task, "--db", db)
    assert code == 0
    expected = _expected(db, tmp_path, labels)
    assert len(expected) == len(study.items(task)) * len(study.task(task).attributes)
    ids = {item.key: item.id for item in study.items(task)}
    report = built_reports(study, [task])[task]
    got = report.frame.filter(report.frame["rater"] == name).to_pandas()
    got["item"] = got["item_key"].map(ids)
    merged = expected.merge(got[["item", "attribute", "value"]], on=["item", "attribute"], how="outer")
    assert merged["value"].notna().all() and merged["expected"].notna().all(), merged
    np.testing.assert_allclose(merged["value"], merged["expected"], rtol=1e-9)
    if task == "story":  # an expected score, not any one answer on the scale
        assert not np.allclose(merged["value"], np.round(merged["value"]))


def test_a_jury_of_judges_that_are_not_agreement_ready_is_marked_so(judged, tmp_path):
    """The generated models put almost no probability on the scale: the members are not agreement-ready, and a jury
    of them is marked so beside its numbers, as they are (its readings are theirs)."""
    study = Study.open(judged)
    labels = [j for (j,) in study._db.conn.execute("SELECT label FROM raters WHERE label LIKE '%m-%' ORDER BY id")][::2]
    assert run("jury", "unready", "--members", ",".join(labels), "--task", "story", "--db", judged) == 0
    out = tmp_path / "r.json"
    assert run("report", "--db", judged, "--task", "story", "--format", "json", "--out", out) == 0
    records = json.loads(out.read_text())["tasks"]["story"]
    table1 = [r for r in records if r["table"] == "table1" and r["statistic"] == "mean"]
    for who in [*labels, "unready"]:
        notes = [r["note"] for r in table1 if r["evaluator"] == who]
        assert notes and all("not agreement-ready" in note for note in notes), who

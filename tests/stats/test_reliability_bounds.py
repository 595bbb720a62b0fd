"""The reliability model's interval through the real CLI (a hostile user's pass): a rater's reliability is Cohen's κ
against the latent truth, which is at most 1, so its interval must not reach past 1 -- "[0.64, 1.03]" names values
κ cannot take. Checked on a seeded study where a good rater's κ ± 1.96 SE crosses 1."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

TASK = """
[[task]]
name = "panel"
instructions = "Rate the reply."
fields = ["text"]

[[task.attributes]]
name = "topic"
question = "Which topic?"
scale = { kind = "choice", choices = ["news", "sport", "other"] }
"""
PEOPLE = {"h1": 0.8, "h2": 0.87, "h3": 0.93}  # each person's chance of giving the true topic
JUDGE = ("j-a", 0.97)


def test_reliability_interval_stays_at_or_below_one(tmp_path: Path, cli) -> None:
    rng = np.random.default_rng(5)
    task, items, ratings, db = tmp_path / "t.toml", tmp_path / "items.csv", tmp_path / "r.csv", tmp_path / "s.db"
    task.write_text(TASK)
    items.write_text("id,system,text\n" + "".join(f"x{i},{'a' if i % 2 else 'b'},Text {i}\n" for i in range(30)))
    rows = []
    for i in range(30):
        topic = int(rng.integers(0, 3))
        for rater, right in (*PEOPLE.items(), JUDGE):
            said = topic if rng.random() < right else int(rng.integers(0, 3))
            rows.append(f"x{i},{rater},topic,{'llm' if rater == JUDGE[0] else 'human'},{said}\n")
    ratings.write_text("item,rater,attribute,kind,value\n" + "".join(rows))
    assert cli("import", items, "--task", "panel", "--task-file", task, "--db", db)[0] == 0
    assert cli("import-ratings", ratings, "--task-file", task, "--db", db)[0] == 0
    out = tmp_path / "r.json"
    code, _, err = cli("report", "--db", db, "--task-file", task, "--format", "json", "--out", out)
    assert code == 0, err
    records = json.loads(out.read_text())["tasks"]["panel"]
    kappa = {r["evaluator"]: r for r in records if r["table"] == "reliability" and r["statistic"] == "reliability"}
    se = {
        r["evaluator"]: r["value"]
        for r in records
        if r["table"] == "reliability" and r["statistic"] == "reliability_se"
    }
    # the study does what it is for: some rater's κ + 1.96 SE is past 1
    assert any(kappa[name]["value"] + 1.96 * se[name] > 1 for name in se if se[name] is not None)
    for name, record in kappa.items():
        if record["ci_high"] is not None:
            assert record["ci_low"] <= record["value"] <= record["ci_high"] <= 1.0, (name, record)

"""A ``distribution`` jury has a distribution -- its members' stored scale distributions averaged -- so the calibration
table scores it like any judge with one. Checked against numpy on `export --what judgements`: the jury's distribution
of each item is the members' (each the mean of its passes) averaged and scaled to sum to 1; its Brier score is the
mean over (item, person) of the squared distance to the person's rating as a one-hot vector; its expected value is
the jury's value (table1's mean)."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from tests.support import copy_demo
from tui_rater.cli import main
from tui_rater.judge.tiny_gguf import write_tiny_gguf

TASK = "hanna"
POINTS = np.arange(1, 6)


def run(*args: object) -> int:
    return main([str(a) for a in args])


def jury_brier(folder: Path, db: Path, members: list[str], jury: str) -> pd.DataFrame:
    """Per question: the jury's Brier score and its mean expected value over the items, from the exports."""
    judgements, ratings_csv = folder / "j.jsonl", folder / "r.csv"
    assert run("export", "--what", "judgements", "--db", db, "--out", judgements) == 0
    assert run("export", "--what", "ratings", "--db", db, "--out", ratings_csv) == 0
    ratings = pd.read_csv(ratings_csv)
    people = ratings[(ratings["task"] == TASK) & (ratings["kind"] == "human")]
    per: dict[tuple[str, str], dict[str, list[np.ndarray]]] = {}
    for line in judgements.read_text().splitlines():
        row = json.loads(line)
        if row["judge"] in members and row.get("sample") == 0 and row.get("distribution"):
            p = np.array([row["distribution"].get(str(v), 0.0) for v in POINTS], dtype=float)
            per.setdefault((row["item"], row["attribute"]), {}).setdefault(row["judge"], []).append(p)
    found = []
    for (item, attribute), by in per.items():
        if sorted(by) != sorted(members):
            continue
        averaged = np.mean([np.mean(passes, axis=0) for passes in by.values()], axis=0)
        q = averaged / averaged.sum()
        theirs = people[(people["item"] == item) & (people["attribute"] == attribute)]["value"]
        for rating in theirs:
            found.append({"attribute": attribute, "item": item, "square": np.sum((q - (rating == POINTS)) ** 2)})
    frame = pd.DataFrame(found)
    return frame.groupby("attribute").agg(brier=("square", "mean"), n=("square", "size"))


def check(folder: Path, db: Path, members: list[str], jury: str) -> None:
    expected = jury_brier(folder, db, members, jury)
    out = folder / "report.json"
    assert run("report", "--db", db, "--task", TASK, "--format", "json", "--out", out) == 0
    records = pd.DataFrame(json.loads(out.read_text())["tasks"][TASK])
    got = records[
        (records["table"] == "calibration") & (records["evaluator"] == jury) & (records["statistic"] == "brier")
    ].set_index("attribute")
    assert len(expected) == 6 and sorted(got.index) == sorted(expected.index), got
    np.testing.assert_allclose(got.loc[expected.index, "value"], expected["brier"], rtol=1e-9)
    assert (got.loc[expected.index, "n"] == expected["n"]).all()
    assert all("distribution jury" in note for note in got["note"])


def test_a_distribution_jury_is_scored_in_the_calibration_table(tmp_path, tiny_gguf, demo_original):
    db = copy_demo(demo_original, tmp_path, "d.db")
    other = write_tiny_gguf(tmp_path / "other.gguf", seed=8)
    for name, model in (("m-tiny", tiny_gguf), ("m-other", other)):
        code = run(
            "judge", "--db", db, "--model", model, "--task", TASK, "--mode", "distribution", "--min-mass", "0",
            "--samples", "1", "--limit", 4, "--judge-name", name, "--as", "lead",
        )  # fmt: skip
        assert code in (0, 1)  # 1: not agreement-ready (random weights put little mass on the scale)
    judgements = tmp_path / "all.jsonl"
    assert run("export", "--what", "judgements", "--db", db, "--out", judgements) == 0
    members = sorted(
        {json.loads(line)["judge"] for line in judgements.read_text().splitlines() if '"distribution": {' in line}
    )
    assert len(members) == 2
    assert run("jury", "pair", "--members", ",".join(members), "--aggregate", "distribution", "--db", db) == 0
    check(tmp_path, db, members, "pair")

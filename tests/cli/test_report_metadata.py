"""A report file says itself what shaped its numbers (issue 30, item 4): which reference the humans' score is
(`--reference adjudicated`, and on how many item questions) and how many gold ratings were left out -- both went to
stderr only, and a file passed on lost them. JSON: the top-level ``metadata``; CSV: rows of table ``metadata``;
Markdown, HTML and text: a paragraph under the task's heading. Through the real CLI; the counts are recomputed here
from the study's tables."""

from __future__ import annotations

import csv
import html
import json
import sqlite3

import pytest

from tests.support import run_cli_process
from tui_rater.store.adjudication import Adjudication
from tui_rater.store.study import Study

TASK = "title-fluency"
PEOPLE = ("ann", "ben", "cat")


def _study(tmp_path):
    items = tmp_path / "items.csv"
    lines = ["id,title,gold_fluency"] + [f"t{i},Title {i}," for i in range(6)] + ["g0,Gold 0,2", "g1,Gold 1,4"]
    items.write_text("\n".join(lines) + "\n")
    db = tmp_path / "team.db"
    done = run_cli_process("import", items, "--task", TASK, "--db", db)
    assert done.returncode == 0, done.stderr
    ratings = tmp_path / "ratings.csv"
    with ratings.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "rater", "attribute", "value", "kind"])
        for k, item in enumerate([f"t{i}" for i in range(6)] + ["g0", "g1"]):
            for p, person in enumerate(PEOPLE):
                writer.writerow([item, person, "fluency", 1 + (k + p) % 5, "human"])
    done = run_cli_process("import-ratings", ratings, "--db", db)
    assert done.returncode == 0, done.stderr
    study = Study.open(db)
    keys = {item.id: item.key for item in study.items(TASK)}
    decisions = Adjudication(study, TASK, "lead")
    decisions.decide(keys["t0"], "fluency", 3)
    decisions.decide(keys["t1"], "fluency", 4)
    study.close()
    return db


def _left_out(db) -> tuple[int, int]:
    """(gold items with ratings, their ratings), counted here from the tables."""
    with sqlite3.connect(db) as conn:
        items, ratings = conn.execute(
            "SELECT count(DISTINCT r.item_key), count(*) FROM ratings r JOIN raters ra ON ra.id = r.rater_id "
            "WHERE ra.kind = 'human' AND r.item_key IN (SELECT item_key FROM gold)"
        ).fetchone()
    return items, ratings


def _report(db, out, *flags):
    done = run_cli_process("report", "--db", db, "--task", TASK, "--out", out, *flags)
    assert done.returncode == 0, done.stderr
    return out.read_text(encoding="utf-8"), done.stderr


@pytest.mark.parametrize("reference", ["adjudicated", "humans"])
def test_every_report_file_says_the_reference_and_the_gold_ratings_left_out(tmp_path, reference):
    db = _study(tmp_path)
    gold_items, gold_ratings = _left_out(db)
    assert (gold_items, gold_ratings) == (2, 6)
    flags = ("--reference", reference)
    gold = f"{gold_ratings} rating(s) of {gold_items} gold item(s) are left out of agreement and verdicts"
    named = f"(--reference {reference})"

    text, err = _report(db, tmp_path / "r.json", *flags)
    assert f"{gold_ratings} rating(s) of {gold_items} gold item(s) of {TASK} are left out" in err  # stderr, as before
    meta = json.loads(text)["metadata"]["tasks"][TASK]  # ... and so does the file
    assert meta["reference"] == reference
    assert meta["adjudicated_item_questions"] == (2 if reference == "adjudicated" else None)
    assert meta["gold_left_out"] == {"items": gold_items, "ratings": gold_ratings}
    assert any(gold in said for said in meta["said"]) and any(named in said for said in meta["said"])

    for suffix in ("md", "txt"):
        text, _ = _report(db, tmp_path / f"r.{suffix}", *flags)
        head = " ".join(text[: text.index("Table 1")].split())  # above the first table, once
        assert gold in head and head.count(named) == 1, text[:600]
    text, _ = _report(db, tmp_path / "r.html", *flags)
    paragraph = html.unescape(text.split("<p class=shaped>")[1].split("</p>")[0])
    assert gold in paragraph and named in paragraph
    if reference == "adjudicated":
        assert "2 item question(s) adjudicated" in paragraph

    text, _ = _report(db, tmp_path / "r.csv", *flags)
    rows = [row for row in csv.DictReader(text.splitlines()) if row["table"] == "metadata"]
    by = {row["statistic"]: row for row in rows}
    assert float(by["gold_ratings_left_out"]["value"]) == gold_ratings and gold in by["gold_ratings_left_out"]["note"]
    assert named in by["reference"]["note"]
    assert by["reference"]["value"] == ("2.0" if reference == "adjudicated" else "")

"""Juries a hostile user makes (through the real CLI): a jury that can have no value -- its members rated different
items -- is named in the report with the reason, not left out of every table as if it had been lost."""

from __future__ import annotations

import json
from pathlib import Path

from tests.support import PANEL_TASK, digest

TASK = PANEL_TASK


def test_a_jury_whose_members_rated_different_items_is_named_with_the_reason(tmp_path: Path, cli) -> None:
    task, items, ratings, db = tmp_path / "t.toml", tmp_path / "items.csv", tmp_path / "r.csv", tmp_path / "s.db"
    task.write_text(TASK)
    items.write_text("id,system,text\n" + "".join(f"x{i},{'a' if i % 2 else 'b'},Text {i}\n" for i in range(40)))
    rows = [f"x{i},{p},quality,human,{1 + (i + k) % 5}\n" for i in range(40) for k, p in enumerate(("h1", "h2", "h3"))]
    rows += [f"x{i},{'j-a' if i < 20 else 'j-b'},quality,llm,{1 + i % 5}\n" for i in range(40)]  # no item in common
    ratings.write_text("item,rater,attribute,kind,value\n" + "".join(rows))
    assert cli("import", items, "--task", "panel", "--task-file", task, "--db", db)[0] == 0
    assert cli("import-ratings", ratings, "--task-file", task, "--db", db)[0] == 0
    assert cli("jury", "split", "--members", "j-a,j-b", "--task-file", task, "--db", db)[0] == 0
    out = tmp_path / "r.json"
    code, _, err = cli("report", "--db", db, "--task-file", task, "--format", "json", "--out", out)
    assert code == 0, err
    records = json.loads(out.read_text())["tasks"]["panel"]
    named = [r for r in records if r["evaluator"] == "split"]
    assert [(r["table"], r["statistic"], r["value"]) for r in named] == [("jury", "better_than_best_member", None)]
    assert "no item has a value from every member" in named[0]["note"]
    assert "rated different items" in named[0]["note"]
    code, out_text, _ = cli("report", "--db", db, "--task-file", task)
    assert code == 0 and "split" in out_text


def test_a_very_long_jury_name_is_refused_in_one_short_line(tmp_path: Path, cli) -> None:
    task, items, db = tmp_path / "t.toml", tmp_path / "items.csv", tmp_path / "s.db"
    task.write_text(TASK)
    items.write_text("id,system,text\nx0,a,Text\n")
    assert cli("import", items, "--task", "panel", "--task-file", task, "--db", db)[0] == 0
    before = digest(db)
    code, out, err = cli("jury", "x" * 5000, "--members", "j-a,j-b", "--task-file", task, "--db", db)
    assert code == 2 and out == ""
    assert "5000 characters" in err and "at most 40" in err
    assert len(err) < 300, len(err)
    assert digest(db) == before

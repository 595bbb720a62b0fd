"""`adjudicate --list / --format`, `report --reference adjudicated` and `export --what notes`, through the real CLI."""

from __future__ import annotations

import csv
import json
import sqlite3

import polars as pl
import pytest

from tests.support import digest, run_cli_process, story_study
from tui_rater.domain.errors import UserError
from tui_rater.store.adjudication import Adjudication
from tui_rater.store.study import Study

STORIES = [
    {"id": f"s{i}", "system": "human" if i % 2 else "gpt2", "prompt": f"Prompt {i}.", "story": f"Story {i}."}
    for i in range(8)
]
# grammaticality per item: alice, bob, carol, and the judge's three samples
GRAMMAR = {
    "s0": (1, 5, 3, (2, 2, 3)),  # range 4
    "s1": (4, 3, 4, (4, 4, 4)),  # range 1
    "s2": (2, 2, 2, (1, 1, 1)),  # people agree; the judge does not
    "s3": (5, 5, 3, (5, 4, 5)),  # range 2
    "s4": (3, 3, 3, (3, 3, 3)),
    "s5": (1, 2, 1, (2, 1, 2)),  # range 1
    "s6": (4, 4, 4, (5, 5, 5)),
    "s7": (2, 3, 2, (3, 3, 2)),  # range 1
}
COHESION = {f"s{i}": (1 + i % 5, 1 + (i + 1) % 5, 1 + (i + 2) % 5, (3, 3, 3)) for i in range(8)}
HUMANS = ("alice", "bob", "carol")


def _study(tmp_path):
    db = story_study(tmp_path / "study.db", STORIES)
    rows = []
    for attribute, table in (("grammaticality", GRAMMAR), ("cohesiveness", COHESION)):
        for item, (*people, judge) in table.items():
            rows += [(item, who, attribute, value, "human", 0) for who, value in zip(HUMANS, people)]
            rows += [(item, "j1", attribute, value, "llm", sample) for sample, value in enumerate(judge)]
    ratings = tmp_path / "ratings.csv"
    with ratings.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["item", "rater", "attribute", "value", "kind", "sample"])
        writer.writerows(rows)
    done = run_cli_process("import-ratings", ratings, "--db", db)
    assert done.returncode == 0, done.stderr
    return db


def _queue(db, *flags):
    done = run_cli_process("adjudicate", "--db", db, "--task", "story", "--format", "json", *flags)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_the_queue_lists_disagreements_beyond_the_margin_most_first(tmp_path):
    db = _study(tmp_path)
    queue = _queue(db)
    # every item whose people differ on some question; s0 (range 4 of 4) first
    assert queue[0]["item"] == "s0" and queue[0]["disagreement"] == 1.0
    first = {q["attribute"]: q for q in queue[0]["questions"]}
    assert first["grammaticality"]["spread"] == 4
    assert [(r["rater"], r["value"]) for r in first["grammaticality"]["ratings"]] == [
        ("alice", 1.0),
        ("bob", 5.0),
        ("carol", 3.0),
    ]
    shares = [entry["disagreement"] for entry in queue]
    assert shares == sorted(shares, reverse=True)
    # grammaticality alone (cohesiveness differs on every item)
    assert set(_grammar(_queue(db))) == {"s0", "s1", "s3", "s5", "s7"}
    assert set(_grammar(_queue(db, "--margin", "1"))) == {"s0", "s3"}  # ranges above 1 only
    for entry in _queue(db, "--margin", "1"):
        assert all(q["spread"] > 1 for q in entry["questions"])
    # the judges as voices: each judge one voice, its samples' mean; s2 and s6, where only the judge differs, come in
    with_judges = _grammar(_queue(db, "--with-judges"))
    assert set(with_judges) == {"s0", "s1", "s2", "s3", "s5", "s6", "s7"}
    assert [(r["rater"], r["value"]) for r in with_judges["s0"]["ratings"]][-1] == ("j1", pytest.approx(7 / 3))
    assert set(_grammar(_queue(db, "--margin", "1", "--with-judges"))) == {"s0", "s3"}


def _grammar(queue):
    return {e["item"]: q for e in queue for q in e["questions"] if q["attribute"] == "grammaticality"}


def test_a_choice_disagrees_on_any_two_answers_whatever_the_margin(tmp_path):
    db = tmp_path / "pairs.db"
    items = tmp_path / "pairs.csv"
    items.write_text("id,prompt,story_a,story_b\np1,P,A.,B.\np2,P,A.,B.\n")
    assert run_cli_process("import", items, "--task", "story-pairwise", "--db", db).returncode == 0
    ratings = tmp_path / "r.csv"
    ratings.write_text(
        "item,rater,attribute,value\np1,alice,preference,0\np1,bob,preference,2\np2,alice,preference,1\n"
        "p2,bob,preference,1\n"
    )
    assert run_cli_process("import-ratings", ratings, "--db", db).returncode == 0
    done = run_cli_process("adjudicate", "--db", db, "--task", "story-pairwise", "--format", "json", "--margin", "5")
    queue = json.loads(done.stdout)
    assert [e["item"] for e in queue] == ["p1"]
    assert [r["shown"] for r in queue[0]["questions"][0]["ratings"]] == ["A", "C"]


@pytest.mark.parametrize(
    ("flags", "message", "code"),
    [
        (("--task", "nope", "--list"), "unknown task 'nope'", 2),
        (("--task", "story", "--list", "--margin", "-1"), "--margin is how far apart", 2),
        (("--task", "story", "--margin", "nan"), "--margin is how far apart", 2),
        (("--task", "story", "--list", "--margin", "4"), "nothing to adjudicate", 0),
        (("--task", "story", "--margin", "4", "--adjudicator", "lead"), "nothing to adjudicate", 0),
    ],
)
def test_bad_input_is_one_sentence_and_the_file_is_untouched(tmp_path, flags, message, code):
    db = _study(tmp_path)
    before = digest(db)
    done = run_cli_process("adjudicate", "--db", db, *flags)
    assert done.returncode == code
    said = done.stderr if code else done.stdout
    assert message in said and said.count("\n") == 1 and "Traceback" not in done.stderr
    assert digest(db) == before


def _report(db, *flags):
    done = run_cli_process("report", "--db", db, "--task", "story", "--format", "json", *flags)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["tasks"]["story"], done.stderr


def _keyed(records):
    return {
        (r["table"], r["attribute"], r["system"], r["evaluator"], r["evaluator_b"], r["statistic"]): r for r in records
    }


def test_the_adjudicated_reference_differs_exactly_where_decisions_exist(tmp_path):
    db = _study(tmp_path)
    before, _ = _report(db)
    study = Study.open(db)
    keys = {item.id: item.key for item in study.items("story")}
    decisions = Adjudication(study, "story", "lead")
    decisions.decide(keys["s0"], "grammaticality", 5)  # the humans' mean was 3
    decisions.decide(keys["s3"], "grammaticality", 1)  # 4.33
    study.close()

    default, _ = _report(db)
    assert default == before  # a decision is never a rater: the default report does not move
    adjudicated, said = _report(db, "--reference", "adjudicated")
    assert "the adjudicated value on 2 item question(s)" in said
    default, adjudicated = _keyed(default), _keyed(adjudicated)
    assert default.keys() == adjudicated.keys()
    changed = {key for key in default if default[key] != adjudicated[key]}
    assert changed, "the judges' agreement with the humans' scores must change"
    assert {key[1] for key in changed} == {"grammaticality"}  # cohesiveness has no decision
    # only comparisons with the humans' per-item score change: never their ratings' own statistics
    assert all(key[0] not in ("table1", "pairs", "table6", "table12", "readings") for key in changed)
    assert ("table2", "grammaticality", "all", "humans", "j1", "kendall_tau") in changed
    # the humans' mean per item with the two decisions in place, against the judge's: recomputed here
    human = {item: sum(v[:3]) / 3 for item, v in GRAMMAR.items()} | {"s0": 5.0, "s3": 1.0}
    judge = {item: sum(v[3]) / 3 for item, v in GRAMMAR.items()}
    from scipy.stats import kendalltau

    items = sorted(GRAMMAR)
    expected = kendalltau([human[i] for i in items], [judge[i] for i in items]).statistic
    assert adjudicated[("table2", "grammaticality", "all", "humans", "j1", "kendall_tau")]["value"] == pytest.approx(
        expected
    )


def test_export_notes_field_by_field(tmp_path):
    db = _study(tmp_path)
    study = Study.open(db)
    keys = {item.id: item.key for item in study.items("story")}
    alice = study.human("alice")
    flag = study.add_note(keys["s1"], alice.id, "flag")
    skip = study.add_note(keys["s2"], alice.id, "skip")
    first = study.add_note(keys["s1"], alice.id, "comment", "typo in line 2")
    conn = study._db.conn
    conn.execute("UPDATE notes SET retracted_at = '2026-11-25T06:00:00.000+00:00' WHERE id IN (?, ?)", [flag, first])
    edit = study.add_note(keys["s1"], alice.id, "comment", 'two typos, "quoted", tab\there', supersedes=first)
    review = study.add_note(
        keys["s3"], alice.id, "review", json.dumps({"verdict": "disagree", "comment": "judge too kind"}), "relevance"
    )
    decided = Adjudication(study, "story", "lead").decide(keys["s0"], "grammaticality", 4)
    study.close()
    for suffix in ("csv", "jsonl", "parquet"):
        out = tmp_path / f"notes.{suffix}"
        done = run_cli_process("export", "--what", "notes", "--db", db, "--out", out)
        assert done.returncode == 0, done.stderr
        assert "wrote 6 rows of notes" in done.stdout
        frame = {"csv": pl.read_csv, "jsonl": pl.read_ndjson, "parquet": pl.read_parquet}[suffix](out)
        rows = {(row["kind"], row["note_id"] or row["rating_id"]): row for row in frame.to_dicts()}
        assert set(rows) == {
            ("flag", flag),
            ("skip", skip),
            ("comment", first),
            ("comment", edit),
            ("review", review),
            ("adjudication", decided),
        }
        empty = {"csv": None}.get(suffix, "")  # a CSV reads an empty text back as null
        assert {k: rows[("flag", flag)][k] for k in ("item", "rater", "rater_kind", "in_force", "retracted_at")} == {
            "item": "s1",
            "rater": "alice",
            "rater_kind": "human",
            "in_force": False,
            "retracted_at": "2026-11-25T06:00:00.000+00:00",
        }
        assert rows[("skip", skip)]["in_force"] is True and rows[("skip", skip)]["item"] == "s2"
        assert rows[("comment", first)]["text"] == "typo in line 2" and rows[("comment", first)]["in_force"] is False
        assert rows[("comment", edit)]["text"] == 'two typos, "quoted", tab\there'
        assert rows[("comment", edit)]["supersedes"] == first and rows[("comment", edit)]["in_force"] is True
        assert (rows[("review", review)]["verdict"], rows[("review", review)]["text"]) == ("disagree", "judge too kind")
        assert rows[("review", review)]["attribute"] == "relevance"
        adjudication = rows[("adjudication", decided)]
        assert (adjudication["rater"], adjudication["rater_kind"], adjudication["value"]) == (
            "lead (adjudicator)",
            "adjudicator",
            4.0,
        )
        assert (adjudication["item"], adjudication["attribute"], adjudication["in_force"]) == (
            "s0",
            "grammaticality",
            True,
        )
        assert rows[("flag", flag)]["text"] in (empty, "", None)
        for row in rows.values():
            assert row["task"] == "story" and row["created_at"].startswith("20")
    conn = sqlite3.connect(db)
    assert (
        conn.execute(
            "SELECT count(*) FROM ratings r JOIN raters ra ON ra.id = r.rater_id WHERE ra.kind = 'human'"
        ).fetchone()[0]
        == 48
    )  # the decisions left the ratings as they were


def test_the_report_lists_flagged_items_and_comments_in_force(tmp_path):
    db = _study(tmp_path)
    study = Study.open(db)
    keys = {item.id: item.key for item in study.items("story")}
    alice, bob = study.human("alice"), study.human("bob")
    study.add_note(keys["s2"], alice.id, "flag")
    taken_back = study.add_note(keys["s3"], bob.id, "flag")
    old = study.add_note(keys["s4"], bob.id, "comment", "first thought")
    conn = study._db.conn
    conn.execute("UPDATE notes SET retracted_at = '2026-11-25T06:00:00' WHERE id IN (?, ?)", [taken_back, old])
    study.add_note(keys["s4"], bob.id, "comment", "[red]not markup[/red] | a pipe", supersedes=old)
    study.add_note(keys["s5"], alice.id, "skip")
    study.close()
    records, _ = _report(db)
    notes = [(r["statistic"], r["evaluator_b"], r["evaluator"], r["note"]) for r in records if r["table"] == "notes"]
    assert notes == [("flag", "s2", "alice", ""), ("comment", "s4", "bob", "[red]not markup[/red] | a pipe")]
    done = run_cli_process("report", "--db", db, "--task", "story", "--format", "markdown")
    assert "## Notes — flagged items and comments in force" in done.stdout
    assert "| s4 | gpt2 | bob | comment |  | [red]not markup[/red] \\| a pipe |" in done.stdout
    assert "first thought" not in done.stdout and "| s3 |" not in done.stdout


def test_an_adjudicator_is_never_a_person_nor_a_person_an_adjudicator(tmp_path):
    db = _study(tmp_path)
    study = Study.open(db)
    lead = Adjudication(study, "story", "alice").rater  # alice rates, and also adjudicates: two raters
    assert (lead.name, lead.kind) == ("alice (adjudicator)", "adjudicator")
    assert study.human("alice").kind == "human"
    with pytest.raises(UserError, match="already exists, of kind 'adjudicator'"):
        study.human("alice (adjudicator)")
    study.close()
    done = run_cli_process("annotate", "--db", db, "--task", "story", "--annotator", "alice (adjudicator)")
    assert done.returncode == 2 and "of kind 'adjudicator', not 'human'" in done.stderr

"""Team studies through the real CLI (a subprocess each): `assign` plans, gold items, `progress`, `roles`.

Every number `progress` prints is computed again here from the ratings and notes tables, independently."""

from __future__ import annotations

import json
import random
import sqlite3
import statistics
from pathlib import Path

import pytest

from tests.stats.ratings import insert
from tests.support import digest, run_cli_process
from tui_rater.store.adjudication import Adjudication
from tui_rater.store.study import Study

TASK = "title-fluency"


def cli(*args):
    proc = run_cli_process(*args)
    return proc.returncode, proc.stdout, proc.stderr


def items_file(path: Path, regular: int = 60, gold: int = 4, gold_values=None) -> Path:
    lines = ["id,title,gold_fluency"]
    lines += [f"t{i},Title number {i}," for i in range(regular)]
    values = gold_values or [1 + i % 5 for i in range(gold)]
    lines += [f"g{i},Gold title {i},{v}" for i, v in enumerate(values)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture
def study_file(tmp_path):
    db = tmp_path / "team.db"
    code, _out, err = cli("import", items_file(tmp_path / "items.csv"), "--task", TASK, "--db", db)
    assert code == 0, err
    return db


def rows(db, sql, *params):
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


def test_a_three_person_plan_with_k2_a_three_person_subset_and_five_percent_gold(study_file):
    code, out, err = cli(
        "assign", "--db", study_file, "--task", TASK, "--annotators", "alice,bob,carol",
        "--per-item", "2", "--overlap", "0.2:3", "--gold-rate", "0.05", "--seed", "7",
    )  # fmt: skip
    assert code == 0, err
    text = " ".join(out.split())
    assert "agreement between people (Krippendorff's alpha, table 1): yes, on 60 items rated by 2 or more" in text
    # (the report's own rule: 3 people with 30 or more items another person rated too; here 44 each)
    assert "the alt-test verdict (can a judge replace the people?): yes -- 3 people will each have 44 or more" in text
    per_item = dict(rows(study_file, "SELECT item_key, count(*) FROM assignments WHERE gold = 0 GROUP BY item_key"))
    gold = {k for (k,) in rows(study_file, "SELECT item_key FROM gold")}
    regular = {k for (k,) in rows(study_file, "SELECT key FROM items")} - gold
    assert len(gold) == 4 and set(per_item) == regular  # every item planned, no gold item among them
    assert sorted(per_item.values()).count(3) == 12 and sorted(per_item.values()).count(2) == 48
    loads = dict(rows(study_file, "SELECT rater_id, count(*) FROM assignments WHERE gold = 0 GROUP BY rater_id"))
    assert max(loads.values()) - min(loads.values()) <= 1  # 132 ratings over 3 people: 44 each
    golds = dict(rows(study_file, "SELECT rater_id, count(*) FROM assignments WHERE gold = 1 GROUP BY rater_id"))
    for rater, count in golds.items():  # gold / (regular + gold) = 5 %
        assert count == round(0.05 * loads[rater] / 0.95) == 2
    ((settings,),) = rows(study_file, "SELECT settings FROM team_plans WHERE task = ?", TASK)
    assert json.loads(settings)["seed"] == 7 and json.loads(settings)["overlap_size"] == 3

    # the same draw from the same seed: the plan is reproducible
    again = study_file.parent / "again.db"
    cli("import", study_file.parent / "items.csv", "--task", TASK, "--db", again)
    cli("assign", "--db", again, "--task", TASK, "--annotators", "alice,bob,carol", "--per-item", "2",
        "--overlap", "0.2:3", "--gold-rate", "0.05", "--seed", "7")  # fmt: skip
    plan_of = "SELECT ra.name, i.id, a.gold FROM assignments a JOIN raters ra ON ra.id = a.rater_id " \
        "JOIN items i ON i.key = a.item_key ORDER BY 1, 2"  # fmt: skip
    assert rows(again, plan_of) == rows(study_file, plan_of)

    # a second plan is refused, the stored one stays
    before = digest(study_file)
    code, _out, err = cli("assign", "--db", study_file, "--task", TASK, "--annotators", "x,y", "--per-item", "1")
    assert code == 2 and "already has a plan" in err and err.count("\n") == 1
    assert digest(study_file) == before


def test_dry_run_stores_nothing_and_says_what_the_design_allows(study_file):
    before = digest(study_file)
    code, out, err = cli("assign", "--db", study_file, "--task", TASK, "--annotators", "a,b", "--dry-run")
    assert code == 0, err
    text = " ".join(out.split())
    assert "agreement between people: no" in text and "the alt-test verdict: no -- it needs at least 3 people" in text
    assert "dry run: nothing stored" in text
    assert digest(study_file) == before


BAD = {
    "K larger than the team": (["--annotators", "a,b", "--per-item", "3"], "--per-item 3 needs at least 3 annotators"),
    "unknown task": (["--annotators", "a,b"], "unknown task 'nope'"),
    "a control character in a name": (["--annotators", "a,b\x07"], "is not a usable annotator name"),
    "a name twice": (["--annotators", "a,b,a"], "annotator 'a' is named twice"),
    "overlap share out of range": (["--annotators", "a,b,c", "--overlap", "1.5:3"], "share of items must be in (0, 1]"),
    "overlap larger than the team": (["--annotators", "a,b", "--overlap", "0.2:3"], "at most the team (2), not 3"),
    "gold rate out of range": (["--annotators", "a,b", "--gold-rate", "0.9"], "--gold-rate must be between 0 and 0.5"),
    "no team": (["--per-item", "1"], "name the team"),
    "gold in a dynamic plan without a team": (["--dynamic", "--gold-rate", "0.05"], "name the team (--annotators)"),
}


@pytest.mark.parametrize("name", BAD)
def test_bad_plans_are_one_sentence_and_leave_the_study_unchanged(study_file, name):
    flags, sentence = BAD[name]
    task = "nope" if name == "unknown task" else TASK
    before = digest(study_file)
    code, _out, err = cli("assign", "--db", study_file, "--task", task, *flags)
    assert code == 2 and err.startswith("tui-rater: error: ") and err.count("\n") == 1, err
    assert sentence in err
    assert digest(study_file) == before


@pytest.mark.parametrize(
    ("lease", "sentence"),
    [
        ("nan", "a lease must be a finite number of seconds, not nan"),
        ("inf", "a lease must be a finite number of seconds, not inf"),
        ("-inf", "a lease must be a finite number of seconds, not -inf"),
        ("-1", "a lease must last more than 0 and at most 86400 seconds (a day), not -1"),
        ("0", "a lease must last more than 0 and at most 86400 seconds (a day), not 0"),
        ("1e300", "a lease must last more than 0 and at most 86400 seconds (a day), not 1e+300"),
    ],
)
@pytest.mark.parametrize("dry_run", [False, True])
def test_an_unusable_lease_is_one_sentence_and_leaves_the_study_unchanged(study_file, lease, sentence, dry_run):
    """`--lease nan` exited 0 and stored a NaN lease: no annotator could save after it."""
    before = digest(study_file)
    code, out, err = cli(
        "assign", "--db", study_file, "--task", TASK, "--annotators", "a,b", "--dynamic", f"--lease={lease}",
        *(["--dry-run"] if dry_run else []),
    )  # fmt: skip
    assert code == 2 and err == f"tui-rater: error: --lease: {sentence}\n", err
    assert out == "" and digest(study_file) == before
    assert rows(study_file, "SELECT count(*) FROM team_plans") == [(0,)]


def test_a_judge_name_is_not_an_annotator_name(study_file):
    study = Study.open(study_file)
    study.judge("llama", {"m": 1})
    study.close()
    before = digest(study_file)
    code, _out, err = cli("assign", "--db", study_file, "--task", TASK, "--annotators", "a,llama")
    assert code == 2 and "'llama' is the name of an LLM judge" in err and digest(study_file) == before


def test_gold_answers_off_the_scale_are_one_sentence_and_nothing_is_imported(tmp_path):
    db = tmp_path / "g.db"
    assert cli("import", items_file(tmp_path / "ok.csv", 3, 1), "--task", TASK, "--db", db)[0] == 0
    before = digest(db)
    bad = items_file(tmp_path / "bad.csv", 3, 2, gold_values=[2, 9])
    code, _out, err = cli("import", bad, "--task", TASK, "--db", db)
    assert code == 2 and err.count("\n") == 1
    assert "row 5, column 'gold_fluency': 9 is off the scale" in err
    assert digest(db) == before


def test_a_person_outside_the_plan_is_refused_by_annotate(study_file):
    assert cli("assign", "--db", study_file, "--task", TASK, "--annotators", "alice,bob")[0] == 0
    before = digest(study_file)
    code, _out, err = cli("annotate", "--db", study_file, "--task", TASK, "--annotator", "mallory")
    assert code == 2 and err.count("\n") == 1
    assert "'mallory' is not in the plan for 'title-fluency' (its annotators: alice, bob)" in err
    assert digest(study_file) == before
    assert not rows(study_file, "SELECT 1 FROM raters WHERE name = 'mallory'")


def test_an_annotator_added_later_takes_only_unstarted_items(study_file):
    assert (
        cli("assign", "--db", study_file, "--task", TASK, "--annotators", "alice,bob,carol", "--per-item", "2")[0] == 0
    )
    study = Study.open(study_file)
    alice = study.human("alice")
    theirs = [k for (k,) in rows(study_file, "SELECT item_key FROM assignments WHERE rater_id = ?", alice.id)]
    for key in theirs[:15]:  # alice has begun 15 of her items
        study.add_rating(key, "fluency", alice.id, 3.0, parse_status="human")
    study.close()
    before = rows(study_file, "SELECT rater_id, item_key FROM assignments")
    code, out, err = cli("assign", "--db", study_file, "--task", TASK, "--add", "dave")
    assert code == 0, err and "dave joins the plan" in out
    after = rows(study_file, "SELECT rater_id, item_key FROM assignments")
    dave = rows(study_file, "SELECT id FROM raters WHERE name = 'dave'")[0][0]
    assert len(after) == len(before)  # moved, not added: each item still has its K people
    assert all((alice.id, key) in after for key in theirs[:15])  # begun work never moves
    per_rater = {r: sum(1 for x, _ in after if x == r) for r, _ in after}
    assert per_rater[dave] == len(before) // 4  # 120 / 4
    per_item: dict[int, set[int]] = {}
    for rater, key in after:
        assert rater not in per_item.setdefault(key, set())
        per_item[key].add(rater)
    ((settings,),) = rows(study_file, "SELECT settings FROM team_plans")
    assert json.loads(settings)["annotators"] == ["alice", "bob", "carol", "dave"]


def test_roles_refuse_others_study_wide_actions(study_file):
    assert cli("roles", "--db", study_file, "--leads", "lena", "--as", "lena")[0] == 0
    before = digest(study_file)
    code, _out, err = cli("assign", "--db", study_file, "--task", TASK, "--annotators", "a,b", "--as", "bob")
    assert code == 2 and err.count("\n") == 1
    assert "only the study's leads (lena) may assign annotators; 'bob' is not one" in err
    code, _out, err = cli("queue", "--db", study_file, "--cancel", "--as", "bob")
    assert code == 2 and "only the study's leads (lena) may cancel the judges' queue" in err
    code, _out, err = cli("roles", "--db", study_file, "--leads", "bob", "--as", "bob")
    assert code == 2 and "may change the leads" in err
    assert digest(study_file) == before
    code, _out, err = cli("assign", "--db", study_file, "--task", TASK, "--annotators", "a,b", "--as", "lena")
    assert code == 0, err
    code, out, _err = cli("roles", "--db", study_file)
    assert out.strip() == "leads: lena"


# --- progress ------------------------------------------------------------------------------------


def rated_study(tmp_path) -> Path:
    """alice, bob, carol on a K=2 plan with gold; a judge; each rates part of their stream, with times,
    skips and flags; carol rates fast and always 3 (straight-lining) and gets the gold wrong."""
    db = tmp_path / "p.db"
    assert cli("import", items_file(tmp_path / "i.csv", 40, 6), "--task", TASK, "--db", db)[0] == 0
    code, _out, err = cli(
        "assign", "--db", db, "--task", TASK, "--annotators", "alice,bob,carol", "--per-item", "2",
        "--gold-rate", "0.1",
    )  # fmt: skip
    assert code == 0, err
    rng = random.Random(3)
    study = Study.open(db)
    judge = study.judge("judge-x", {"m": "x"})
    gold = {k: v for k, v in rows(db, "SELECT item_key, value FROM gold")}
    for item in study.items(TASK):
        for sample in range(2):
            study.add_rating(item.key, "fluency", judge.id, float(rng.randint(1, 5)), sample=sample)
    for name, share in (("alice", 0.8), ("bob", 0.5), ("carol", 0.9)):
        rater = study.human(name)
        mine = [
            k for (k,) in rows(db, "SELECT item_key FROM assignments WHERE rater_id = ? ORDER BY gold DESC", rater.id)
        ]  # their gold items first: each answers all of them
        for i, key in enumerate(mine[: int(len(mine) * share)]):
            if name == "carol":
                value, seconds = 3.0, 0.5
            elif key in gold:
                value, seconds = gold[key], 6.0
            else:
                value, seconds = float(rng.randint(1, 5)), rng.uniform(4, 12)
            if i == 2:  # a changed mind: the later rating is in force
                study.add_rating(key, "fluency", rater.id, 1.0, parse_status="human", seconds=1.0)
            study.add_rating(key, "fluency", rater.id, value, parse_status="human", seconds=seconds)
        if name == "bob":  # bob saw 4 of his items again, blind (annotate --retest)
            firsts = rows(
                db,
                "SELECT max(id), item_key FROM ratings WHERE rater_id = ? AND item_key NOT IN "
                "(SELECT item_key FROM gold) GROUP BY item_key LIMIT 4",
                rater.id,
            )
            for first, key in firsts:
                study.add_rating(key, "fluency", rater.id, float(rng.randint(1, 5)), parse_status="human",
                                 seconds=3.0, retest_of=first)  # fmt: skip
        study.add_note(mine[-1], rater.id, "skip")
        study.add_note(mine[-2], rater.id, "flag")
        study.add_note(mine[-2], rater.id, "flag")  # twice: one flagged item
    study.close()
    return db


def independent(db: Path, name: str) -> dict:
    """Progress figures for one annotator, straight from the tables."""
    (rid,) = rows(db, "SELECT id FROM raters WHERE name = ?", name)[0]
    ratings = rows(
        db,
        "SELECT id, item_key, value, seconds, created_at FROM ratings WHERE rater_id = ? AND retracted = 0 "
        "AND retest_of IS NULL ORDER BY id",
        rid,
    )
    first_value = {i: v for i, _k, v, _s, _t in ratings}
    retests = rows(db, "SELECT retest_of, value FROM ratings WHERE rater_id = ? AND retest_of IS NOT NULL", rid)
    latest = {}
    for _id, key, value, _s, _t in ratings:
        latest[key] = value
    assigned = {k for (k,) in rows(db, "SELECT item_key FROM assignments WHERE rater_id = ?", rid)}
    skipped = {k for (k,) in rows(db, "SELECT item_key FROM notes WHERE rater_id = ? AND kind = 'skip'", rid)}
    in_force_flags = "SELECT item_key FROM notes WHERE rater_id = ? AND kind = 'flag' AND retracted_at IS NULL"
    flagged = {k for (k,) in rows(db, in_force_flags, rid)}
    per_item_seconds: dict[int, float] = {}
    for _id, key, _v, seconds, _t in ratings:
        per_item_seconds[key] = per_item_seconds.get(key, 0.0) + seconds
    gold = dict(rows(db, "SELECT item_key, value FROM gold"))
    gold_answered = [key for key in latest if key in gold]
    people: dict[int, list[float]] = {}
    for key, value, who in rows(
        db,
        "SELECT r.item_key, r.value, r.rater_id FROM ratings r JOIN raters ra ON ra.id = r.rater_id "
        "WHERE ra.kind = 'human' AND r.retracted = 0 AND r.retest_of IS NULL ORDER BY r.id",
    ):
        if who != rid:
            people.setdefault((key, who), []).append(value)
    others: dict[int, list[float]] = {}
    for (key, _who), values in people.items():
        others.setdefault(key, []).append(values[-1])  # each other person's latest
    judge: dict[int, list[float]] = {}
    for key, value in rows(
        db, "SELECT r.item_key, r.value FROM ratings r JOIN raters ra ON ra.id = r.rater_id WHERE ra.kind = 'llm'"
    ):
        judge.setdefault(key, []).append(value)
    shared = [k for k in latest if k not in gold and k in others]
    notes_times = rows(db, "SELECT max(created_at) FROM notes WHERE rater_id = ?", rid)[0][0]
    return {
        "assigned": len(assigned),
        "done": len(latest),
        "remaining": len(assigned - set(latest) - skipped),
        "skipped": len(skipped),
        "flagged": len(flagged),
        "median_seconds": statistics.median(per_item_seconds[k] for k in latest),
        "last_activity": max(max(t for *_x, t in ratings), notes_times),
        "gold_answered": len(gold_answered),
        "gold_accuracy": sum(latest[k] == gold[k] for k in gold_answered) / len(gold_answered),
        "gap_people": statistics.fmean(abs(latest[k] - statistics.fmean(others[k])) for k in shared),
        "shared_people": len(shared),
        "retested": len(retests),
        "retest_gap": statistics.fmean(abs(v - first_value[f]) for f, v in retests) if retests else None,
        "gap_judges": statistics.fmean(abs(latest[k] - statistics.fmean(judge[k])) for k in latest if k not in gold),
        "shared_judges": sum(1 for k in latest if k not in gold and k in judge),
    }


def test_every_progress_number_matches_the_ratings_table(tmp_path):
    db = rated_study(tmp_path)
    code, out, err = cli("progress", "--db", db, "--task", TASK, "--format", "json")
    assert code == 0, err
    (task,) = json.loads(out)
    assert task["items"] == 40 and task["gold_items"] == 6 and task["mode"] == "fixed"
    shown = {row["annotator"]: row for row in task["annotators"]}
    assert list(shown) == ["alice", "bob", "carol"]
    for name in shown:
        expected = independent(db, name)
        for field, value in expected.items():
            assert shown[name][field] == pytest.approx(value), (name, field)
    # the team's share: assigned (person, item) pairs done, gold aside
    pairs = rows(db, "SELECT a.rater_id, a.item_key FROM assignments a WHERE a.gold = 0")
    done = {(r, k) for r, k in rows(db, "SELECT DISTINCT rater_id, item_key FROM ratings WHERE retest_of IS NULL")}
    assert task["team_share"] == pytest.approx(sum(p in done for p in pairs) / len(pairs))
    assert shown["bob"]["retested"] == 4 and shown["alice"]["retest_gap"] is None
    carol = shown["carol"]["marks"]
    assert any(m.startswith("gold ") and "right" in m for m in carol)
    assert any(m.startswith("fast: 0.5 s per item") for m in carol)
    assert any(m.startswith("same answer 100%") for m in carol)
    assert shown["alice"]["marks"] == [] and shown["bob"]["marks"] == []

    code, out, err = cli("progress", "--db", db)
    assert code == 0, err
    table = " ".join(out.split())
    assert "! carol: same answer 100%" in table and "team" in table
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 80


def test_the_report_leaves_gold_ratings_out_and_says_how_many(tmp_path):
    db = rated_study(tmp_path)
    gold_ratings = rows(db, "SELECT count(*), count(DISTINCT item_key) FROM ratings WHERE item_key IN "
                            "(SELECT item_key FROM gold) AND retracted = 0")[0]  # fmt: skip
    code, out, err = cli("report", "--db", db, "--task", TASK, "--format", "json")
    assert code == 0, err
    assert f"note: {gold_ratings[0]} rating(s) of {gold_ratings[1]} gold item(s) of {TASK} are left out" in err
    # the same study without any gold rating gives the same records: the gold ratings changed nothing
    plain = tmp_path / "plain.db"
    with sqlite3.connect(db) as source, sqlite3.connect(plain) as copy:
        source.backup(copy)  # with what the write-ahead log holds
    with sqlite3.connect(plain) as conn:
        conn.execute("DELETE FROM ratings WHERE item_key IN (SELECT item_key FROM gold)")
    code, out_plain, err_plain = cli("report", "--db", plain, "--task", TASK, "--format", "json")
    assert code == 0 and "gold" not in err_plain
    # (but the retest table: its warm-up counts every item a person saw, gold items too, as they were shown)
    records = [r for r in json.loads(out)["tasks"][TASK] if r["table"] != "retest"]
    assert records and records == [r for r in json.loads(out_plain)["tasks"][TASK] if r["table"] != "retest"]


def progress_json(db: Path, task: str = TASK) -> dict[str, dict]:
    code, out, err = cli("progress", "--db", db, "--task", task, "--format", "json")
    assert code == 0, err
    (found,) = json.loads(out)
    return {row["annotator"]: row for row in found["annotators"]}


def test_adjudicated_items_move_no_annotators_distance_from_the_judges(tmp_path):
    """An adjudicator's decision is no judge's reading: deciding 4 items (far from the judge) changes nobody's
    figures (the judges' figures were averaged with the decisions: 0.957 -> 0.915 after 4)."""
    db = rated_study(tmp_path)
    before = progress_json(db)
    gold = {k for (k,) in rows(db, "SELECT item_key FROM gold")}
    by_people = "SELECT DISTINCT item_key FROM ratings r JOIN raters ra ON ra.id = r.rater_id WHERE ra.kind = 'human'"
    rated = sorted(k for (k,) in rows(db, by_people) if k not in gold)[:4]
    study = Study.open(db)
    adjudication = Adjudication(study, TASK, "lena")
    for key in rated:
        adjudication.decide(key, "fluency", 5.0)
    study.close()
    assert rows(db, "SELECT count(*) FROM ratings r JOIN raters ra ON ra.id = r.rater_id "
                    "WHERE ra.kind = 'adjudicator'") == [(4,)]  # fmt: skip
    after = progress_json(db)
    assert list(after) == list(before) == ["alice", "bob", "carol"]  # the adjudicator is no annotator either
    for name, row in after.items():
        for figure in ("gap_judges", "shared_judges", "gap_people", "shared_people"):
            assert row[figure] == before[name][figure], (name, figure)
        assert row["gap_judges"] == pytest.approx(independent(db, name)["gap_judges"])


PAIRWISE = "story-pairwise"


def pairwise_study(tmp_path: Path) -> Path:
    """Three people answer A / B / tie on 24 pairs; two judges answer in both orders (one sample each), and
    change their answer with the order on some pairs (no preference: a tie, as the report counts it); judge-y
    never answered the first 3 pairs in the swapped order (no answer of its own there, as in the report)."""
    db = tmp_path / "pairs.db"
    path = tmp_path / "pairs.csv"
    lines = ["id,prompt,story_a,story_b"] + [f"p{i},Beginning {i},Story A {i},Story B {i}" for i in range(24)]
    path.write_text("\n".join(lines) + "\n")
    assert cli("import", path, "--task", PAIRWISE, "--db", db)[0] == 0
    rng = random.Random(11)
    study = Study.open(db)
    keys = [item.key for item in study.items(PAIRWISE)]
    judges = [study.judge(name, {"m": name}) for name in ("judge-x", "judge-y")]
    for key in keys:
        for judge in judges:
            first = float(rng.choice((0, 0, 1, 2)))
            second = first if rng.random() < 0.75 else float(rng.choice((0, 1, 2)))
            insert(study, key, "preference", judge.id, first, presentation="original")
            if judge.name == "judge-x" or key not in keys[:3]:
                insert(study, key, "preference", judge.id, second, presentation="swapped")
    for name, share in (("alice", 1.0), ("bob", 0.75), ("carol", 0.5)):
        rater = study.human(name)
        for key in keys[: int(len(keys) * share)]:
            study.add_rating(key, "preference", rater.id, float(rng.choice((0, 0, 1, 2))), parse_status="human")
    study.close()
    return db


def independent_disagreement(db: Path, name: str) -> dict[str, float]:
    """The disagreement rates, from the tables: per item, the share of the other people's (each judge's)
    answers unlike theirs, averaged; a judge's answer is the same in both orders, else a tie (MT-Bench's rule,
    Zheng et al. 2023)."""
    people: dict[int, dict[str, float]] = {}
    for key, who, value in rows(
        db,
        "SELECT r.item_key, ra.name, r.value FROM ratings r JOIN raters ra ON ra.id = r.rater_id "
        "WHERE ra.kind = 'human' ORDER BY r.id",
    ):
        people.setdefault(key, {})[who] = value
    orders: dict[int, dict[str, dict[str, float]]] = {}
    for key, who, order, value in rows(
        db,
        "SELECT r.item_key, ra.name, r.presentation, r.value FROM ratings r JOIN raters ra ON ra.id = r.rater_id "
        "WHERE ra.kind = 'llm'",
    ):
        orders.setdefault(key, {}).setdefault(who, {})[order] = value
    tie = 2.0
    judged = {
        key: [
            by_order["original"] if by_order["original"] == by_order["swapped"] else tie
            for by_order in j.values()
            if len(by_order) == 2  # both orders, or no answer
        ]
        for key, j in orders.items()
    }
    mine = {key: answers[name] for key, answers in people.items() if name in answers}
    with_people = [
        statistics.fmean(v != mine[key] for who, v in people[key].items() if who != name)
        for key in mine
        if len(people[key]) > 1
    ]
    with_judges = [statistics.fmean(v != mine[key] for v in judged[key]) for key in mine]
    return {
        "disagreement_people": statistics.fmean(with_people),
        "shared_people_nominal": len(with_people),
        "disagreement_judges": statistics.fmean(with_judges),
        "shared_judges_nominal": len(with_judges),
    }


def test_a_pairwise_question_shows_a_disagreement_rate_never_a_mean_of_answer_codes(tmp_path):
    db = pairwise_study(tmp_path)
    shown = progress_json(db, PAIRWISE)
    assert list(shown) == ["alice", "bob", "carol"]
    for name, row in shown.items():
        for figure, value in independent_disagreement(db, name).items():
            assert row[figure] == pytest.approx(value), (name, figure)
        # no distance in scale points of the codes 0 / 1 / 2
        assert row["gap_people"] is None and row["gap_judges"] is None
        assert row["shared_people"] == row["shared_judges"] == 0
    assert 0 < shown["alice"]["disagreement_judges"] < 1

    code, out, err = cli("progress", "--db", db, "--task", PAIRWISE)
    assert code == 0, err
    assert "≠ppl" in out and "≠jdg" in out and "disagreement rate" in out
    assert "±jdg" not in out and "scale points" not in out and "distance" not in out.split("disagreement")[0]
    alice = next(line for line in out.splitlines() if line.lstrip().startswith("alice"))
    assert f"{shown['alice']['disagreement_judges']:.0%}" in alice
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 80


MIXED_TASK = """
[[task]]
name = "mixed"
instructions = "Rate the reply."
fields = ["text"]

[[task.attributes]]
name = "quality"
question = "How good is it? (1-5)"
scale = { kind = "likert", low = 1, high = 5 }

[[task.attributes]]
name = "topic"
question = "Which topic?"
scale = { kind = "choice", choices = ["news", "sport", "other"] }
"""


def test_a_task_with_numeric_and_choice_questions_keeps_their_figures_apart(tmp_path):
    """Distances over the 1-5 question only, disagreement rates over the choice only; at 80 columns every name."""
    db, task_file, items = tmp_path / "m.db", tmp_path / "t.toml", tmp_path / "i.csv"
    task_file.write_text(MIXED_TASK)
    items.write_text("id,text\n" + "".join(f"x{i},Text {i}\n" for i in range(12)))
    assert cli("import", items, "--task", "mixed", "--task-file", task_file, "--db", db)[0] == 0
    rng = random.Random(5)
    study = Study.open(db)
    judge = study.judge("judge-x", {"m": 1})
    people = {name: study.human(name) for name in ("alice-with-a-long-name", "bob")}
    given: dict[str, dict[str, list[float]]] = {name: {"quality": [], "topic": []} for name in [*people, "judge"]}
    for item in study.items("mixed"):
        for name, rater in [*people.items(), ("judge", judge)]:
            for attribute, top in (("quality", 5), ("topic", 2)):
                value = float(rng.randint(1, 5) if top == 5 else rng.randint(0, 2))
                given[name][attribute].append(value)
                study.add_rating(item.key, attribute, rater.id, value, parse_status="ok" if rater is judge else "human")
    study.close()
    shown = progress_json(db, "mixed")
    for name, other in (("alice-with-a-long-name", "bob"), ("bob", "alice-with-a-long-name")):
        mine, theirs, judged = given[name], given[other], given["judge"]
        assert shown[name]["gap_people"] == pytest.approx(
            statistics.fmean(abs(a - b) for a, b in zip(mine["quality"], theirs["quality"]))
        )
        assert shown[name]["gap_judges"] == pytest.approx(
            statistics.fmean(abs(a - b) for a, b in zip(mine["quality"], judged["quality"]))
        )
        assert shown[name]["disagreement_people"] == pytest.approx(
            statistics.fmean(a != b for a, b in zip(mine["topic"], theirs["topic"]))
        )
        assert shown[name]["disagreement_judges"] == pytest.approx(
            statistics.fmean(a != b for a, b in zip(mine["topic"], judged["topic"]))
        )
        assert shown[name]["shared_people"] == shown[name]["shared_people_nominal"] == 12
    code, out, err = cli("progress", "--db", db, "--task", "mixed")
    assert code == 0, err
    assert max(len(line.rstrip()) for line in out.splitlines()) <= 80
    assert "alice-with-a-long-name" in out and "±jdg" in out and "≠jdg" in out
    bob = [line.split() for line in out.splitlines() if line.split()[:1] == ["bob"]]
    assert bob[0][-4] == f"{shown['bob']['gap_people']:.2f}"  # the distances in the main table ...
    assert bob[1] == ["bob", f"{shown['bob']['disagreement_people']:.0%}", f"{shown['bob']['disagreement_judges']:.0%}"]

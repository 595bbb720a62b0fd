"""Plans that say what they do (issue 30, item 6), through the real CLI (in-process ``cli``, or a subprocess where
the app opens): names, gold answers, the alt-test forecast, items imported after a plan, gold in adjudication,
the straight-lining mark, `adjudicate --as`, and a lead acting on a careless mark."""

from __future__ import annotations

import json
import random
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.support import digest, run_cli_process
from tests.ui.tmux import TmuxApp, needs_tmux
from tui_rater.store.study import Study
from tui_rater.store.team import claim

TASK = "title-fluency"


def items_file(path: Path, regular: int, gold_values=(), prefix: str = "t") -> Path:
    lines = ["id,title,gold_fluency"]
    lines += [f"{prefix}{i},Title {prefix} {i}," for i in range(regular)]
    lines += [f"g{i},Gold title {i},{v}" for i, v in enumerate(gold_values)]
    path.write_text("\n".join(lines) + "\n")
    return path


def rows(db: Path, sql: str, *params):
    with sqlite3.connect(db) as conn:
        return conn.execute(sql, params).fetchall()


def one_sentence(code: int, err: str) -> bool:
    return code == 2 and err.startswith("tui-rater: error: ") and err.count("\n") == 1


@pytest.fixture
def study_file(tmp_path, cli):
    db = tmp_path / "team.db"
    code, _out, err = cli("import", items_file(tmp_path / "items.csv", 60, (1, 2, 3, 5)), "--task", TASK, "--db", db)
    assert code == 0, err
    return db


# --- a. every name in --annotators / --add is a name ------------------------------------------------


@pytest.mark.parametrize("names", ["ann1,,web3", "ann1, ,web3", "ann1,web3,", ",ann1,web3", " ", "ann1,web3, ann1"])
def test_an_empty_blank_or_repeated_name_in_a_plan_is_one_sentence(study_file, cli, names):
    before = digest(study_file)
    code, _out, err = cli("assign", "--db", study_file, "--task", TASK, "--annotators", names, "--per-item", "2")
    assert one_sentence(code, err), err
    assert ("has an empty name" in err) or ("'ann1' is named twice" in err)
    assert digest(study_file) == before and not rows(study_file, "SELECT 1 FROM team_plans")


def test_an_empty_name_given_to_add_is_one_sentence(study_file, cli):
    assert cli("assign", "--db", study_file, "--task", TASK, "--annotators", "alice,bob")[0] == 0
    before = digest(study_file)
    code, _out, err = cli("assign", "--db", study_file, "--task", TASK, "--add", "dave,,erin")
    assert one_sentence(code, err) and "--add 'dave,,erin' has an empty name (name 2 of 3)" in err
    assert digest(study_file) == before
    ((settings,),) = rows(study_file, "SELECT settings FROM team_plans")
    assert json.loads(settings)["annotators"] == ["alice", "bob"]


# --- b. gold answers a person can give ----------------------------------------------------------------


def test_a_gold_answer_between_the_scales_points_is_refused_naming_the_row(tmp_path, cli):
    db = tmp_path / "g.db"
    assert cli("import", items_file(tmp_path / "ok.csv", 3, (4,)), "--task", TASK, "--db", db)[0] == 0
    before = digest(db)
    bad = items_file(tmp_path / "bad.csv", 3, (2, 4.5), prefix="u")
    code, _out, err = cli("import", bad, "--task", TASK, "--db", db)
    assert one_sentence(code, err), err
    assert "row 5, column 'gold_fluency': 4.5 is not an answer a person can give to 'fluency' (one of 1, 2" in err
    assert digest(db) == before and rows(db, "SELECT count(*) FROM items") == [(4,)]


# --- c. the dry run's alt-test forecast is the report's rule ---------------------------------------------


def rate_as_planned(db: Path, seed: int = 5) -> None:
    """Every planned person rates each of their items (gold too), and a judge rates every item, three samples."""
    rng = random.Random(seed)
    study = Study.open(db)
    judge = study.judge("judge-x", {"m": "x"})
    for item in study.items(TASK):
        truth = rng.randint(1, 5)
        for sample in range(3):
            study.add_rating(item.key, "fluency", judge.id, float(min(5, max(1, truth + rng.choice((-1, 0, 1))))),
                             sample=sample)  # fmt: skip
    for rater_id, key in rows(db, "SELECT rater_id, item_key FROM assignments"):
        study.add_rating(key, "fluency", rater_id, float(rng.randint(1, 5)), parse_status="human", seconds=5.0)
    study.close()


def verdicts(cli, db: Path) -> list[dict]:
    code, out, err = cli("report", "--db", db, "--task", TASK, "--format", "json")
    assert code == 0, err
    records = json.loads(out)["tasks"][TASK]
    return [r for r in records if r["table"] == "verdict" and r["statistic"] in ("verdict", "winning_rate")]


@pytest.mark.parametrize(
    ("flags", "possible"),
    [
        (["--overlap", "0.2:3"], False),  # the case: 11 three-person items of 55, 11 shared items each
        (["--per-item", "2"], True),  # 3 people, every item by 2: about 37 shared items each
        (["--per-item", "1", "--overlap", "0.5:2"], False),  # 28 shared items by 2: about 19 each
    ],
)
def test_the_dry_run_forecasts_the_alt_test_by_the_reports_own_rule(tmp_path, cli, flags, possible):
    db = tmp_path / "c.db"
    assert cli("import", items_file(tmp_path / "i.csv", 55), "--task", TASK, "--db", db)[0] == 0
    plan = ["assign", "--db", db, "--task", TASK, "--annotators", "a,b,c", *flags]
    code, out, err = cli(*plan, "--dry-run")
    assert code == 0, err
    text = " ".join(out.split())
    rule = "at least 3 people who each rated at least 30 of the items the judge and another person rated"
    assert rule in text
    if possible:
        assert "the alt-test verdict (can a judge replace the people?): yes" in text
    else:
        assert "the alt-test verdict: no -- it needs" in text and "gives 0 of 3 that many" in text
        assert "alt-test verdict (can a judge replace the people?): yes" not in text
    # what the report then does, with every planned rating made and the judge on every item
    assert cli(*plan)[0] == 0
    rate_as_planned(db)
    found = verdicts(cli, db)
    assert found, "the report has a verdict row either way"
    assert all((r["value"] is not None) == possible for r in found), found


# --- d. items imported after a fixed plan ---------------------------------------------------------------


def test_items_imported_after_a_fixed_plan_are_said_everywhere_and_extend_gives_them_k_people(study_file, cli):
    assert cli("assign", "--db", study_file, "--task", TASK, "--annotators", "a,b,c", "--per-item", "2")[0] == 0
    more = items_file(study_file.parent / "more.csv", 7, prefix="n")
    code, out, err = cli("import", more, "--task", TASK, "--db", study_file)
    assert code == 0, err
    said = " ".join(err.split())
    assert "7 item(s) of 'title-fluency' are outside its fixed plan" in said
    assert "`tui-rater assign --task title-fluency --extend`" in said
    code, out, err = cli("progress", "--db", study_file)
    assert code == 0 and "! 7 item(s) outside the fixed plan" in out and "--extend`" in out
    code, out, _err = cli("progress", "--db", study_file, "--format", "json")
    assert json.loads(out)[0]["unplanned"] == 7
    code, _out, err = cli("assign", "--db", study_file, "--task", TASK, "--annotators", "a,b,c")
    assert code == 2 and "--extend" in err  # a second plan is refused, naming the way to take the new items in

    before = {(r, k) for r, k in rows(study_file, "SELECT rater_id, item_key FROM assignments")}
    code, out, err = cli("assign", "--db", study_file, "--task", TASK, "--extend")
    assert code == 0, err
    assert "7 new item(s) of 'title-fluency' added to its plan, each rated by 2" in out
    after = {(r, k) for r, k in rows(study_file, "SELECT rater_id, item_key FROM assignments")}
    assert before <= after  # nothing planned moved
    new = {k for (k,) in rows(study_file, "SELECT key FROM items WHERE id LIKE 'n%'")}
    per_item = {k: sum(1 for _r, key in after if key == k) for k in new}
    assert per_item == dict.fromkeys(new, 2)
    loads = dict(rows(study_file, "SELECT rater_id, count(*) FROM assignments WHERE gold = 0 GROUP BY rater_id"))
    assert max(loads.values()) - min(loads.values()) <= 1
    code, out, _err = cli("progress", "--db", study_file, "--format", "json")
    assert json.loads(out)[0]["unplanned"] == 0
    assert "outside" not in cli("progress", "--db", study_file)[1]


# --- e. gold items are not adjudicated ----------------------------------------------------------------


def test_gold_items_are_not_in_the_adjudication_list(study_file, cli):
    study = Study.open(study_file)
    alice, bob = study.human("alice"), study.human("bob")
    keys = {item.id: item.key for item in study.items(TASK)}
    for key, (a, b) in ((keys["t0"], (1, 4)), (keys["g0"], (1, 4)), (keys["g1"], (2, 5))):
        study.add_rating(key, "fluency", alice.id, float(a), parse_status="human")
        study.add_rating(key, "fluency", bob.id, float(b), parse_status="human")
    study.close()
    code, out, err = cli("adjudicate", "--db", study_file, "--task", TASK, "--format", "json")
    assert code == 0, err
    assert [entry["item"] for entry in json.loads(out)] == ["t0"]


# --- f. the straight-lining mark leaves gold ratings out -------------------------------------------------


def test_the_same_answer_mark_counts_no_gold_rating(study_file, cli):
    study = Study.open(study_file)
    carol, dan = study.human("carol"), study.human("dan")
    gold = dict(rows(study_file, "SELECT item_key, value FROM gold"))
    regular = [item.key for item in study.items(TASK) if item.key not in gold]
    for key in regular[:10]:  # carol answers 4 to every real item ...
        study.add_rating(key, "fluency", carol.id, 4.0, parse_status="human")
    for key, value in gold.items():  # ... and the 4 gold items right (1, 2, 3, 5): 10 of 14 ratings are 4
        study.add_rating(key, "fluency", carol.id, value, parse_status="human")
    for key in regular[:9]:  # dan answers 3 to 9 real items and to the 4 gold items (one right)
        study.add_rating(key, "fluency", dan.id, 3.0, parse_status="human")
    for key in gold:
        study.add_rating(key, "fluency", dan.id, 3.0, parse_status="human")
    study.close()
    code, out, err = cli("progress", "--db", study_file, "--format", "json")
    assert code == 0, err
    marks = {row["annotator"]: row["marks"] for row in json.loads(out)[0]["annotators"]}
    assert "same answer 100% of 10 ratings" in marks["carol"]  # gold hid it: 71 % of 14
    assert not any(m.startswith("same answer") for m in marks["dan"])  # 9 real ratings: too few to say


# --- g. adjudicate takes --as, as its refusal says -------------------------------------------------------


@needs_tmux
def test_adjudicate_takes_as_which_its_refusal_suggests(study_file, cli, tmp_path):
    study = Study.open(study_file)
    keys = {item.id: item.key for item in study.items(TASK)}
    study.add_rating(keys["t0"], "fluency", study.human("alice").id, 1.0, parse_status="human")
    study.add_rating(keys["t0"], "fluency", study.human("bob").id, 5.0, parse_status="human")
    study.close()
    assert cli("roles", "--db", study_file, "--leads", "lena", "--as", "lena")[0] == 0
    before = digest(study_file)
    code, _out, err = cli("adjudicate", "--db", study_file, "--task", TASK, "--as", "bob")
    assert one_sentence(code, err), err
    assert "only the study's leads (lena) may adjudicate; 'bob' is not one (name yourself with --as NAME" in err
    assert digest(study_file) == before
    # the advice works: --as names the adjudicator, as --adjudicator does
    command = ["adjudicate", "--db", str(study_file), "--task", TASK, "--as", "lena"]
    app = TmuxApp([sys.executable, "-m", "tui_rater.cli", *command], tmp_path)
    try:
        app.wait_text("lena (adjudicator)", "0/1 decided")
        app.keys("q")
        assert app.wait_status() == 0
    finally:
        app.close()


# --- h. a lead acts on a careless mark ------------------------------------------------------------------


def careless_study(tmp_path: Path, cli) -> Path:
    """alice, bob, carol, dave on a K=2 plan with gold; carol rates about half her items 3 and the gold wrong;
    the others rate a mix; a judge rates everything."""
    db = tmp_path / "h.db"
    assert cli("import", items_file(tmp_path / "i.csv", 60, (1, 2, 4, 5)), "--task", TASK, "--db", db)[0] == 0
    plan = ["assign", "--db", db, "--task", TASK, "--annotators", "alice,bob,carol,dave", "--per-item", "2"]
    assert cli(*plan, "--gold-rate", "0.1")[0] == 0
    rng = random.Random(11)
    study = Study.open(db)
    judge = study.judge("judge-x", {"m": "x"})
    truth = {item.key: rng.randint(1, 5) for item in study.items(TASK)}
    for key, value in truth.items():
        study.add_rating(key, "fluency", judge.id, float(value))
    gold = dict(rows(db, "SELECT item_key, value FROM gold"))
    for name in ("alice", "bob", "carol", "dave"):
        rater = study.human(name)
        mine = [k for (k,) in rows(db, "SELECT item_key FROM assignments WHERE rater_id = ? ORDER BY gold DESC, "
                                       "item_key", rater.id)]  # fmt: skip
        for key in mine[: len(mine) // 2 if name == "carol" else len(mine) - 3]:
            if name == "carol":
                value = 3.0
            elif key in gold:
                value = gold[key]
            else:
                value = float(min(5, max(1, truth[key] + rng.choice((-1, 0, 0, 1)))))
            study.add_rating(key, "fluency", rater.id, value, parse_status="human", seconds=6.0)
    study.close()
    return db


def test_a_lead_leaves_a_careless_annotator_out_of_the_report_and_says_so_in_every_file(tmp_path, cli):
    db = careless_study(tmp_path, cli)
    code, out, _err = cli("progress", "--db", db)
    assert "! carol: gold 0% right" in out and "! carol: same answer 100%" in out
    assert "leave out: `tui-rater report --exclude-annotator carol`" in out
    assert "reassign: `tui-rater assign --task title-fluency --reassign carol`" in out

    (carols,) = rows(db, "SELECT count(*) FROM ratings r JOIN raters ra ON ra.id = r.rater_id WHERE ra.name = "
                         "'carol' AND r.item_key NOT IN (SELECT item_key FROM gold)")[0]  # fmt: skip
    code, out, err = cli("report", "--db", db, "--task", TASK, "--format", "json", "--exclude-annotator", "carol")
    assert code == 0, err
    assert f"note: {carols} rating(s) by carol of {TASK} are left out of every table, verdict and system score" in err
    report = json.loads(out)
    assert report["excluded_annotators"]["names"] == ["carol"]
    assert report["excluded_annotators"]["ratings_left_out"] == {TASK: {"carol": carols}}
    # the same numbers as a study in which carol never rated anything (an independent way to leave her out)
    plain = tmp_path / "without-carol.db"
    with sqlite3.connect(db) as source, sqlite3.connect(plain) as copy:
        source.backup(copy)
    with sqlite3.connect(plain) as conn:
        conn.execute("DELETE FROM ratings WHERE rater_id = (SELECT id FROM raters WHERE name = 'carol')")
    code, out_plain, err_plain = cli("report", "--db", plain, "--task", TASK, "--format", "json")
    assert code == 0, err_plain

    def tables(found):  # the retest table's warm-up counts the items each person saw, as they were shown
        return [r for r in found["tasks"][TASK] if r["table"] != "retest"]

    assert tables(report) == tables(json.loads(out_plain))
    assert any(r["table"] == "verdict" for r in tables(report))
    code, out_all, _err = cli("report", "--db", db, "--task", TASK, "--format", "json")
    assert tables(json.loads(out_all)) != tables(report) and "excluded_annotators" not in json.loads(out_all)

    # the files say it: Markdown and HTML under the task's heading, JSON in its own key (above)
    sentence = "left out by the lead (report --exclude-annotator)"
    for name in ("r.md", "r.html", "r.txt"):
        code, _out, err = cli("report", "--db", db, "--task", TASK, "--exclude-annotator", "carol", "--out",
                              tmp_path / name)  # fmt: skip
        assert code == 0, err
        text = (tmp_path / name).read_text()
        assert sentence in text and f"carol ({carols} ratings)" in text, name
    # a name that is no annotator here: one sentence, nothing written
    code, _out, err = cli("report", "--db", db, "--exclude-annotator", "carl", "--out", tmp_path / "x.json")
    assert one_sentence(code, err) and "--exclude-annotator 'carl': no annotator of that name" in err
    assert not (tmp_path / "x.json").exists()


def test_a_lead_moves_a_careless_annotators_unfinished_items_to_the_others_keeping_k(tmp_path, cli):
    db = careless_study(tmp_path, cli)
    carol = rows(db, "SELECT id FROM raters WHERE name = 'carol'")[0][0]
    finished = {k for (k,) in rows(db, "SELECT DISTINCT item_key FROM ratings WHERE rater_id = ?", carol)}
    hers = {k for (k,) in rows(db, "SELECT item_key FROM assignments WHERE rater_id = ? AND gold = 0", carol)}
    unfinished = hers - finished
    assert unfinished and finished & hers
    before_per_item = dict(rows(db, "SELECT item_key, count(*) FROM assignments WHERE gold = 0 GROUP BY item_key"))

    code, out, err = cli("assign", "--db", db, "--task", TASK, "--reassign", "carol")
    assert code == 0, err
    assert f"carol is off the plan for 'title-fluency': {len(unfinished)} item(s) they had not finished moved" in out
    after = rows(db, "SELECT rater_id, item_key FROM assignments WHERE gold = 0")
    per_item: dict[int, set[int]] = {}
    for rater, key in after:
        assert rater not in per_item.setdefault(key, set())  # nobody twice on an item
        per_item[key].add(rater)
    assert {k: len(v) for k, v in per_item.items()} == before_per_item  # every item keeps its K people
    assert {k for r, k in after if r == carol} == finished & hers  # her finished work stays hers
    assert not rows(db, "SELECT 1 FROM assignments WHERE rater_id = ? AND gold = 1 AND item_key NOT IN "
                        "(SELECT item_key FROM ratings WHERE rater_id = ?)", carol, carol)  # fmt: skip
    ((settings,),) = rows(db, "SELECT settings FROM team_plans")
    assert json.loads(settings)["annotators"] == ["alice", "bob", "dave"]
    # carol is no longer served; her ratings are still in the file
    before = digest(db)
    done = run_cli_process("annotate", "--db", db, "--task", TASK, "--annotator", "carol")
    assert done.returncode == 2 and "'carol' is not in the plan" in done.stderr
    assert digest(db) == before
    # the others' loads differ by at most one among those who took her items
    loads = dict(rows(db, "SELECT rater_id, count(*) FROM assignments WHERE gold = 0 AND rater_id != ? "
                          "GROUP BY rater_id", carol))  # fmt: skip
    assert max(loads.values()) - min(loads.values()) <= 2
    # not in the plan, or alone: one sentence, nothing changed
    before = digest(db)
    code, _out, err = cli("assign", "--db", db, "--task", TASK, "--reassign", "carol")
    assert one_sentence(code, err) and "'carol' is not in the plan for 'title-fluency'" in err
    assert digest(db) == before


def test_reassign_says_when_an_item_cannot_keep_k_and_takes_a_dynamic_plans_leases(study_file, cli):
    assert cli("assign", "--db", study_file, "--task", TASK, "--annotators", "a,b", "--per-item", "2")[0] == 0
    code, out, err = cli("assign", "--db", study_file, "--task", TASK, "--reassign", "b")
    assert code == 0, err
    assert "b is off the plan for 'title-fluency': 0 item(s) they had not finished moved" in out
    assert "warning: 60 item(s) now have one person fewer than the plan's 2: every other annotator" in out
    b = rows(study_file, "SELECT id FROM raters WHERE name = 'b'")[0][0]
    assert not rows(study_file, "SELECT 1 FROM assignments WHERE rater_id = ?", b)
    code, _out, err = cli("assign", "--db", study_file, "--task", TASK, "--reassign", "a")
    assert one_sentence(code, err) and "'a' is the only annotator in the plan" in err

    dynamic = study_file.parent / "dynamic.db"
    assert cli("import", items_file(study_file.parent / "d.csv", 5), "--task", TASK, "--db", dynamic)[0] == 0
    assert cli("assign", "--db", dynamic, "--task", TASK, "--annotators", "a,b", "--dynamic")[0] == 0
    study = Study.open(dynamic)
    assert claim(study, study.items(TASK)[0].key, study.human("b").id, 1, 600.0)  # b holds a lease on an item
    study.close()
    code, out, err = cli("assign", "--db", dynamic, "--task", TASK, "--reassign", "b")
    assert code == 0 and "b is off the dynamic plan" in out, err
    assert not rows(dynamic, "SELECT 1 FROM leases")
    ((settings,),) = rows(dynamic, "SELECT settings FROM team_plans")
    assert json.loads(settings)["annotators"] == ["a"]

"""Test-retest in the store: the plan of showings, the linked ratings, and that they never count as the rating."""

from __future__ import annotations

import csv
import json
import random
import sqlite3

import pytest

from tests.support import run_cli_process
from tui_rater.store.retest import choose_retests, retest_order, retest_pairs
from tui_rater.store.study import Study


def _timeline(order, done, recent, showings):
    """What the person sees from the plan on: the recent items, then the showings still to come."""
    start = next((i for i, key in enumerate(order) if key not in done), len(order))
    return list(recent) + [key for key, _ in showings[start:]], len(recent), start


@pytest.mark.parametrize("seed", range(300))
def test_retests_are_spaced_interleaved_and_each_item_comes_back_at_most_once(seed):
    rng = random.Random(seed)
    n = rng.randint(1, 40)
    order = rng.sample(range(100, 100 + n), n)
    spacing = rng.randint(1, 6)
    done = set(rng.sample(order, rng.randint(0, n))) if rng.random() < 0.5 else set()
    recent = rng.sample(sorted(done), min(len(done), spacing)) if done else []
    chosen = choose_retests(sorted(order), rng.choice([0.1, 0.3, 0.5, 1.0]), rng, set())
    showings = retest_order(order, done, recent, chosen, spacing, random.Random(seed))

    assert [key for key, again in showings if not again] == order  # every item once, in the session's order
    retests = [key for key, again in showings if again]
    assert len(retests) == len(set(retests)) and set(retests) <= chosen
    timeline, offset, start = _timeline(order, done, recent, showings)
    for j, key in enumerate(timeline[offset:], start=offset):
        if showings[start + j - offset][1]:
            assert key not in timeline[max(0, j - spacing) : j], f"item {key} came back within {spacing} items"
            assert key in done or order.index(key) < start + j - offset  # after its first showing
    future_new = [key for key, again in showings[start:] if not again and key not in done]
    for j in range(start, len(showings) - 1):
        if showings[j][1] and showings[j + 1][1]:
            # two retests in a row only once no new item is left
            assert all(showings.index((key, False)) < j for key in future_new)
    for key in chosen - set(retests):  # left out only when it could not be spaced: among the last items seen
        assert key in timeline[-spacing:]


def test_choose_retests_counts_the_share_of_all_items_and_what_was_retested():
    items = list(range(1, 21))
    assert len(choose_retests(items, 0.5, random.Random(0), set())) == 10
    assert len(choose_retests(items, 0.01, random.Random(0), set())) == 1  # at least one
    again = choose_retests(items, 0.5, random.Random(0), {1, 2, 3})
    assert len(again) == 7 and not again & {1, 2, 3}
    assert choose_retests(items, 0.5, random.Random(4), set()) == choose_retests(items, 0.5, random.Random(4), set())


def test_retest_order_spreads_the_retests_of_items_rated_before_among_the_new_ones():
    order = list(range(1, 41))
    done = set(range(1, 21))
    showings = retest_order(order, done, [17, 18, 19, 20], set(range(1, 21)), 3, random.Random(2))
    positions = [i for i, (_key, again) in enumerate(showings) if again]
    assert len(positions) == 20
    new_after = sum(1 for key, again in showings[positions[-1] :] if not again)
    first_retest = positions[0]
    # interleaved: not all before the new items, nor all after them
    assert first_retest < 25 and new_after < 20


# --- the file ----------------------------------------------------------------------------------------


STORIES = [{"id": f"s{i}", "system": "gpt2" if i % 2 else "human", "prompt": "P", "story": f"S{i}."} for i in range(6)]


def _study_with_retests(path):
    study = Study.open(path)
    study.add_items(study.task("story-explicit"), STORIES)
    items = study.items("story-explicit")
    alice, bob = study.human("alice"), study.human("bob")
    judge = study.judge("judge", {"model": "m"})
    attribute = "overall"
    first = {}
    for n, item in enumerate(items):
        first[item.key] = study.add_rating(item.key, attribute, alice.id, 10.0 * n, parse_status="human")
        study.add_rating(item.key, attribute, bob.id, 10.0 * n + 5, parse_status="human")
        study.add_rating(item.key, attribute, judge.id, 10.0 * n + 2)
    return study, items, alice, first


def _records(report):
    """Every dict of the JSON report that is a record of a table (has 'table' and 'statistic')."""
    found = []

    def walk(node):
        if isinstance(node, dict):
            if "table" in node and "statistic" in node:
                found.append(node)
            else:
                for value in node.values():
                    walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(report)
    return found


def _without_retest(report):
    return [r for r in _records(report) if r.get("table") != "retest"]


def test_retest_ratings_are_linked_and_never_in_force(tmp_path):
    db = tmp_path / "r.db"
    study, items, alice, first = _study_with_retests(db)
    attribute = study.task("story-explicit").attributes[0].name
    before = {
        "export": study.current_ratings("story-explicit"),
        "report": run_cli_process("report", "--db", db, "--format", "json").stdout,
    }
    for n, item in enumerate(items[:3]):  # alice rates three items again, differently
        study.add_rating(item.key, attribute, alice.id, 99.0 - n, parse_status="human", retest_of=first[item.key])
    undone = study.add_rating(
        items[3].key, attribute, alice.id, 1.0, parse_status="human", retest_of=first[items[3].key]
    )
    study.retract_rating(undone)
    assert study.current_ratings("story-explicit") == before["export"]  # exports: the first ratings only
    after = json.loads(run_cli_process("report", "--db", db, "--format", "json").stdout)
    # the report's tables are those without the retests; the retests only add their own section
    assert _without_retest(after) == _without_retest(json.loads(before["report"])) != []
    retest = [r for r in _records(after) if r.get("table") == "retest" and r["statistic"] == "retest_exact"]
    assert [(r["evaluator"], r["n"]) for r in retest] == [("alice", 3)]  # the undone retest is not a pair
    out = tmp_path / "ratings.csv"
    run_cli_process("export", "--db", db, "--out", out)
    with open(out, newline="") as handle:
        exported = {(r["item"], r["rater"]): float(r["value"]) for r in csv.DictReader(handle)}
    assert len(exported) == 18 and [exported[(f"s{n}", "alice")] for n in range(6)] == [0, 10, 20, 30, 40, 50]
    pairs = retest_pairs(study, "story-explicit", alice.id)
    assert [(p.first, p.retest) for p in pairs] == [(0.0, 99.0), (10.0, 98.0), (20.0, 97.0)]
    # positions count showings: six first showings, then the retests (the undone one was seen too)
    assert [(p.first_position, p.retest_position) for p in pairs] == [(0, 6), (1, 7), (2, 8)]
    assert all(p.retest_time >= p.first_time for p in pairs)
    linked = study._db.conn.execute("SELECT retest_of FROM ratings WHERE retest_of IS NOT NULL ORDER BY id").fetchall()
    assert [r[0] for r in linked] == [first[i.key] for i in items[:4]]


def test_importing_a_first_rating_again_ignores_the_retests(tmp_path):
    db = tmp_path / "r.db"
    study, items, alice, first = _study_with_retests(db)
    study.add_rating(items[0].key, "overall", alice.id, 77.0, parse_status="human", retest_of=first[items[0].key])
    ratings = tmp_path / "again.csv"
    ratings.write_text("item,task,attribute,rater,value\ns0,story-explicit,overall,alice,0\n")
    result = run_cli_process("import-ratings", ratings, "--db", db)
    assert result.returncode == 0, result.stderr
    assert "1 already present" in result.stdout  # the first rating (0) is the one compared with, not the retest


def test_a_schema_2_file_gains_the_retest_column_and_plans(tmp_path):
    from tui_rater.store.schema import MIGRATIONS, run_script

    path = tmp_path / "v2.db"
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("BEGIN")
    run_script(conn, MIGRATIONS[0])
    MIGRATIONS[1](conn)
    conn.execute("PRAGMA user_version = 2")
    conn.execute(
        "INSERT INTO items (key, id, task, fields, position, content_hash, created_at) "
        "VALUES (1, 'x', 'story-explicit', ?, 0, 'h', 'now')",
        [json.dumps({"prompt": "P", "story": "S"})],
    )
    conn.execute("INSERT INTO raters (id, name, kind, created_at) VALUES (1, 'ann', 'human', 'now')")
    conn.execute(
        "INSERT INTO ratings (item_key, attribute, rater_id, value, parse_status, created_at) "
        "VALUES (1, 'overall', 1, 40, 'human', 'now')"
    )
    conn.execute("COMMIT")
    conn.close()
    study = Study.open(path)
    assert study._db.conn.execute("SELECT value, retest_of FROM ratings").fetchall() == [(40.0, None)]
    assert study.current_ratings()[0]["value"] == 40.0
    assert study._db.conn.execute("SELECT count(*) FROM plans").fetchone() == (0,)


def test_sessions_read_their_retests_apart_and_others_never_see_them(tmp_path):
    from tui_rater.domain.values import RetestShowing
    from tui_rater.store.session import AnnotationSession

    study, items, alice, first = _study_with_retests(tmp_path / "r.db")
    study.add_rating(items[0].key, "overall", alice.id, 77.0, parse_status="human", retest_of=first[items[0].key])
    session = AnnotationSession.open(study, "story-explicit", "alice")
    assert session.mine[(items[0].key, "overall")][1] == 0.0  # the first rating, not the retest
    assert session.retested == {(items[0].key, "overall"): (session.retested[(items[0].key, "overall")][0], 77.0)}
    assert session.saved_values()[(RetestShowing(items[0].key), "overall")] == 77.0
    bob = AnnotationSession.open(study, "story-explicit", "bob")
    seen = [(o.rater, o.value) for o in bob.others(0)["overall"] if o.kind == "human"]
    assert seen == [("alice", 0.0)]  # the reveal shows alice's rating, not her retest


def test_items_imported_after_the_plan_come_after_it(tmp_path):
    from tui_rater.store.session import AnnotationSession

    study = Study.open(tmp_path / "p.db")
    task = study.task("story-explicit")
    study.add_items(task, STORIES[:4])
    planned = AnnotationSession.open(study, "story-explicit", "ann", retest=1.0, spacing=1)
    study.add_items(task, STORIES[4:])
    again = AnnotationSession.open(study, "story-explicit", "ann", retest=1.0, spacing=1)
    n = len(planned.items)
    assert [i.id for i in again.items[:n]] == [i.id for i in planned.items] and again.is_retest[:n] == planned.is_retest
    assert [i.id for i in again.items[n:]] == ["s4", "s5"] and again.is_retest[n:] == [False, False]


def test_the_retest_plan_is_reproducible_per_annotator_and_seed(tmp_path):
    from tui_rater.store.session import AnnotationSession

    def plan(name, annotator, seed):
        study = Study.open(tmp_path / f"{name}.db")
        study.add_items(study.task("story-explicit"), [dict(s, id=f"x{i}") for i, s in enumerate(STORIES * 5)])
        session = AnnotationSession.open(study, "story-explicit", annotator, seed=seed, retest=0.4, spacing=3)
        return [(i.id, again) for i, again in zip(session.items, session.is_retest)]

    first = plan("a", "ann", 0)
    assert plan("b", "ann", 0) == first  # another file, the same person and seed: the same plan
    assert plan("c", "bea", 0) != first and plan("d", "ann", 1) != first
    # 40% of 30 items chosen; one among the last to be rated may lack the room to be spaced
    assert 9 <= sum(again for _i, again in first) <= 12

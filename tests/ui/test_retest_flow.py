"""`annotate --retest` and `--order uncertain` in the app, through Pilot, against a real SQLite file."""

from __future__ import annotations

import threading

from tests.support import settle, wait_until
from tui_rater.domain.values import RetestShowing
from tui_rater.service.planning import active_sample, plan_uncertain_order
from tui_rater.store.session import AnnotationSession
from tui_rater.store.study import Study
from tui_rater.ui.app import make_app

N, SPACING = 12, 3


def titles(tmp_path, n=N) -> Study:
    study = Study.open(tmp_path / "solo.db")
    study.add_items(study.task("title-fluency"), [{"id": f"t{i}", "title": f"Headline number {i}"} for i in range(n)])
    return study


def open_app(study, **options):
    options = {"retest": 0.5, "spacing": SPACING, **options}
    return make_app(AnnotationSession.open(study.reopen(), "title-fluency", "solo", **options))


def questions(app) -> str:
    return str(app.query_one("#questions").render())


def first_value(item_id: str) -> str:
    return str(1 + int(item_id[1:]) % 4)  # 1-4; every retest is answered 5, so the two are told apart


async def rate_through(app, pilot, shown: list, limit: int | None = None) -> None:
    """Answer each showing the app puts on screen (first: 1-4, retest: 5) until the last or ``limit``."""
    session = app.session
    while limit is None or len(shown) < limit:
        index = app.index
        item, again = session.items[index], session.is_retest[index]
        shown.append((item.id, again, questions(app), str(app.query_one("#status").render())))
        await pilot.press("5" if again else first_value(item.id))
        await settle(app, pilot)
        if app.index == index:  # the last showing: the app stays on it
            break


def stored(study, annotator="solo"):
    """(item id, value, the id of the rating it retests, its own id) of every rating, in order."""
    return study._db.conn.execute(
        "SELECT i.id, r.value, r.retest_of, r.id FROM ratings r JOIN items i ON i.key = r.item_key "
        "JOIN raters ra ON ra.id = r.rater_id WHERE ra.name = ? AND r.retracted = 0 ORDER BY r.id",
        [annotator],
    ).fetchall()


async def test_retest_items_come_back_spaced_blind_interleaved_and_linked(tmp_path):
    study = titles(tmp_path)
    app = open_app(study)
    on_ui_thread: list[str] = []  # statements the UI thread ran on the session's connection: there must be none
    main = threading.main_thread()
    app.session.study._db.conn.set_trace_callback(
        lambda sql: on_ui_thread.append(sql) if threading.current_thread() is main else None
    )
    shown: list = []
    async with app.run_test(size=(80, 24)) as pilot:
        await rate_through(app, pilot, shown)
    app.session.study._db.conn.set_trace_callback(None)
    assert on_ui_thread == []  # every key is answered from memory; the store thread does the SQL

    order = [(item_id, again) for item_id, again, _q, _s in shown]
    retests = [item_id for item_id, again in order if again]
    assert [item_id for item_id, again in order if not again] == [f"t{i}" for i in range(N)]
    assert len(retests) >= 3 and len(set(retests)) == len(retests)
    for j, (item_id, again) in enumerate(order):
        if again:  # spaced: not among the last SPACING items seen, and after its first showing
            assert item_id not in [i for i, _ in order[max(0, j - SPACING) : j]]
            assert order.index((item_id, False)) < j
    assert order.index((retests[0], True)) < order.index((f"t{N - 1}", False))  # interleaved, not a block at the end
    for item_id, again, question, status in shown:
        if again:  # blind: the first rating is not shown, nor the item marked
            assert "[·] fluency" in question and first_value(item_id) + "]" not in question
            assert "flagged" not in status and "skipped" not in status

    rows = stored(study)
    first_id = {item_id: rating_id for item_id, _v, of, rating_id in rows if of is None}
    linked = [(item_id, value, of) for item_id, value, of, _id in rows if of is not None]
    assert linked == [(item_id, 5.0, first_id[item_id]) for item_id in retests]
    in_force = {r["item"]: r["value"] for r in study.current_ratings("title-fluency")}
    assert in_force == {f"t{i}": float(first_value(f"t{i}")) for i in range(N)}  # the first ratings stay in force


async def test_a_restart_continues_the_same_retest_plan(tmp_path):
    study = titles(tmp_path)
    app = open_app(study)
    plan = list(zip([i.id for i in app.session.items], app.session.is_retest))
    shown: list = []
    async with app.run_test(size=(80, 24)) as pilot:
        await rate_through(app, pilot, shown, limit=9)
    again = open_app(study)
    assert list(zip([i.id for i in again.session.items], again.session.is_retest)) == plan  # read back, not redrawn
    async with again.run_test(size=(80, 24)) as pilot:
        assert again.index == 9  # the next showing of the plan
        await rate_through(again, pilot, shown)
    assert [(item_id, retest) for item_id, retest, _q, _s in shown] == plan
    assert sum(1 for *_rest, of, _id in stored(study) if of is not None) == sum(r for _i, r in plan)
    # another seed is another plan; the first one's ratings stay linked
    other = open_app(study, seed=7)
    assert list(zip([i.id for i in other.session.items], other.session.is_retest)) != plan


async def test_skip_flag_and_undo_on_a_retest_showing_leave_the_first_showing_alone(tmp_path):
    study = titles(tmp_path)
    app = open_app(study)
    session = app.session
    first_retest = session.is_retest.index(True)
    key = session.items[first_retest].key
    shown: list = []
    async with app.run_test(size=(80, 24)) as pilot:
        await rate_through(app, pilot, shown, limit=first_retest)
        assert app.index == first_retest
        await pilot.press("5", "u")  # rated again, then taken back: the first rating is untouched
        await settle(app, pilot)
        assert app.index == first_retest and app.value(first_retest, "fluency") is None
        assert session.value(session.items.index(session.items[first_retest]), "fluency") is not None
        await pilot.press("f", "s")
        await settle(app, pilot)
        assert app.index == first_retest + 1
    notes = study._db.conn.execute("SELECT item_key, kind, text FROM notes ORDER BY id").fetchall()
    assert notes == [(key, "flag", "retest"), (key, "skip", "retest")]
    assert [
        (of, retracted)
        for of, retracted in study._db.conn.execute(
            "SELECT retest_of, retracted FROM ratings WHERE retest_of IS NOT NULL"
        )
    ] == [(session.mine[(key, "fluency")][0], 1)]
    again = open_app(study)
    assert RetestShowing(key) in again.session.skipped and key not in again.session.skipped
    assert key not in again.session.flagged
    assert again.index == first_retest + 1  # the skipped retest is not asked again


async def test_taking_back_a_retest_showings_flag_leaves_the_first_showings_flag(tmp_path):
    study = titles(tmp_path)
    app = open_app(study)
    session = app.session
    retest = session.is_retest.index(True)
    key = session.items[retest].key
    first = session.items.index(session.items[retest])  # the item's first showing
    shown: list = []
    async with app.run_test(size=(80, 24)) as pilot:
        await rate_through(app, pilot, shown, limit=retest)
        await pilot.press("f")  # the retest showing
        app.show_item(first)
        await pilot.press("f")  # the first showing
        await settle(app, pilot)
        app.show_item(retest)
        await pilot.press("f")  # again on the retest showing: its flag taken back
        await settle(app, pilot)
        assert not app.view.is_flagged(RetestShowing(key)) and app.view.is_flagged(key)
    notes = study._db.conn.execute("SELECT kind, text, retracted_at IS NOT NULL FROM notes ORDER BY id").fetchall()
    assert notes == [("flag", "retest", 1), ("flag", None, 0)]
    again = open_app(study)
    assert key in again.session.flagged and RetestShowing(key) not in again.session.flagged


async def test_a_retest_of_an_item_not_rated_is_passed_over(tmp_path):
    study = titles(tmp_path)
    app = open_app(study)
    session = app.session
    first_retest = session.is_retest.index(True)
    item = session.items[first_retest]
    first_showing = next(i for i, it in enumerate(session.items) if it.key == item.key)
    shown: list = []
    async with app.run_test(size=(80, 24)) as pilot:
        await rate_through(app, pilot, shown, limit=first_showing)
        await pilot.press("s")  # skip the item at its first showing
        await settle(app, pilot)
        await rate_through(app, pilot, shown)
    assert (item.id, True) not in [(i, r) for i, r, _q, _s in shown]
    assert not [row for row in stored(study) if row[0] == item.id]


async def test_the_agreement_pane_says_how_you_agree_with_yourself_and_the_judge(tmp_path):
    study = titles(tmp_path)
    judge = study.judge("copycat", {"m": "copy"})
    for item in study.items("title-fluency"):  # a judge that gives each item the first rating's value
        study.add_rating(item.key, "fluency", judge.id, float(first_value(item.id)))
    app = open_app(study)
    shown: list = []
    async with app.run_test(size=(100, 30)) as pilot:
        await rate_through(app, pilot, shown)
        await pilot.press("a")
        line = app.screen.query_one("#retest")
        await wait_until(pilot, lambda: line.display and "yourself" in str(line.render()), "the retest lines")
        text = " ".join(str(line.render()).split())
    retests = sum(1 for _i, again, _q, _s in shown if again)
    # every retest answered 5, every first rating 1-4: no agreement with yourself; the judge copies you
    assert "you agree with yourself at α" in text and f"({retests} rated twice)" in text
    assert "with copycat at α 1.00 (12 items)" in text and "identical 0%" in text


async def test_uncertain_order_follows_the_judges_uncertainty(tmp_path):
    study = titles(tmp_path, n=30)
    judge = study.judge("unsure-judge", {"m": "u"})
    unsure, sure = {str(v): 0.2 for v in range(1, 6)}, {"1": 0.9996, "2": 1e-4, "3": 1e-4, "4": 1e-4, "5": 1e-4}
    for n, item in enumerate(study.items("title-fluency")):  # the judge is unsure of items 0-9 only
        study.add_rating(item.key, "fluency", judge.id, 3.0, details={"distribution": unsure if n < 10 else sure})
    plan = plan_uncertain_order(study, "title-fluency", "solo", seed=0)
    app = open_app(study, order="uncertain", retest=0.0)
    assert [i.key for i in app.session.items] == [s.item_key for s in plan.showings]
    early = [int(i.id[1:]) < 10 for i in app.session.items[:10]]
    assert sum(early) >= 5  # a third of the items, half of the first ten (weights 4.5 : 1 against the others)
    shown: list = []
    async with app.run_test(size=(80, 24)) as pilot:
        await rate_through(app, pilot, shown, limit=7)
    assert [i for i, *_ in shown] == [i.id for i in app.session.items[:7]]
    sample = active_sample(study, "title-fluency", "solo")
    assert sample is not None and sample.rated == 7 and sample.probability.sum() > 6.99
    # with --retest, the retests are mixed into the same uncertain order
    both = open_app(study, order="uncertain")
    assert [i.key for i, again in zip(both.session.items, both.session.is_retest) if not again] == [
        s.item_key for s in plan.showings
    ]

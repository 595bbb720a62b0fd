"""The live agreement pane (``service/live.py``: its running sums and its full computation, as the app calls them)
after changes that write no new rating: its figures must equal a fresh computation on the same file."""

from __future__ import annotations

from pathlib import Path

from tests.support import Script, judge, ok_body, spec_of
from tui_rater.service.live import LivePane, full_pane, merge
from tui_rater.store.study import Study
from tui_rater.ui.agreement import render_pane

PEOPLE = {"ann": [1, 2, 3, 4, 5, 4], "bea": [2, 2, 3, 4, 4, 4], "cy": [1, 3, 3, 5, 5, 4]}


def _study(tmp_path: Path, url: str) -> Study:
    """Six story items the people rated on grammaticality, and a judge (a loopback server: "4" always) on all."""
    study = Study.open(tmp_path / "pane.db")
    study.add_items(
        study.task("story"),
        [{"id": f"s{i}", "system": f"sys{i % 2}", "prompt": f"P{i}.", "story": f"Story {i}."} for i in range(6)],
    )
    keys = [item.key for item in study.items("story")]
    for name, values in PEOPLE.items():
        rater = study.human(name)
        for key, value in zip(keys, values):
            study.add_rating(key, "grammaticality", rater.id, float(value))
    judge(study, spec_of("api:m", base_url=url, max_retries=0))
    return study


def _text(study: Study, sums_pane: LivePane, previous) -> tuple[str | None, object]:
    """What the pane shows now: the running sums' look merged over the full computation (None: it would not
    recompute, as nothing it watches changed)."""
    look = sums_pane.look(study, always=True)
    assert look is not None
    data, marker, _seen = full_pane(study, "story", previous)
    if data is None:
        return None, marker
    merged = merge(data, look.sums, look.task, look.queue, look.failures)
    return render_pane(merged, 0, 0).plain, marker


def _fresh(study: Study) -> str:
    text, _ = _text(study, LivePane("story"), None)
    assert text is not None
    return text


def test_the_open_pane_shows_what_reparse_restored(fake_server, cli, tmp_path):
    study = _study(tmp_path, fake_server(Script([(200, {}, ok_body("I would rate it a 4."), 0)])))
    # a parser that misread every reply as 1 (what reparse exists for): the pane, open, shows it
    with study._db.conn as conn:
        conn.execute("UPDATE ratings SET value = 1 WHERE job_id IS NOT NULL")
    open_pane = LivePane("story")
    before, marker = _text(study, open_pane, None)
    assert before == _fresh(study)
    code, out, err = cli("reparse", "--db", study.path)
    assert code == 0 and "changed" in out, err
    after, _ = _text(study, open_pane, marker)
    assert after is not None, "the full computation saw no change after reparse"
    assert after == _fresh(study) != before


def test_the_open_pane_drops_a_voided_judge_reading(fake_server, tmp_path):
    from tui_rater.store.jobs import void_result

    study = _study(tmp_path, fake_server(Script([(200, {}, ok_body("I would rate it a 4."), 0)])))
    open_pane = LivePane("story")
    _text(study, open_pane, None)
    (job,) = study._db.conn.execute("SELECT job_id FROM ratings WHERE id = (SELECT max(id) FROM ratings)").fetchone()
    void_result(study, job, [], "contradiction", "the batch's results contradicted themselves")
    after, _ = _text(study, open_pane, None)
    assert after == _fresh(study)


def test_a_rating_given_the_voided_ratings_id_is_counted(fake_server, tmp_path):
    """Ratings have no AUTOINCREMENT: once the newest rating is voided (deleted), the next rating stored takes its
    id. The open pane had read up to that id; it must still read the new rating (on another item), and drop the
    voided one."""
    from tui_rater.store.jobs import void_result

    study = _study(tmp_path, fake_server(Script([(200, {}, ok_body("I would rate it a 4."), 0)])))
    open_pane = LivePane("story")
    _text(study, open_pane, None)
    newest, job, voided_item = study._db.conn.execute(
        "SELECT id, job_id, item_key FROM ratings WHERE id = (SELECT max(id) FROM ratings)"
    ).fetchone()
    void_result(study, job, [], "contradiction", "the batch's results contradicted themselves")
    other = next(item.key for item in study.items("story") if item.key != voided_item)
    ann = study.human("ann")  # a rater the pane knows (a new one would rebuild its sums)
    assert study.add_rating(other, "cohesiveness", ann.id, 2.0) == newest  # the id is given again
    after, _ = _text(study, open_pane, None)
    assert after == _fresh(study)
    assert open_pane.sums is not None and open_pane.sums.changes_seen > 0

"""A judge that is not agreement-ready never gets a plain "yes: may replace" (issue 30, items 3 and 7): its verdict
is "yes* (not agreement-ready)" in the verdict table and in the across-questions table (which showed "yes" with none
of the caveats), the reason is said once under each table (the caption repeated it once per row: 21 copies), and the
implicit score's probability on yes / no counts as a constrained reply's on the scale does. Through the real CLI."""

from __future__ import annotations

import html
import json

from tests.stats.ratings import insert
from tests.stats.simulated import likert_study
from tests.support import run_cli_process
from tui_rater.store.db import write
from tui_rater.store.study import Study


def _study(tmp_path):
    """Three people on 40 stories; ``copycat`` copies the first (Calderon et al.: it wins), as three constrained
    judges whose every reply came from 13 % of the probability on the scale (the README's first judge measured)."""
    db = tmp_path / "v.db"
    likert_study(db, humans=3, prompts=20, seed=1)
    study = Study.open(db)
    copycat = study._db.conn.execute("SELECT id FROM raters WHERE name = 'copycat'").fetchone()[0]
    copied = study._db.conn.execute(
        "SELECT item_key, attribute, value FROM ratings WHERE rater_id = ?", [copycat]
    ).fetchall()
    with write(study._db) as conn:
        conn.execute("DELETE FROM ratings WHERE rater_id = ?", [copycat])
    for k in range(3):
        judge = study.judge(f"small-{k}", {"api_model": f"small-{k}", "mode": "constrained"})
        for item_key, attribute, value in copied:
            insert(study, item_key, attribute, judge.id, value, details={"mass": 0.13})
    study.close()
    return db


def _report(db, *flags):
    done = run_cli_process("report", "--db", db, "--task", "story", *flags)
    assert done.returncode == 0, done.stderr
    return done.stdout


REASON = "40 of 40 passes put less than 0.5 of the next-token probability on the scale (mean 0.13)"


def test_a_not_ready_judge_s_yes_is_qualified_and_its_reason_said_once(tmp_path):
    db = _study(tmp_path)
    records = json.loads(_report(db, "--format", "json"))["tasks"]["story"]
    ready = {(r["evaluator"], r["attribute"]): r["value"] for r in records if r["statistic"] == "agreement_ready"}
    names = {f"small-{k}" for k in range(3)}
    small = {key: value for key, value in ready.items() if key[0] in names}
    assert len(small) == 6 and set(small.values()) == {0.0}
    passed = [
        r
        for r in records
        if r["table"] in ("verdict", "verdict_across") and r["statistic"] == "verdict" and r["evaluator"] in names
    ]
    assert len(passed) == 12 and all(r["value"] == 1.0 for r in passed)  # the test itself passes every time ...

    markdown = _report(db, "--format", "markdown")
    lines = markdown.splitlines()
    verdict_at = next(i for i, line in enumerate(lines) if line.startswith("## Can the judge replace"))
    across_at = next(i for i, line in enumerate(lines) if line.startswith("## Alternative annotator test across"))
    for start in (verdict_at, across_at):
        caption = lines[start]
        table = lines[start + 4 : lines.index("", start + 4)]
        rows = [line for line in table if "small-" in line]
        assert len(rows) == 6 and any("| random |" in line for line in table)  # a judge that is ready: no mark
        # ... but never plainly: qualified, with the caveat, on every row (the across table had none)
        assert not any("yes: may replace" in row or "| yes |" in row for row in rows), rows
        assert all("yes* (not agreement-ready)" in row and "⚠ not agreement-ready [1]" in row for row in rows), rows
        assert all(REASON not in row for row in rows)
        # the reason once, under the table (it was once per row in the caption)
        assert caption.count("not agreement-ready") == 1 and caption.count(REASON) == 1, caption
        assert f"[1] not agreement-ready: {REASON}" in caption
    # the ε the verdict used, once
    assert lines[verdict_at].count("ε = 0.2") == 1

    page = html.unescape(_report(db, "--format", "html"))
    captions = [part.split("</caption>")[0] for part in page.split("<caption>")[1:]]
    verdicts = [c for c in captions if c.startswith(("Can the judge replace", "Alternative annotator test across"))]
    assert len(verdicts) == 2 and all(c.count(REASON) == 1 for c in verdicts)
    rows = [row for row in page.split("<tr>") if "<td>small-" in row and "yes" in row]
    assert len(rows) == 12 and not any("yes: may replace" in row for row in rows)
    assert page.count("yes* (not agreement-ready)") == 12
    box = page.split("<div class=caveats>")[1].split("</div>")[0]
    assert box.count(REASON) == 1  # the caveats beside the verdicts: each distinct reason once, its rows named


def test_the_implicit_score_s_probability_on_yes_no_decides_readiness(tmp_path):
    """An implicit judge whose every reading is ``ok`` from p(yes) + p(no) = 0.265 among the top tokens (SmolLM2's)
    was called agreement-ready; the report now says why it is not, in the check's words."""
    db = tmp_path / "i.db"
    study = Study.open(db)
    study.add_items(
        study.task("story-explicit"),
        [{"id": f"x{i}", "system": "s", "prompt": f"P{i}", "story": f"S{i}"} for i in range(4)],
    )
    judge = study.judge("implicit-small", {"api_model": "m", "mode": "implicit"})
    tight = study.judge("implicit-sure", {"api_model": "n", "mode": "implicit"})
    for item in study.items("story-explicit"):
        top = [["Yes", 0.2], ["No", 0.065], ["The", 0.3]]
        insert(study, item.key, "overall", judge.id, 20.0, details={"p_yes": 0.2, "p_no": 0.065, "top5": top})
        sure = [["Yes", 0.7], ["No", 0.25]]
        insert(study, item.key, "overall", tight.id, 70.0, details={"p_yes": 0.7, "p_no": 0.25, "top5": sure})
    study.close()
    done = run_cli_process("report", "--db", db, "--task", "story-explicit", "--format", "json")
    assert done.returncode == 0, done.stderr
    records = json.loads(done.stdout)["tasks"]["story-explicit"]
    ready = {r["evaluator"]: r for r in records if r["statistic"] == "agreement_ready"}
    assert ready["implicit-small"]["value"] == 0.0
    assert ready["implicit-small"]["note"] == (
        "4 of 4 passes put less than 0.5 of the next-token probability on yes / no (mean 0.27)"
    )
    assert ready["implicit-sure"]["value"] == 1.0

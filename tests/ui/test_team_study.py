"""Issue 21's study, end to end through the real CLI, the real app in tmux and a real browser: a lead plans K = 2
with a 3-person subset and 5 % gold for alice, bob and carol; alice and bob rate at the same time in terminals,
carol through her personal link in Chromium; the lead adjudicates their disagreements and reports against the
adjudicated values. Every number `progress` gives is checked against the ratings table."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.serving import ServeProcess
from tests.support import run_cli_process
from tests.ui.test_browser import CHROMIUM, TIMEOUT_MS, Terminal
from tests.ui.test_terminal_team import HEADER, TASK, cli_ok, rows, titles_study
from tests.ui.tmux import TmuxApp, annotate_command, flat, needs_tmux, wait_for

pytestmark = [
    pytest.mark.terminal,
    pytest.mark.browser,
    needs_tmux,
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium)"),
]


def _planned(db: Path) -> dict[str, int]:
    return dict(rows(db, "SELECT ra.name, count(*) FROM assignments a JOIN raters ra ON ra.id = a.rater_id GROUP BY 1"))


def _rated(db: Path, name: str) -> int:
    return rows(
        db,
        "SELECT count(DISTINCT r.item_key) FROM ratings r JOIN raters ra ON ra.id = r.rater_id "
        "WHERE ra.name = ? AND r.retracted = 0",
        name,
    )[0][0]


def test_a_team_study_planned_rated_in_terminals_and_a_browser_adjudicated_and_reported(tmp_path):
    from playwright.sync_api import sync_playwright

    db = titles_study(tmp_path, 20, gold=2)
    out = cli_ok(
        "assign", "--db", db, "--task", TASK, "--annotators", "alice,bob,carol", "--per-item", "2",
        "--overlap", "0.2:3", "--gold-rate", "0.05",
    )  # fmt: skip
    assert "alt-test" in out  # the plan says what its design allows before it is stored
    planned = _planned(db)
    assert set(planned) == {"alice", "bob", "carol"}

    # alice and bob at the same time, each in a terminal of their own; alice answers 4, bob 2
    alice = TmuxApp(annotate_command(db, "alice", TASK), tmp_path, env="env TERM=xterm")
    bob = TmuxApp(annotate_command(db, "bob", TASK), tmp_path, env="env TERM=xterm")
    try:
        alice.wait_text("q quit")
        bob.wait_text("q quit")
        for n in range(1, max(planned["alice"], planned["bob"]) + 1):
            for app, name, key in ((alice, "alice", "4"), (bob, "bob", "2")):
                if n <= planned[name]:
                    app.keys(key)
            for app, name in ((alice, "alice"), (bob, "bob")):
                if n <= planned[name]:
                    app.wait_screen(lambda s, n=n: bool(HEADER.search(flat(s))) and int(HEADER.search(flat(s))[3]) >= n)
        alice.keys("q")
        bob.keys("q")
        assert alice.wait_status() == 0 and bob.wait_status() == 0
    finally:
        alice.close()
        bob.close()

    # carol in a browser, through her personal link; she answers 3
    server = ServeProcess(db, "--task", TASK, "--annotators", "carol")
    try:
        link = server.links()["carol"]
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], timeout=TIMEOUT_MS)
            try:
                page = browser.new_page(viewport={"width": 1100, "height": 700})
                page.set_default_timeout(TIMEOUT_MS)
                terminal = Terminal(page)
                page.goto(link)
                terminal.wait_text("carol", "fluency")
                page.click("#terminal")
                for n in range(1, planned["carol"] + 1):
                    terminal.keys("3")
                    assert wait_for(lambda n=n: _rated(db, "carol") >= n, TIMEOUT_MS / 1000), n
                page.close()
            finally:
                browser.close()
        assert server.wait_line(lambda line: line == "carol: session ended", timeout=TIMEOUT_MS / 1000)
    finally:
        assert server.stop() == 0, server.output()

    # progress: every number against the ratings table
    (task,) = json.loads(cli_ok("progress", "--db", db, "--format", "json"))
    assert task["team_share"] == 1.0
    for row in task["annotators"]:
        name = row["annotator"]
        assert row["done"] == row["assigned"] == planned[name] == _rated(db, name) and row["remaining"] == 0
        (gold_answered,) = rows(
            db,
            "SELECT count(*) FROM ratings r JOIN raters ra ON ra.id = r.rater_id JOIN gold g "
            "ON g.item_key = r.item_key AND g.attribute = r.attribute WHERE ra.name = ?",
            name,
        )[0]
        assert row["gold_answered"] == gold_answered >= 1
    per_item = [
        n
        for (n,) in rows(
            db,
            "SELECT count(DISTINCT rater_id) FROM ratings WHERE item_key NOT IN (SELECT item_key FROM gold) "
            "GROUP BY item_key",
        )
    ]
    assert len(per_item) == 20 and sorted(per_item).count(3) == 4 and sorted(per_item).count(2) == 16

    # the lead adjudicates: every item where two of them disagree is listed; the first decided in the app
    listed = json.loads(cli_ok("adjudicate", "--db", db, "--task", TASK, "--adjudicator", "lead", "--format", "json"))
    assert listed  # alice 4, bob 2, carol 3: every shared item disagrees
    command = [sys.executable, "-m", "tui_rater.cli", "adjudicate", "--db", str(db), "--task", TASK]
    app = TmuxApp([*command, "--adjudicator", "lead"], tmp_path, size=(80, 24))
    try:
        app.wait_text("lead (adjudicator)", "0/")
        app.key("Enter")
        app.wait_text("item 1/")
        app.keys("3")
        app.wait_text("1/")
        app.keys("q")
        assert app.wait_status() == 0
    finally:
        app.close()
    decided = rows(
        db, "SELECT count(*) FROM ratings r JOIN raters ra ON ra.id = r.rater_id WHERE ra.kind = 'adjudicator'"
    )[0][0]
    assert decided == 1

    # the report: gold left out and said so; against the adjudicated value where there is one
    plain = run_cli_process("report", "--db", db, "--task", TASK, "--format", "json")
    adjudicated = run_cli_process(
        "report", "--db", db, "--task", TASK, "--format", "json", "--reference", "adjudicated"
    )
    assert plain.returncode == 0 and adjudicated.returncode == 0, (plain.stderr, adjudicated.stderr)
    assert "gold item(s) of title-fluency are left out" in plain.stderr
    assert "adjudicated value on 1 item question(s)" in adjudicated.stderr
    assert json.loads(plain.stdout)["tasks"][TASK] and json.loads(adjudicated.stdout)["tasks"][TASK]
    assert sqlite3.connect(db).execute("PRAGMA integrity_check").fetchone()[0] == "ok"

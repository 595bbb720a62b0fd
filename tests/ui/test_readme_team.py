"""The README's team recipe ("Running a study with a team"), as pasted: every command of its steps' code blocks,
in their order, taken from README.md itself (as tests/ui/test_newcomer.py does for the first command), so the
recipe cannot rot again (step 3 lacked `--as`, step 6 `--adjudicator`: both failed when pasted).

The placeholders are those the README names: `titles.csv` is a file with the columns its comment gives
(`id,title,gold_fluency`); step 4 runs on the host with the file (`ssh lab-host` is how an annotator gets
there, `/srv/study.db` is the study: here the default `./tui-rater.db` the other steps use), once per
annotator of the plan ("each person opens the app under their name"). Nobody here is `lena`: who runs a
command is only what the commands say."""

from __future__ import annotations

import json
import os
import re
import shlex
import sqlite3
import sys
from pathlib import Path

import pytest

from tests.support import ROOT, run_cli_process
from tests.ui.test_terminal_team import rate_through
from tests.ui.tmux import TmuxApp, flat, needs_tmux

pytestmark = [pytest.mark.terminal, needs_tmux]

SECTION = "### Running a study with a team"


def recipe() -> list[list[str]]:
    """The commands of the section's ```bash blocks, in order: continuation lines joined, comments dropped."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    start = text.index(SECTION)
    section = text[start : text.index("\n### ", start + len(SECTION))]
    commands = []
    for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        commands += [shlex.split(line, comments=True) for line in joined.splitlines() if line.strip()]
    return commands


def titles_csv(path: Path, regular: int = 18, gold: int = 3) -> None:
    lines = ["id,title,gold_fluency"] + [f"t{i},Title number {i} of the recipe," for i in range(regular)]
    lines += [f"g{i},Gold title {i},{1 + i % 5}" for i in range(gold)]
    path.write_text("\n".join(lines) + "\n")


def in_terminal(command: list[str], folder: Path, environment: dict[str, str]) -> TmuxApp:
    """``command`` (a `tui-rater` line of the README) in tmux at 80x24, in ``folder``, as its own program."""
    cli = [sys.executable, "-m", "tui_rater.cli", *command[1:]]
    setting = " ".join(f"{name}={shlex.quote(value)}" for name, value in environment.items())
    unset = "-u TUI_RATER_DB -u TUI_RATER_ANNOTATOR"
    return TmuxApp(cli, folder, env=f"cd {shlex.quote(str(folder))} && env {unset} TERM=xterm {setting}")


def test_the_team_recipe_runs_as_pasted(tmp_path):
    commands = recipe()
    programs = [words[words.index("tui-rater") + 1] for words in commands]
    assert programs == ["import", "roles", "assign", "assign", "annotate", "progress", "adjudicate", "report"]
    titles_csv(tmp_path / "titles.csv")
    study = tmp_path / "tui-rater.db"  # where every step without --db puts it (README: Where data lives)
    # nobody is lena unless a command says so: no annotator from the environment or a config file
    who = {"USER": "tester", "LOGNAME": "tester", "TUI_RATER_CONFIG": str(tmp_path / "none.toml")}
    environment = {k: v for k, v in os.environ.items() if k not in ("TUI_RATER_DB", "TUI_RATER_ANNOTATOR")}
    environment.update(who)
    for words in commands:
        words = words[words.index("tui-rater") :]  # `ssh lab-host`: we are on the host already
        words = [str(study) if word == "/srv/study.db" else word for word in words]
        program = words[1]
        if program == "annotate":
            planned = "SELECT r.name FROM assignments a JOIN raters r ON r.id = a.rater_id GROUP BY 1 ORDER BY 1"
            members = [name for (name,) in _rows(study, planned)]
            assert members == ["alice", "bob", "carol"]
            for member, key in zip(members, "424"):  # bob disagrees with the others: adjudication has work
                named = [member if word == "alice" else word for word in words]
                app = in_terminal(named, tmp_path, who)
                try:
                    screen = app.wait_text("your 0/", "q quit")
                    planned = int(re.search(r"your 0/(\d+)", flat(screen))[1])
                    rate_through(app, planned, key)
                    app.keys("q")
                    assert app.wait_status() == 0, app.printed()
                finally:
                    app.close()
        elif program == "adjudicate":
            app = in_terminal(words, tmp_path, who)
            try:
                app.wait_text("lena (adjudicator)", "0/", "decided")
                app.key("Enter")
                app.wait_text("item 1/", "decide: keys 1-5")
                app.keys("3")
                app.wait_text("item 2/", "1/")
                app.key("Escape")
                app.wait_text("decided · margin")  # the list (a q right after Escape would read as Alt-q)
                app.keys("q")
                assert app.wait_status() == 0, app.printed()
            finally:
                app.close()
        else:
            done = run_cli_process(*words[1:], cwd=tmp_path, env=environment)
            assert done.returncode == 0, (words, done.stderr)
            assert "Traceback" not in done.stderr
    # what the steps did: the plan stored with its seed, everyone's items rated, one decision, a report
    ((settings,),) = _rows(study, "SELECT settings FROM team_plans WHERE task = 'title-fluency'")
    assert json.loads(settings)["seed"] == 1
    rated = dict(_rows(study, "SELECT r.name, count(DISTINCT x.item_key) FROM ratings x JOIN raters r "
                              "ON r.id = x.rater_id WHERE r.kind = 'human' GROUP BY r.name"))  # fmt: skip
    planned = dict(_rows(study, "SELECT r.name, count(*) FROM assignments a JOIN raters r ON r.id = a.rater_id "
                                "GROUP BY r.name"))  # fmt: skip
    assert rated == planned
    assert _rows(study, "SELECT r.name, x.value FROM ratings x JOIN raters r ON r.id = x.rater_id "
                        "WHERE r.kind = 'adjudicator'") == [("lena (adjudicator)", 3.0)]  # fmt: skip


def _rows(db: Path, sql: str) -> list[tuple]:
    conn = sqlite3.connect(db, timeout=10)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()

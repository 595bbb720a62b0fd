"""Roles (issue 36.4): with leads named, every command that changes the study for everyone is a lead's.

Each such command is run through the real CLI twice on the same study: by someone who is not a lead (one
sentence, exit 2, the study byte for byte as it was) and by a lead (it runs). The list of lead commands is read
from the subcommand table itself, so a command added later is either declared a lead's or listed here as not."""

from __future__ import annotations

import argparse
import re
import shutil

import pytest

from tests.support import ROOT, digest
from tui_rater.store.study import Study

# the study: 4 stories from 2 systems on 2 prompts (what `spa setup` needs), an imported judge with ratings
STORIES = [
    {"id": f"s{i}", "system": "A" if i % 2 else "B", "prompt": f"Prompt {i // 2}.", "story": f"Story {i} of a cat."}
    for i in range(4)
]

URL = "http://127.0.0.1:9/v1"  # nothing listens: no command here needs a server

# every command that changes the study for everyone, and how a lead runs it successfully (exit 0)
LEAD_COMMANDS = {
    "assign": ["assign", "--task", "story", "--annotators", "ann,ben"],
    "roles --leads": ["roles", "--leads", "lena,bob"],
    "queue --cancel": ["queue", "--cancel"],
    "queue --retry": ["queue", "--retry"],
    "judges --forget": ["judges", "--forget", "judge-x", "--yes"],
    "jury": ["jury", "pair", "--members", "judge-x,judge-y"],
    "judge --batch --cancel": ["judge", "--model", "api:m", "--base-url", URL, "--batch", "--cancel"],
    "adjudicate": ["adjudicate", "--task", "story", "--adjudicator", "lena"],
    "reparse": ["reparse"],
    "import": ["import", "{items}", "--task", "story"],
    "import-ratings": ["import-ratings", "{ratings}"],
    "spa setup": ["spa", "setup", "--systems", "A,B", "--m", "2"],
    "demo": ["demo", "--no-app"],
    # a lead's `serve` runs until stopped: its success is `tests/cli/test_serve.py`'s; here only the refusal
    "serve": ["serve", "--task", "story", "--annotators", "ann", "--port", "0"],
}
# the rest only read, or add only the runner's own work (an annotator's ratings, a judge's run)
NOT_LEAD_COMMANDS = {
    "annotate", "tasks", "export", "info", "judge", "judges", "queue", "report", "spa", "progress", "certify", "verify",
    "sample-size",  # reads the study, stores nothing
}  # fmt: skip
NOT_LEAD_FLAGS = {
    "roles": [],  # listing the leads
    "assign": ["--dry-run"],  # stores nothing
    "adjudicate": ["--list"],  # prints the disagreements
    "judge": ["--batch"],  # a judge's own run, sent as a batch
    "jury": ["--list"],  # lists the juries
}


@pytest.fixture(scope="module")
def team_study(tmp_path_factory):
    folder = tmp_path_factory.mktemp("roles")
    db = folder / "base.db"
    study = Study.open(db)
    study.add_items(study.task("story"), STORIES)
    judge = study.judge("judge-x", {"imported_from": "x"})
    other = study.judge("judge-y", {"imported_from": "y"})  # a jury needs two
    for item in study.items("story"):
        study.add_rating(item.key, "cohesiveness", judge.id, 3.0)
        study.add_rating(item.key, "cohesiveness", other.id, 4.0)
    study.close()
    (folder / "items.csv").write_text("id,system,prompt,story\nn1,A,Prompt 9.,A new story.\n")
    (folder / "ratings.csv").write_text("item,rater,attribute,value\ns0,zed,cohesiveness,4\n")
    return folder


def _fresh(team_study, tmp_path, cli):
    db = tmp_path / "team.db"
    shutil.copy(team_study / "base.db", db)
    code, _out, err = cli("roles", "--db", db, "--leads", "lena", "--as", "lena")
    assert code == 0, err
    return db


def _argv(argv, team_study, db, who):
    filled = [a.format(items=team_study / "items.csv", ratings=team_study / "ratings.csv") for a in argv]
    at = 2 if filled[0] == "spa" else 1  # `spa setup` takes its flags after `setup`
    return [*filled[:at], "--db", str(db), *filled[at:], "--as", who]


@pytest.mark.parametrize("command", sorted(LEAD_COMMANDS))
def test_a_non_lead_is_refused_every_study_wide_command_and_a_lead_runs_it(command, team_study, tmp_path, cli):
    db = _fresh(team_study, tmp_path, cli)
    before = digest(db)
    code, out, err = cli(*_argv(LEAD_COMMANDS[command], team_study, db, "bob"))
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and err.startswith("tui-rater: error: only the study's leads (lena) may "), err
    assert "'bob' is not one" in err and not out
    assert digest(db) == before, f"`{command}` refused, but the study changed"
    if command == "serve":
        return
    code, out, err = cli(*_argv(LEAD_COMMANDS[command], team_study, db, "lena"))
    assert code == 0, (out, err)
    assert "only the study's leads" not in err


def _subcommands() -> dict[str, argparse.ArgumentParser]:
    from tui_rater.cli import _parser

    found: dict[str, argparse.ArgumentParser] = {}

    def walk(parser: argparse.ArgumentParser, prefix: str) -> None:
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, sub in action.choices.items():
                    found[f"{prefix}{name}"] = sub
                    walk(sub, f"{prefix}{name} ")

    walk(_parser(), "")
    return found


def _lead_action(parser: argparse.ArgumentParser, argv: list[str]) -> str | None:
    args = parser.parse_known_args(argv)[0]
    rule = getattr(args, "lead_action", None)
    return rule(args) if rule else None


def test_every_command_is_declared_a_leads_or_not_and_the_readme_lists_the_leads():
    """The subcommand table is the one place: a command that declares itself a lead's is in LEAD_COMMANDS (and so
    tested above), every other one is listed as not, and the README names exactly the lead commands."""
    commands = _subcommands()
    assert set(commands) == {c.split(" -")[0] for c in LEAD_COMMANDS} | NOT_LEAD_COMMANDS | {"spa setup"}
    for command, argv in LEAD_COMMANDS.items():
        name = "spa setup" if command == "spa setup" else command.split(" -")[0]
        parser = commands[name]
        given = [a for a in argv[len(name.split()) :] if not a.startswith("{")]
        assert _lead_action(parser, given + (["x"] if name in ("import", "import-ratings") else [])), command
    for name in NOT_LEAD_COMMANDS - {c.split(" -")[0] for c in LEAD_COMMANDS}:
        assert commands[name].get_default("lead_action") is None, name
    required = {"assign": ["--task", "t"], "adjudicate": ["--task", "t"], "judge": ["--model", "api:m"]}
    for name in ("judge", "judges", "queue"):  # without their study-wide flags
        assert _lead_action(commands[name], required.get(name, [])) is None, name
    for name, flags in NOT_LEAD_FLAGS.items():
        assert _lead_action(commands[name], required.get(name, []) + flags) is None, (name, flags)
    readme = (ROOT / "README.md").read_text()
    listed = re.search(r"only they may run (.*?)\.", readme.replace("\n", " "))
    assert listed, "the README's list of lead commands"
    assert set(re.findall(r"`([^`]+)`", listed[1])) == set(LEAD_COMMANDS)

"""A protocol package that misbehaves, through the real CLI (the walk-through's package, installed the same way).

Whatever the package's code does at import or when made -- exits, raises something that is not an
``Exception``, prints, declares what is not a protocol's -- and whatever an installed package's entry-point
metadata holds, the command that asked for it ends in one sentence naming the package, never a traceback and
never exit 0; a command that asks only the papers' protocols, and a study's other tasks once the package is
gone, are not affected.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.judge.test_fourth_protocol_package import (
    HUMAN_RATINGS,
    ITEMS,
    MODULE,
    PYPROJECT,
    TASK,
    cli,
    install,
    one_sentence,
)
from tests.support import Script, digest, ok_body

PACKAGE = "the package 'mt-bench-protocol' registers the protocol 'bracket-rating' as 'mt_bench_protocol:BracketRating'"
EXITS_WHEN_MADE = MODULE + "\n    def __init__(self):\n        raise SystemExit(0)\n"

BROKEN = {
    # sys.exit(0) at import ended `import` with status 0, having done nothing
    "exits at import": (
        MODULE + "\nimport sys\nsys.exit(0)\n",
        PYPROJECT,
        f"{PACKAGE}, which cannot be loaded (SystemExit: 0)",
    ),
    # not an Exception: it was a traceback
    "raises a BaseException at import": (
        MODULE + "\nclass Boom(BaseException):\n    pass\n\nraise Boom('boom')\n",
        PYPROJECT,
        f"{PACKAGE}, which cannot be loaded (Boom: boom)",
    ),
    "exits when made": (
        EXITS_WHEN_MADE,
        PYPROJECT,
        f"{PACKAGE}, which fails when made (SystemExit: 0)",
    ),
    # its own bug was "a bug in tui-rater" (exit 70)
    "fails when its name is read": (
        MODULE.replace('name: ClassVar[str] = "bracket-rating"', "name = property(lambda self: 1 / 0)"),
        PYPROJECT,
        f"{PACKAGE}, which fails when made (ZeroDivisionError: division by zero)",
    ),
    # accepted, then "a bug in tui-rater" at the first report
    "declares a level that is not one": (
        MODULE.replace("level: ClassVar[Level] = Level.ORDINAL", 'level = "ordinal-ish"'),
        PYPROJECT,
        f"{PACKAGE}, but its level 'ordinal-ish' is not one of 'nominal', 'ordinal', 'interval'",
    ),
    # said as "AttributeError: 'NoneType' object has no attribute 'group'"
    "names no module:object": (
        MODULE,
        PYPROJECT.replace('"mt_bench_protocol:BracketRating"', '"mt bench protocol!"'),
        "the package 'mt-bench-protocol' registers the protocol 'bracket-rating' as 'mt bench protocol!', which is not "
        "of the form 'module:object'",
    ),
    # what the package's exception says is shown literally (worked already; kept)
    "raises a message with escapes": (
        MODULE + "\nraise RuntimeError('\\x1b[31mred\\nsecond line')\n",
        PYPROJECT,
        f"{PACKAGE}, which cannot be loaded (RuntimeError: ⟨ESC⟩[31mred⟨LF⟩second line)",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_package_that_exits_raises_or_lies_is_one_sentence(tmp_path, case):
    module, pyproject, sentence = BROKEN[case]
    (tmp_path / "mt.toml").write_text(TASK)
    (tmp_path / "items.csv").write_text(ITEMS)
    env = install(tmp_path, module, pyproject)
    db = tmp_path / "mt.db"
    error = one_sentence(
        cli(
            "import",
            tmp_path / "items.csv",
            "--task",
            "mt-bench",
            "--task-file",
            tmp_path / "mt.toml",
            "--db",
            db,
            env=env,
        )
    )
    assert sentence in error, error
    assert not db.exists()


def test_what_a_package_prints_when_imported_goes_to_stderr_not_into_a_report(tmp_path):
    (tmp_path / "mt.toml").write_text(TASK)
    (tmp_path / "items.csv").write_text(ITEMS)
    (tmp_path / "human.csv").write_text(HUMAN_RATINGS)
    env = install(tmp_path, MODULE + "\nprint('mt-bench-protocol 0.1.0 loaded')\n")
    db = tmp_path / "mt.db"
    importing = ("import", tmp_path / "items.csv", "--task", "mt-bench", "--task-file", tmp_path / "mt.toml")
    assert cli(*importing, "--db", db, env=env).returncode == 0
    assert cli("import-ratings", tmp_path / "human.csv", "--db", db, env=env).returncode == 0
    done = cli("report", "--db", db, "--task", "mt-bench", "--format", "json", env=env)
    assert done.returncode == 0, done.stderr
    assert "mt-bench" in json.loads(done.stdout)["tasks"]  # the banner made this invalid JSON
    assert "mt-bench-protocol 0.1.0 loaded" in done.stderr


def test_an_installed_package_whose_entry_points_cannot_be_read_is_named(tmp_path):
    (tmp_path / "mt.toml").write_text(TASK)
    (tmp_path / "items.csv").write_text(ITEMS)
    good = install(tmp_path)
    # another package, with no protocol at all: importlib parses every package's entry_points.txt
    other = PYPROJECT.replace("mt-bench-protocol", "unrelated-tool").replace("tui_rater.protocols", "console_scripts")
    broken = install(tmp_path, "", other, name="other")
    [points] = (Path(broken["PYTHONPATH"])).glob("unrelated_tool-*.dist-info/entry_points.txt")
    points.write_text("[console_scripts]\nunrelated-tool\n")  # a line without "= module:object"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([good["PYTHONPATH"], broken["PYTHONPATH"]])}
    db = tmp_path / "mt.db"
    importing = ("import", tmp_path / "items.csv", "--task", "mt-bench", "--task-file", tmp_path / "mt.toml")
    # was "unexpected TypeError: Pair.__new__() missing 1 required positional argument -- a bug in tui-rater"
    error = one_sentence(cli(*importing, "--db", db, env=env))
    assert "the installed package 'unrelated-tool' has an entry_points.txt that cannot be read" in error, error
    assert not db.exists()
    assert cli("tasks", env=env).returncode == 0  # the papers' protocols never read it


@pytest.fixture
def study_with_a_package_task(tmp_path) -> tuple[Path, dict[str, str]]:
    """The demo study (the papers' tasks) plus the walk-through's task, imported with its package installed."""
    db = tmp_path / "study.db"
    assert cli("demo", "--no-app", "--db", db).returncode == 0
    (tmp_path / "mt.toml").write_text(TASK)
    (tmp_path / "items.csv").write_text(ITEMS)
    (tmp_path / "human.csv").write_text(HUMAN_RATINGS)
    env = install(tmp_path)
    importing = ("import", tmp_path / "items.csv", "--task", "mt-bench", "--task-file", tmp_path / "mt.toml")
    assert cli(*importing, "--db", db, env=env).returncode == 0
    assert cli("import-ratings", tmp_path / "human.csv", "--db", db, env=env).returncode == 0
    return db, env


UNINSTALLED = "the study's task 'mt-bench', attribute 1: unknown protocol 'bracket-rating'"


def test_a_study_keeps_its_other_tasks_when_a_protocol_package_is_uninstalled(study_with_a_package_task):
    db, _ = study_with_a_package_task
    before = digest(db)
    # every command on the study failed, the papers' tasks too, with "task file the study file, task 1, ..."
    done = cli("report", "--db", db, "--task", "hanna", "--format", "json")
    assert done.returncode == 0, done.stderr
    assert "hanna" in json.loads(done.stdout)["tasks"]
    assert cli("adjudicate", "--task", "hanna", "--list", "--db", db).returncode == 0
    # a command that needs the package's task still says so, in one sentence naming the task
    assert UNINSTALLED in one_sentence(cli("report", "--db", db, "--task", "mt-bench"))
    assert UNINSTALLED in one_sentence(cli("report", "--db", db))
    # the listing shows the tasks it can, names the one it cannot, and does not exit 0
    listing = cli("tasks", "--db", db)
    assert UNINSTALLED in one_sentence(listing)
    assert "hanna" in listing.stdout and "mt-bench" not in listing.stdout
    assert digest(db) == before


def test_a_broken_package_leaves_the_papers_protocols_alone(study_with_a_package_task, tmp_path):
    db, _ = study_with_a_package_task
    broken = install(tmp_path, MODULE + "\nimport sys\nsys.exit(0)\n", name="broken")
    assert cli("--help", env=broken).returncode == 0
    assert cli("report", "--db", db, "--task", "hanna", env=broken).returncode == 0
    error = one_sentence(cli("report", "--db", db, "--task", "mt-bench", env=broken))
    assert f"{PACKAGE}, which cannot be loaded (SystemExit: 0)" in error, error


LOUD = (
    MODULE.replace(
        'title: ClassVar[str] = "single-answer grading, [[rating]] (Zheng et al. 2023)"',
        'title: ClassVar[str] = "\\x1b[31mred [bold]title[/bold]"',
    )
    + """
    def variants(self, task, attribute):
        return ("\\x1b]0;pwn\\x07v1",)

    def format_value(self, attribute, value):
        return "·" if value is None else f"[bold red]{value:g}\\x1b[5m"
"""
)


def test_what_a_package_protocol_says_is_shown_literally(tmp_path, fake_server):
    # its title, its variant's name (stored in the judge's label) and how it shows a value: escapes and markup
    (tmp_path / "mt.toml").write_text(TASK)
    (tmp_path / "items.csv").write_text(ITEMS)
    (tmp_path / "human.csv").write_text(HUMAN_RATINGS + "q0,second,rating,9\n")
    env = install(tmp_path, LOUD)
    db = tmp_path / "mt.db"
    importing = ("import", tmp_path / "items.csv", "--task", "mt-bench", "--task-file", tmp_path / "mt.toml")
    assert cli(*importing, "--db", db, env=env).returncode == 0
    assert cli("import-ratings", tmp_path / "human.csv", "--db", db, env=env).returncode == 0
    url = fake_server(Script([(200, {}, ok_body("[[7]]"), 0)]))
    judging = ("judge", "--db", db, "--model", "api:m", "--base-url", url, "--samples", "1")
    assert cli(*judging, env=env).returncode == 0
    error = one_sentence(cli(*judging, "--mode", "distribution", env=env))
    assert "(⟨ESC⟩[31mred [bold]title[/bold]); use one of" in error, error
    judges = cli("judges", "--db", db, env=env)
    assert "⟨ESC⟩]0;pwn⟨BEL⟩v1" in judges.stdout
    listed = cli("adjudicate", "--task", "mt-bench", "--list", "--db", db, env=env)
    assert "expert [bold red]3⟨ESC⟩[5m" in listed.stdout
    assert not any(c in out for out in (judges.stdout, listed.stdout, error) for c in "\x1b\x07")


def test_ctrl_c_while_a_slow_package_imports_ends_the_command_cleanly(tmp_path):
    # a package that takes its time at import (a large model, a network call) is waited for; Ctrl-C still works
    started = tmp_path / "importing"
    slow = f"import pathlib, time\npathlib.Path({str(started)!r}).write_text('')\ntime.sleep(60)\n" + MODULE
    (tmp_path / "mt.toml").write_text(TASK)
    (tmp_path / "items.csv").write_text(ITEMS)
    env = install(tmp_path, slow)
    db = tmp_path / "mt.db"
    importing = ("import", tmp_path / "items.csv", "--task", "mt-bench", "--task-file", tmp_path / "mt.toml")
    command = [sys.executable, "-m", "tui_rater.cli", *map(str, importing), "--db", str(db)]
    with subprocess.Popen(command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as process:
        deadline = time.monotonic() + 60
        while not started.exists() and time.monotonic() < deadline and process.poll() is None:
            time.sleep(0.05)
        assert started.exists()
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=30)
    assert process.returncode == 130, stderr
    assert stderr.count("\n") == 1 and "interrupted" in stderr and "Traceback" not in stderr, stderr
    assert not db.exists()

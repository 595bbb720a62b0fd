"""A fourth paper's protocol in the user's own package (CONTRIBUTING.md), found by a separate `tui-rater` process.

The package is written here as a user would write it (a module and a ``pyproject.toml`` with an entry point in
the ``tui_rater.protocols`` group), installed by pip into a folder of its own that the CLI's processes get on
their ``PYTHONPATH`` (the test environment is left as it was), and used through the real CLI: a task file names
its protocol, a judge's replies are read by it, and the report shows its table. Nothing in tui_rater changes.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import sqlite3
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.support import ROOT, Script, ok_body, run_cli_process

MODULE = '''
"""MT-Bench's single-answer grading (Zheng et al. 2023): a 1-10 rating written as "[[7]]"."""

import re
from typing import ClassVar

from tui_rater.domain.parsing import ParseResult
from tui_rater.domain.protocols import EvaluationProtocol, Level


class BracketRating(EvaluationProtocol):
    name: ClassVar[str] = "bracket-rating"
    title: ClassVar[str] = "single-answer grading, [[rating]] (Zheng et al. 2023)"
    level: ClassVar[Level] = Level.ORDINAL
    scale_kinds: ClassVar[tuple[str, ...]] = ("likert",)

    def parse(self, text, attribute, variant):
        found = {float(m) for m in re.findall(r"\\[\\[(\\d+(?:\\.\\d+)?)\\]\\]", text)}
        if len(found) != 1:
            return ParseResult(None, "ambiguous" if found else "no_number")  # never a guess
        value = found.pop()
        return ParseResult(value) if attribute.scale.contains(value) else ParseResult(None, "out_of_range")
'''


def _walk_through(marker: str) -> str:
    """The TOML block of CONTRIBUTING.md's walk-through that holds ``marker``: the test runs what the guide says."""
    blocks = re.findall(r"```toml\n(.*?)```", (ROOT / "CONTRIBUTING.md").read_text(), flags=re.DOTALL)
    [block] = [b for b in blocks if marker in b]
    return block


PYPROJECT = _walk_through('[project.entry-points."tui_rater.protocols"]')
TASK = _walk_through("[[task.attributes]]")

ITEMS = "id,system,question,answer\n" + "".join(f"q{i},{'ab'[i % 2]},Question {i}?,Answer {i}.\n" for i in range(6))
HUMAN_RATINGS = "item,rater,attribute,value\n" + "".join(
    f"q{i},expert,rating,{v}\n" for i, v in enumerate((3, 7, 9, 2, 8, 5))
)


def _wheel(project: Path, out: Path) -> Path:
    """The wheel setuptools would build from ``project`` (its module, and its pyproject's name, version and entry
    points). Written here because the test environment's setuptools cannot build one offline (it lacks
    ``bdist_wheel``); pip then installs it as it installs any wheel."""
    meta = tomllib.loads((project / "pyproject.toml").read_text())["project"]
    dist = f"{meta['name'].replace('-', '_')}-{meta['version']}"
    groups = meta.get("entry-points", {})
    files = {
        **{p.name: p.read_bytes() for p in project.glob("*.py")},
        f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {meta['name']}\nVersion: {meta['version']}\n",
        f"{dist}.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: tests\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
        f"{dist}.dist-info/entry_points.txt": "".join(
            f"[{group}]\n" + "".join(f"{name} = {value}\n" for name, value in entries.items()) + "\n"
            for group, entries in groups.items()
        ),
    }
    record = ""
    for path, content in files.items():
        data = content.encode() if isinstance(content, str) else content
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record += f"{path},sha256={digest},{len(data)}\n"
    wheel = out / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, content in files.items():
            archive.writestr(path, content)
        archive.writestr(f"{dist}.dist-info/RECORD", record + f"{dist}.dist-info/RECORD,,\n")
    return wheel


def install(
    tmp_path: Path,
    module: str = MODULE,
    pyproject: str = PYPROJECT,
    name: str = "pkg",
    module_name: str = "mt_bench_protocol",
) -> dict[str, str]:
    """Write the user's package, pip-install it into its own folder; the environment a CLI process finds it in."""
    project = tmp_path / name
    project.mkdir()
    (project / f"{module_name}.py").write_text(module)
    (project / "pyproject.toml").write_text(pyproject)
    target = tmp_path / f"{name}-site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-index", "--target", str(target)]
    subprocess.run([*pip, str(_wheel(project, tmp_path))], check=True, capture_output=True, timeout=120)
    return {**os.environ, "PYTHONPATH": str(target)}


def cli(*args: object, env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return run_cli_process(*map(str, args), env=env)


def one_sentence(result: subprocess.CompletedProcess) -> str:
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    return result.stderr


def test_a_protocol_from_the_users_own_package_is_found_by_a_separate_process(tmp_path, fake_server):
    (tmp_path / "mt.toml").write_text(TASK)
    (tmp_path / "items.csv").write_text(ITEMS)
    (tmp_path / "human.csv").write_text(HUMAN_RATINGS)
    db = tmp_path / "mt.db"
    importing = ("import", tmp_path / "items.csv", "--task", "mt-bench", "--task-file", tmp_path / "mt.toml")

    # not installed: the task file's protocol is unknown, and nothing is written
    assert "unknown protocol 'bracket-rating'" in one_sentence(cli(*importing, "--db", db))
    assert not db.exists()

    env = install(tmp_path)
    assert (done := cli(*importing, "--db", db, env=env)).returncode == 0, done.stderr
    assert (done := cli("import-ratings", tmp_path / "human.csv", "--db", db, env=env)).returncode == 0, done.stderr

    # the package's parser reads the reply: the bracketed 7, where a plain Likert reading would take the 3
    url = fake_server(Script([(200, {}, ok_body("I nearly gave it a 3, but: [[7]]"), 0)]))
    judging = ("judge", "--db", db, "--model", "api:m", "--base-url", url, "--samples", "1")
    assert (done := cli(*judging, env=env)).returncode == 0, done.stderr
    with sqlite3.connect(db) as conn:
        judged = conn.execute("SELECT value, parse_status FROM ratings WHERE job_id IS NOT NULL").fetchall()
    conn.close()
    assert judged == [(7.0, "ok")] * 6

    done = cli("report", "--db", db, "--task", "mt-bench", "--format", "json", env=env)
    assert done.returncode == 0, done.stderr
    table1 = [r for r in json.loads(done.stdout)["tasks"]["mt-bench"] if r["table"] == "table1"]
    means = {(r["evaluator"], r["system"]): r["value"] for r in table1 if r["statistic"] == "mean"}
    assert means[("humans", "a")] == pytest.approx((3 + 9 + 8) / 3) and means[("humans", "b")] == pytest.approx(
        (7 + 2 + 5) / 3
    )
    assert {v for (evaluator, _), v in means.items() if evaluator != "humans"} == {7.0}

    # the study remembers the protocol's name; without the package a later command says so in one sentence
    assert "unknown protocol 'bracket-rating'" in one_sentence(cli("report", "--db", db, "--task", "mt-bench"))


BROKEN = {
    "fails to import": (
        MODULE + "\nraise ImportError('no module named mt_bench_helpers')\n",
        PYPROJECT,
        "the package 'mt-bench-protocol' registers the protocol 'bracket-rating' as 'mt_bench_protocol:BracketRating',"
        " which cannot be loaded (ImportError: no module named mt_bench_helpers)",
    ),
    "names no protocol": (
        "BracketRating = 7\n",
        PYPROJECT,
        "the package 'mt-bench-protocol' registers 'mt_bench_protocol:BracketRating' as the protocol "
        "'bracket-rating', but it is not an EvaluationProtocol",
    ),
    "calls itself by another name": (
        MODULE.replace('name: ClassVar[str] = "bracket-rating"', 'name: ClassVar[str] = "brackets"'),
        PYPROJECT,
        "the package 'mt-bench-protocol' registers the protocol 'bracket-rating', but its class calls itself "
        "'brackets'",
    ),
    "takes a built-in name": (
        MODULE,
        PYPROJECT + 'likert = "mt_bench_protocol:BracketRating"\n',
        "the package 'mt-bench-protocol' registers a protocol named 'likert'",
    ),
}


@pytest.mark.parametrize("case", list(BROKEN))
def test_a_package_whose_protocol_cannot_be_used_is_one_sentence(tmp_path, case):
    module, pyproject, sentence = BROKEN[case]
    (tmp_path / "mt.toml").write_text(TASK)
    (tmp_path / "items.csv").write_text(ITEMS)
    env = install(tmp_path, module, pyproject)
    db = tmp_path / "mt.db"
    importing = ("import", tmp_path / "items.csv", "--task", "mt-bench", "--task-file", tmp_path / "mt.toml")
    assert sentence in one_sentence(cli(*importing, "--db", db, env=env))
    assert not db.exists()
    # a command that asks only the papers' protocols does not look at the package at all
    assert cli("tasks", env=env).returncode == 0


def test_a_package_protocol_naming_a_report_section_that_does_not_exist_is_one_sentence(tmp_path):
    (tmp_path / "mt.toml").write_text(TASK)
    (tmp_path / "items.csv").write_text(ITEMS)
    (tmp_path / "human.csv").write_text(HUMAN_RATINGS)
    module = MODULE + '    report_sections: ClassVar[tuple[str, ...]] = ("table1", "radar-plot")\n'
    env = install(tmp_path, module)
    db = tmp_path / "mt.db"
    importing = ("import", tmp_path / "items.csv", "--task", "mt-bench", "--task-file", tmp_path / "mt.toml")
    assert cli(*importing, "--db", db, env=env).returncode == 0
    assert cli("import-ratings", tmp_path / "human.csv", "--db", db, env=env).returncode == 0
    error = one_sentence(cli("report", "--db", db, "--task", "mt-bench", env=env))
    assert "the protocol 'bracket-rating' names report sections that do not exist: radar-plot" in error

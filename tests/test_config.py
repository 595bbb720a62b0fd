"""The config file: a typo gets the closest valid name, in one sentence."""

from __future__ import annotations

import os

import pytest

from tests.support import run_cli_process
from tui_rater.config import load_settings
from tui_rater.domain.errors import UserError


def _config(tmp_path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text)
    os.chmod(path, 0o600)
    return path


def test_a_typo_in_keys_is_a_warning_and_the_rest_applies(tmp_path):
    path = _config(tmp_path, '[keys]\nundp = "z"\nskip = "k"\nquit = "shift+ctrl+q,q"\n')
    settings = load_settings(path, environ={})
    assert settings.keys == {"skip": "k", "quit": "q"}
    assert settings.warnings == (
        f"config file {path}: [keys] has no action 'undp' (did you mean 'undo'?); ignored",
        f"config file {path}: [keys] quit = 'shift+ctrl+q,q': 'shift+ctrl+q' is not a key Textual knows "
        "(did you mean 'ctrl+shift+q'?); ignored",
    )


def test_the_cli_prints_the_warning_and_goes_on(tmp_path):
    path = _config(tmp_path, '[keys]\nundp = "z"\n')
    env = {**os.environ, "TUI_RATER_CONFIG": str(path)}
    items = tmp_path / "t.csv"
    items.write_text("id,title\nt1,A title\n")
    result = run_cli_process("import", items, "--task", "title-fluency", "--db", tmp_path / "s.db", env=env)
    assert result.returncode == 0, result.stderr
    assert result.stderr == (
        f"tui-rater: warning: config file {path}: [keys] has no action 'undp' (did you mean 'undo'?); ignored\n"
    )


@pytest.mark.parametrize(
    "text,message",
    [
        ('anotator = "me"\n', "unknown setting 'anotator' (did you mean 'annotator'?)"),
        ("[judge]\ntemprature = 0.5\n", "unknown [judge] setting 'temprature' (did you mean 'temperature'?)"),
        ("[judge]\napi_kee = 'x'\n", "unknown [judge] setting 'api_kee' (did you mean 'api_key'?)"),
        ("colour = 1\n", "unknown setting 'colour' (known: annotator, db, judge, keys, task_files)"),
    ],
)
def test_a_typo_in_a_setting_is_an_error_naming_the_closest(tmp_path, text, message):
    # a judge setting left at its default by a typo would change the numbers: refuse, do not guess
    path = _config(tmp_path, text)
    with pytest.raises(UserError) as info:
        load_settings(path, environ={})
    assert str(info.value) == f"config file {path}: {message}"


def test_judge_options_are_read_as_one_table_per_backend(tmp_path):
    # which options a backend takes is its own business, checked when its judge is made
    # (tests/judge/test_backend_package.py); the file only says whose they are
    path = _config(tmp_path, '[judge]\nsamples = 2\n\n[judge.options.echo]\npitch = 3\ntag = "lab-7"\nloud = true\n')
    judge = load_settings(path, environ={}).judge
    assert judge.backend_options == {"echo": {"pitch": 3, "tag": "lab-7", "loud": True}}
    assert judge.config_file == str(path) and judge.decoding.samples == 2


SHAPE = "[judge.options] holds one table per backend, e.g. [judge.options.echo] with pitch = 3"


@pytest.mark.parametrize(
    "text,message",
    [
        ("[judge]\noptions = 3\n", SHAPE),
        ("[judge.options]\npitch = 3\n", SHAPE),
        ("[judge.options.echo]\npitch = [1, 2]\n", "[judge.options.echo] pitch must be text, a number, true or false"),
        ("[judge]\noptons = 3\n", "unknown [judge] setting 'optons' (did you mean 'options'?)"),
    ],
)
def test_judge_options_not_shaped_as_tables_of_values_are_an_error(tmp_path, text, message):
    path = _config(tmp_path, text)
    with pytest.raises(UserError) as info:
        load_settings(path, environ={})
    assert str(info.value) == f"config file {path}: {message}"

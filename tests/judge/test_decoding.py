"""A judge's decoding settings are one value (domain/decoding.py), carried whole from the config file and the flags to
the server's request body, the engine's sampler and the stored record (issue 23, item 1)."""

from __future__ import annotations

import argparse
import json
import os
from dataclasses import dataclass, fields, replace
from typing import ClassVar

import pytest

from tests.support import SAMPLE, Script, ok_body, run_cli_process
from tui_rater.cli.common import decoding_flags, decoding_given
from tui_rater.config import _judge_from, load_settings
from tui_rater.domain.decoding import KNOBS, Decoding, knob
from tui_rater.judge.backends.api import ApiBackend
from tui_rater.judge.engine import engine as engine_module
from tui_rater.judge.engine.sampling import SequenceSampler
from tui_rater.judge.spec import JudgeSpec, provenance
from tui_rater.service.judging import JudgeOptions, judge_study, resolve_spec
from tui_rater.store.study import Study

CHAT = [{"role": "user", "content": "Rate this story from 1 to 5."}]


def _config(tmp_path, text: str):
    path = tmp_path / "config.toml"
    path.write_text(text, encoding="utf-8")
    path.chmod(0o600)
    return path


def test_a_config_file_and_flags_reach_the_request_body(tmp_path, fake_server):
    """The real CLI: [judge] keys under flags, each request's body carries them; its seed is the request's own."""
    db = tmp_path / "s.db"
    assert run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db).returncode == 0
    script = Script([(200, {}, ok_body("4"), 0)])
    url = fake_server(script)
    config = _config(tmp_path, "[judge]\ntemperature = 0.3\ntop_p = 0.8\nmax_tokens = 40\nseed = 9\n")
    env = {**os.environ, "TUI_RATER_CONFIG": str(config)}
    args = ("judge", "--db", db, "--model", "api:m", "--base-url", url, "--limit", "1", "--samples", "1")
    result = run_cli_process(*args, "--top-p", "0.7", "--max-retries", "0", env=env)
    assert result.returncode == 0, result.stderr
    bodies = [b for b in script.bodies if isinstance(b, dict)]
    assert len(bodies) == 4  # one item, four questions, one sample
    assert {(b["temperature"], b["top_p"], b["max_tokens"]) for b in bodies} == {(0.3, 0.7, 40)}
    assert "samples" not in bodies[0]  # the worker's, not the server's
    # the stored judge is the settings, whole: the config's seed 9, the flag's top-p
    conn = Study.open(db)._db.conn
    stored = json.loads(conn.execute("SELECT config FROM raters WHERE kind = 'llm'").fetchone()[0])
    assert {k: stored[k] for k in ("samples", "temperature", "top_p", "max_tokens", "seed")} == {
        "samples": 1,
        "temperature": 0.3,
        "top_p": 0.7,
        "max_tokens": 40,
        "seed": 9,
    }
    # each request's seed is derived from the judge's (issue 9): none is the bare 9
    seeds = {b["seed"] for b in bodies}
    assert len(seeds) == 4 and 9 not in seeds
    again = run_cli_process(*args, "--top-p", "0.7", "--max-retries", "0", "--seed", "10", env=env)
    assert again.returncode == 0, again.stderr
    assert not {b["seed"] for b in script.bodies[len(bodies) :] if isinstance(b, dict)} & seeds


class Recording(SequenceSampler):
    """The engine's own sampler, noting the decoding it was made with."""

    made: ClassVar[list[Decoding]] = []

    def __init__(self, model, decoding: Decoding, *, grammar):
        Recording.made.append(decoding)
        super().__init__(model, decoding, grammar=grammar)


def test_a_config_file_and_flags_reach_the_engines_sampler(tmp_path, story_study, tiny_gguf, monkeypatch):
    """The judge command's parser and the config file, through the service, to llama.cpp's per-sequence sampler."""
    settings = load_settings(_config(tmp_path, "[judge]\ntemperature = 0.6\nmax_tokens = 5\n"), environ={})
    parser = argparse.ArgumentParser()
    decoding_flags(parser.add_argument_group("judge"))
    args = parser.parse_args(["--top-p", "0.85", "--samples", "1", "--seed", "4"])
    options = JudgeOptions(str(tiny_gguf), decoding=decoding_given(args), max_retries=0)
    spec = resolve_spec(options, [story_study.task("story")], settings.judge)
    assert spec.decoding == Decoding(samples=1, temperature=0.6, top_p=0.85, max_tokens=5, seed=4)
    monkeypatch.setattr(engine_module, "SequenceSampler", Recording)
    Recording.made.clear()
    run = judge_study(story_study, spec, ["story"], limit=1, workers=1)
    assert run.progress.fatal is None
    assert len(Recording.made) >= 4
    for made in Recording.made:  # the judge's settings; the request's own seed; the reply's length limit
        assert (made.temperature, made.top_p, made.max_tokens) == (0.6, 0.85, 5)
        assert made.seed != 4
    assert len({made.seed for made in Recording.made}) == len(Recording.made)


def test_the_flags_the_config_keys_and_the_request_come_from_one_list(tmp_path):
    parser = argparse.ArgumentParser()
    group = parser.add_argument_group("judge")
    decoding_flags(group)
    flags = {action.dest: action for action in group._group_actions}
    assert list(flags) == [setting.name for setting in KNOBS]
    for setting in KNOBS:
        assert setting.metadata["doc"] in flags[setting.name].help and str(setting.default) in flags[setting.name].help
    # every field is a [judge] key, checked against the field's range
    every = {setting.name: setting.default for setting in KNOBS}
    assert _judge_from(every, tmp_path / "c.toml").decoding == Decoding()
    with pytest.raises(Exception, match=r"\[judge\] top_p must be in \(0, 1\]"):
        _judge_from({"top_p": 0}, tmp_path / "c.toml")
    assert set(Decoding().sent()) == {"temperature", "top_p", "max_tokens", "seed"}
    assert set(Decoding().extensions()) == {"top_k", "min_p"}  # sampled requests, to servers that take them
    # llama.cpp's cuts at their defaults (off, as the papers) are left out of the record: a judge stored before
    # they existed keeps its identity (tests/judge/test_identity_pins.py)
    assert set(Decoding().record()) == set(every) - {"top_k", "min_p"}
    assert Decoding(top_k=40).record()["top_k"] == 40


def test_seed_help_says_what_seeds_are(tmp_path):
    """It said "sample k uses seed + k"; each request's seed is derived from the judge's and the request."""
    result = run_cli_process("judge", "--help")
    flat = " ".join(result.stdout.split())
    assert "seed + k" not in flat
    assert "each request's seed is derived from it, the judge's other settings and the request" in flat


# --- a new sampler setting is one field -------------------------------------------------------


@dataclass(frozen=True)
class WithPenalty(Decoding):
    """Decoding with one more setting, as a contributor would add it: a field, nothing else."""

    presence_penalty: float = knob(0.5, "penalise tokens already in the reply", -2, 2)


def test_a_new_setting_is_a_flag_a_config_key_a_request_field_and_stored(tmp_path, fake_server):
    # the flag: its name, type, range and help from the field
    parser = argparse.ArgumentParser()
    decoding_flags(parser.add_argument_group("judge"), WithPenalty)
    args = parser.parse_args(["--presence-penalty", "1.5"])
    assert decoding_given(args, WithPenalty) == {"presence_penalty": 1.5}
    flat = parser.format_help().replace("\n", " ").replace("  ", " ")
    assert "penalise tokens already in the reply (default 0.5)" in flat
    with pytest.raises(SystemExit):
        parser.parse_args(["--presence-penalty", "3"])
    # the config key
    assert _judge_from({"presence_penalty": 1.0}, tmp_path / "c.toml", WithPenalty()).decoding == WithPenalty(
        presence_penalty=1.0
    )
    # the request body, on a real (loopback) server
    script = Script([(200, {}, ok_body("4"), 0)])
    spec = JudgeSpec(
        "api:m", decoding=WithPenalty().given(decoding_given(args, WithPenalty)), base_url=fake_server(script)
    )
    backend = ApiBackend(spec)
    try:
        backend.complete(CHAT, replace(spec.decoding, seed=3))
    finally:
        backend.close()
    assert script.bodies[-1]["presence_penalty"] == 1.5 and script.bodies[-1]["seed"] == 3
    # the stored record: flat, by name, as every other setting
    assert provenance(spec)["presence_penalty"] == 1.5
    assert WithPenalty.of_record(provenance(spec)) == spec.decoding
    assert [f.name for f in fields(WithPenalty)][-1] == "presence_penalty"

"""Every setting a backend takes is declared on it (``BackendOption``: name, type, default, help, identity), the
built-ins' too (issue 31 item 3). The built-ins' settings are flags held in ``JudgeSpec`` fields, so that the judges
made before keep their identities (tests/judge/test_identity_pins.py): their declarations must say what the flags,
the fields and the identity do. A third party's own options are tested through its package and a separate process
(tests/judge/test_backend_package.py)."""

from __future__ import annotations

import argparse
from dataclasses import MISSING, fields, replace

import pytest

from tui_rater.cli.common import judge_flags
from tui_rater.domain.errors import UserError
from tui_rater.judge.backends import registry
from tui_rater.judge.spec import JudgeSpec, provenance, rater_name

# a value other than the default for each built-in setting
OTHER = {
    "n_ctx": 2048,
    "n_gpu_layers": -1,
    "n_threads": 2,
    "chat_template": "{{ messages[0]['content'] }}",
    "base_url": "http://127.0.0.1:9/v1",
    "api_key_env": "MY_SERVER_KEY",
    "timeout_s": 5.0,
}


def _model(tmp_path, backend: str) -> str:
    if backend == "llama.cpp":
        path = tmp_path / "m.gguf"
        path.write_bytes(b"GGUF not really a model")
        return str(path)
    return "api:m"


@pytest.mark.parametrize("backend", sorted(registry.BUILTIN))
def test_a_built_in_backends_declared_options_are_its_flags_and_say_which_make_another_judge(tmp_path, backend):
    kind = registry.backend(backend)
    parser = argparse.ArgumentParser()
    judge_flags(parser)
    spec_defaults = {f.name: f.default for f in fields(JudgeSpec) if f.default is not MISSING}
    base = JudgeSpec(_model(tmp_path, backend))
    name = rater_name(base, provenance(base))
    assert kind.options, backend
    for option in kind.options:
        assert option.flag in parser._option_string_actions, option  # a flag `judge` takes
        assert option.default == spec_defaults[option.name] and option.help, option  # the field's default, explained
        assert isinstance(OTHER[option.name], option.type)
        other = replace(base, **{option.name: OTHER[option.name]})
        # another value is another judge exactly when the option says it is part of the identity
        assert (rater_name(other, provenance(other)) != name) is option.identity, option
        assert other.options[option.name] == OTHER[option.name]
    # the spec's options are this backend's settings, as one value: none of another backend's
    assert set(base.options) == {option.name for option in kind.options}
    assert base.extra == {} and provenance(base)["extra"] == {}


def test_a_built_in_backend_names_its_flags_when_given_a_backend_option():
    with pytest.raises(UserError) as refused:
        registry.backend("llama.cpp").option_values(("n_ctx=2048",))
    assert str(refused.value) == (
        "the llama.cpp backend takes no --backend-option (its settings are flags of their own: --n-ctx, "
        "--n-gpu-layers, --threads, --chat-template)"
    )

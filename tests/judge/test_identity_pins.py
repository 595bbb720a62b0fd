"""A judge's identity (its stored provenance and rater name) is derived from its settings: the same settings must give
the same JSON, byte for byte, whatever shape the code holds them in, or every earlier judge gets a new name and its
ratings are orphaned. The expected values were written by the code before the decoding settings became one object."""

from __future__ import annotations

import json

import pytest

from tui_rater.domain.decoding import Decoding
from tui_rater.judge.spec import JudgeSpec, provenance, rater_name

MODEL_BYTES = b"GGUF not really a model"


def _stable(config: dict) -> str:
    """The stored form (study.py writes sort_keys=True), with the installed versions and the machine's numerics
    written as placeholders: they are meant to change with the install, not with the code's shape."""
    config = {k: ("V" if k.endswith("_version") else v) for k, v in config.items()}
    if "numerics" in config:
        config["numerics"] = "N"
    return json.dumps(config, sort_keys=True)


def _specs(model_path: str) -> list[JudgeSpec]:
    return [
        JudgeSpec("api:gpt-4o-mini"),
        JudgeSpec(
            "api:m",
            decoding=Decoding(samples=5, temperature=0.7, top_p=0.95, seed=9, max_tokens=512),
            mode="distribution",
            variant="v2",
            base_url="http://u:secretsecret@127.0.0.1:8080/v1",
            judge_name="mine",
        ),
        JudgeSpec(
            model_path,
            decoding=Decoding(temperature=0.0, seed=3),
            mode="constrained",
            conversation=True,
            chat_template="{{x}}",
        ),
    ]


EXPECTED = [
    (
        '{"api_model": "gpt-4o-mini", "backend": "openai-compatible", "base_url": "https://api.openai.com/v1", '
        '"conversation": false, "extra": {}, "max_retries": 3, "max_tokens": 128, "min_mass": 0.5, "mode": "text", '
        '"model": "api:gpt-4o-mini", "openai_version": "V", "samples": 3, "seed": 0, "temperature": 1.0, '
        '"top_p": 0.9, "tui_rater_version": "V", "variant": "plain"}',
        "api:gpt-4o-mini/text/plain/T1/p0.9/s0#0c555d",
    ),
    (
        '{"api_model": "m", "backend": "openai-compatible", "base_url": "http://127.0.0.1:8080/v1", '
        '"conversation": false, "extra": {}, "judge_name": "mine", "max_retries": 3, "max_tokens": 512, '
        '"min_mass": 0.5, "mode": "distribution", "model": "api:m", "openai_version": "V", "samples": 5, "seed": 9, '
        '"temperature": 0.7, "top_p": 0.95, "tui_rater_version": "V", "variant": "v2"}',
        "api:m/distribution/v2/T0.7/p0.95/s9#ac3959",
    ),
    (
        '{"backend": "llama.cpp", "base_url": null, "chat_template_sha256": '
        '"fd805e2acba5213ea322447fd8de9a0592443572d4526fc151e2d7157376135b", "conversation": true, "extra": {}, '
        '"llama_cpp_python_version": "V", "max_retries": 3, "max_tokens": 128, "min_mass": 0.5, "mode": "constrained", '
        '"model_file": "pin-model.gguf", "model_sha256": '
        '"cd7b745cb561148663cfb5cf91737ea912b11bf9e20ad977714e1ad8d17335c2", "n_ctx": 4096, "numerics": "N", '
        '"samples": 3, "seed": 3, "temperature": 0.0, "top_p": 0.9, "tui_rater_version": "V", "variant": "plain"}',
        # the hash covers the machine's numerics (issue 26): only the readable part is pinned
        "pin-model.gguf@cd7b745c/constrained/plain/T0/p0.9/s3/chat#",
    ),
]


@pytest.mark.parametrize("index", range(len(EXPECTED)))
def test_provenance_and_rater_name_are_pinned(tmp_path, index):
    model = tmp_path / "pin-model.gguf"
    model.write_bytes(MODEL_BYTES)
    spec = _specs(str(model))[index]
    config, name = EXPECTED[index]
    assert _stable(provenance(spec)) == config
    assert rater_name(spec, provenance(spec)).startswith(name)
    if not spec.model.endswith(".gguf"):
        assert rater_name(spec, provenance(spec)) == name

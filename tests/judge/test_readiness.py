"""`judge --check`, a finished run and the report apply one agreement-ready rule (domain/readiness.py) and say the same
thing (issue 30, item 3), on generated GGUFs in real llama.cpp: a random model is not ready in any mode, and a model
that answers on the scale is ready -- the check's verdict per mode, the run's summary and the report's readings agree,
and a run's advice never names a mode the rule calls not ready. (tests/judge/test_readiness_smollm2.py: the same on
the README's first judge.)"""

from __future__ import annotations

import json
import re

import pytest

from tests.support import DATA, run_cli_process, story_study
from tui_rater.judge.tiny_gguf import BOS_TEMPLATE, write_tiny_gguf

SCALE = [str(k) for k in range(1, 6)]
FLAGS = ("--task", "story", "--samples", "1", "--max-retries", "0", "--seed", "3", "--max-tokens", "8")


@pytest.fixture(scope="module")
def digits_gguf(tmp_path_factory):
    """Qwen2's vocabulary, a chat template, and most of the next-token probability on the scale's digits."""
    return write_tiny_gguf(
        tmp_path_factory.mktemp("digits") / "digits.gguf", vocab=DATA / "vocab" / "ggml-vocab-qwen2.gguf", n_embd=32,
        n_head=4, n_ff=64, f16=True, output_scale=0.6, seed=5, chat_template=BOS_TEMPLATE,
        favour={label: 6.0 for label in SCALE},
    )  # fmt: skip


def _check(db, model, mode):
    done = run_cli_process(
        "judge", "--db", db, "--model", model, "--mode", mode, *FLAGS, "--check", "--check-items", "2",
        "--format", "json",
    )  # fmt: skip
    assert "Traceback" not in done.stderr, done.stderr
    return json.loads(done.stdout)["modes"]


def _run_and_report(db, model, mode):
    done = run_cli_process("judge", "--db", db, "--model", model, "--mode", mode, *FLAGS, "--limit", "2")
    assert "Traceback" not in done.stderr, done.stderr
    judge = re.search(r"judge (J\d+ [^(]+) \(", done.stderr).group(1).strip()
    report = run_cli_process("report", "--db", db, "--task", "story", "--format", "json")
    assert report.returncode == 0, report.stderr
    records = [
        r
        for r in json.loads(report.stdout)["tasks"]["story"]
        if (r["table"], r["statistic"], r["evaluator"]) == ("readings", "agreement_ready", judge)
    ]
    assert len(records) == 4, records
    return done, judge, {r["attribute"]: r["value"] for r in records}, {r["attribute"]: r["note"] for r in records}


@pytest.mark.parametrize(
    ("model", "modes", "expected"),
    [
        ("tiny", ("constrained", "distribution", "text"), False),
        ("digits", ("constrained", "distribution"), True),
    ],
)
def test_the_check_the_run_and_the_report_agree_per_mode(tmp_path, tiny_gguf, digits_gguf, model, modes, expected):
    gguf = {"tiny": tiny_gguf, "digits": digits_gguf}[model]
    db = story_study(tmp_path / "s.db")
    checked = _check(db, gguf, modes[0])
    for mode in modes:
        assert checked[mode]["ready"] is expected, (mode, checked[mode])
        done, judge, ready, notes = _run_and_report(db, gguf, mode)
        said = done.stdout + done.stderr
        assert set(ready.values()) == {1.0 if expected else 0.0}, (mode, ready)  # the report: what the check said
        if expected:
            assert f"{judge} is agreement-ready on all 4 questions" in done.stdout, said
            assert "not agreement-ready" not in said
        else:
            assert f"{judge} is not agreement-ready on 4 of 4 questions" in done.stderr, said
            # each question's reason in the report's words
            reasons = {
                line.split(": not agreement-ready: ")[0].strip(): line.split(": not agreement-ready: ")[1]
                for line in done.stderr.splitlines()
                if ": not agreement-ready: " in line
            }
            assert reasons == notes, said
            advised = set(re.findall(r"(?:try|use|with) --mode (\w+)", said))
            assert not {m for m in advised if not checked.get(m, {"ready": True})["ready"]}, said

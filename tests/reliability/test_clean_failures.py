"""The inputs that used to end in a traceback (issue 11, "Clean failures"), through the real CLI: each is
now one sentence on stderr and a non-zero exit, fast, and leaves the study as it was."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path

import pytest

from tests.reliability.test_files import one_sentence
from tests.support import SAMPLE, digest, run_cli_process
from tui_rater.judge.tiny_gguf import write_tiny_gguf


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    return write_tiny_gguf(tmp_path_factory.mktemp("model") / "tiny.gguf", seed=1)  # trained context 4,096


@pytest.fixture
def study(tmp_path):
    db = tmp_path / "study.db"
    assert run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db).returncode == 0
    return db


def _ratings(tmp_path, line: str) -> str:
    path = tmp_path / "ratings.jsonl"
    path.write_text(line + "\n")
    return str(path)


def _row(value: str = "3", sample: str = "0") -> str:
    """One JSONL rating of a sample story, its value and sample number written as given (raw JSON)."""
    return f'{{"item": "s00-human", "rater": "r", "attribute": "likability", "value": {value}, "sample": {sample}}}'


# (the ratings line, what the sentence says)
IMPORTS = {
    "a 5,000-digit JSON number as a value": (_row(value="9" * 5000), "cannot read a value"),
    "a 5,000-digit JSON number as a sample": (_row(sample="9" * 5000), "cannot read a value"),
    "a 4,000-digit value (too large for a float)": (_row(value="9" * 4000), "is not a number"),
    "JSON nested 200,000 deep": ('{"item": ' + "[" * 200_000 + "]" * 200_000 + "}", "nested too deeply"),
    "sample: Infinity": (_row(sample="Infinity"), "column 'sample'"),
    "sample: 2**70": (_row(sample=str(2**70)), "column 'sample'"),
    "sample: 1e308": (_row(sample="1e308"), "column 'sample'"),
    "sample: true": (_row(sample="true"), "column 'sample'"),
    "sample: [1]": (_row(sample="[1]"), "column 'sample'"),  # a list: no number, the same sentence
    "sample: -1": (_row(sample="-1"), "column 'sample'"),
}


@pytest.mark.parametrize("case", list(IMPORTS))
def test_bad_numbers_and_nesting_in_an_import(study, tmp_path, case):
    line, words = IMPORTS[case]
    before = digest(study)
    error = one_sentence(run_cli_process("import-ratings", _ratings(tmp_path, line), "--db", study))
    assert ("ratings.jsonl, line 1" in error or "row 1" in error) and words in error, error
    assert digest(study) == before


BAD_TASK_FILES = {
    # the two task files collected in issue 11: a list inside display_fields, an infinite scale end
    "display_fields holds a list": ('display_fields = [["text"]]\n', "", "'display_fields'"),
    "a scale from 0 to inf": ("", 'scale = { kind = "continuous", low = 0, high = inf }\n', "finite"),
    "a question with a placeholder": ("", 'template = "Rate {nope}."\n', "{nope}"),
}


@pytest.mark.parametrize("case", list(BAD_TASK_FILES))
def test_task_files_that_crashed_are_refused(study, tmp_path, case):
    task_part, attribute_part, words = BAD_TASK_FILES[case]
    toml = tmp_path / "task.toml"
    toml.write_text(
        f'[[task]]\nname = "t"\nfields = ["text"]\n{task_part}[[task.attributes]]\nname = "q"\n'
        f'question = "How good?"\n{attribute_part}'
    )
    items = tmp_path / "items.csv"
    items.write_text("id,text\nx,hello\n")
    before = digest(study)
    for command in (("import", items, "--task", "t"), ("tasks",)):
        error = one_sentence(run_cli_process(*command, "--task-file", toml, "--db", study))
        assert words in error
    assert digest(study) == before


TEMPLATES = {
    "a Jinja syntax error": ("{% for m in messages %}{{ m.content ", "TemplateSyntaxError"),
    "a template that raises": ('{{ raise_exception("roles must alternate") }}', "roles must alternate"),
    "a template that drops the messages": ("<|user|> hello <|assistant|>", "leaves out the messages"),
    "an undefined filter": ("{{ messages | nonsense }}", "nonsense"),
}


@pytest.mark.parametrize("case", list(TEMPLATES))
def test_a_bad_chat_template_is_refused_before_any_work(study, tmp_path, model, case):
    template, words = TEMPLATES[case]
    path = tmp_path / "template.jinja"
    path.write_text(template)
    before = digest(study)
    error = one_sentence(
        run_cli_process("judge", "--db", study, "--model", model, "--chat-template", path, "--limit", "1")
    )
    assert "chat template" in error and words in error, error
    assert digest(study) == before  # no judge, no jobs


def _start_up_and_refusal_s(study, model) -> float:
    """Seconds a `judge` takes to refuse a flag (--n-ctx 0) before it reads the model: its start-up, the baseline
    the deadlines below leave out (imports took 15 s and more on a loaded 2-core machine)."""
    began = time.monotonic()
    assert "at least 1" in one_sentence(run_cli_process("judge", "--db", study, "--model", model, "--n-ctx", "0"))
    return time.monotonic() - began


def test_n_ctx_beyond_the_trained_context_is_refused(study, model):
    began = time.monotonic()
    error = one_sentence(run_cli_process("judge", "--db", study, "--model", model, "--n-ctx", "100000000"))
    took = time.monotonic() - began
    assert "beyond the 4,096-token context" in error and "--n-ctx 4096 or less" in error
    # refused from the header, never allocating: beyond the start-up, well under 30 s (it used to reach 7 GB of RSS
    # in 6 s, then die)
    assert took - _start_up_and_refusal_s(study, model) < 30


def test_a_kv_cache_larger_than_memory_is_refused(study, tmp_path):
    # a model whose header claims a 2**31-token training context: the context itself cannot fit
    model = write_tiny_gguf(tmp_path / "long.gguf", n_ctx=2**31 - 1, n_embd=256, n_layers=8, seed=2)
    error = one_sentence(run_cli_process("judge", "--db", study, "--model", model, "--n-ctx", str(2**31 - 1)))
    assert "for its context (KV cache)" in error, error


def test_a_30_gb_model_is_refused_at_once_with_its_size(study, tmp_path, model):
    """A sparse 30 GB file with a real GGUF header: it used to hang without output (hashing, then mapping)."""
    big = tmp_path / "big.gguf"
    big.write_bytes(model.read_bytes())
    with open(big, "r+b") as handle:
        handle.truncate(30 * 10**9)  # sparse: no disk used
    began = time.monotonic()
    result = run_cli_process("judge", "--db", study, "--model", big, "--limit", "1")
    elapsed = time.monotonic() - began - _start_up_and_refusal_s(study, model)  # beyond the start-up
    if result.returncode == 0:  # a machine with more than 30 GB of memory: it must at least say what it loads
        assert "loading model big.gguf (30.0 GB)" in result.stderr
    else:
        error = one_sentence(result)
        assert "30.0 GB" in error and "memory" in error
        assert elapsed < 30


def test_a_truncated_gguf_is_refused(study, tmp_path, model):
    cut = tmp_path / "cut.gguf"
    cut.write_bytes(model.read_bytes()[: model.stat().st_size // 3])
    error = one_sentence(run_cli_process("judge", "--db", study, "--model", cut, "--limit", "1"))
    assert "truncated" in error or "past the end" in error


def test_a_damaged_study_is_one_line_and_a_non_zero_exit(study):
    """A bug or a damaged file: no layer turned it into a sentence; `main` still says it in one line."""
    conn = sqlite3.connect(study)
    conn.execute("UPDATE items SET fields = '{not json' WHERE id = 's00-human'")
    conn.commit()
    conn.close()
    result = run_cli_process("export", "--what", "items", "--db", study, "--out", study.parent / "items.csv")
    error = one_sentence(result, 70)
    assert "unexpected JSONDecodeError" in error and "TUI_RATER_DEBUG=1" in error
    debug = run_cli_process(
        "export", "--what", "items", "--db", study, "--out", study.parent / "items.csv", env=_debug_env()
    )
    assert debug.returncode != 0 and "Traceback" in debug.stderr  # the traceback, on request


def _debug_env():
    import os

    return {**os.environ, "TUI_RATER_DEBUG": "1"}


@pytest.mark.skipif(not Path("/proc/self").is_dir(), reason="needs Linux's /proc")
def test_an_export_where_no_file_can_be_created_is_one_sentence(study, tmp_path):
    """/proc takes no new file (ENOENT as root, EACCES otherwise): an environment failure (exit 1), not 'a bug'."""
    before = digest(study)
    error = one_sentence(run_cli_process("export", "--db", study, "--out", "/proc/ratings.csv"), code=1)
    assert "/proc/" in error and "bug" not in error, error
    assert digest(study) == before

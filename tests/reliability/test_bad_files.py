"""Property-based: whatever bytes arrive as an items file, ratings file, task TOML or config file,
the answer is success or one clear sentence with exit 2 -- and the study file is unchanged."""

from __future__ import annotations

import os
import re
import sqlite3

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.support import digest

GOOD = "id,system,prompt,story\na,human,P,A story.\nb,gpt2,P,Another story.\n"
SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@pytest.fixture
def study_file(tmp_path, cli):
    items = tmp_path / "good.csv"
    items.write_text(GOOD)
    db = tmp_path / "study.db"
    assert cli("import", items, "--task", "story", "--db", db)[0] == 0
    ratings = tmp_path / "r.csv"
    ratings.write_text("item,rater,attribute,value\na,t1,likability,3\n")
    assert cli("import-ratings", ratings, "--db", db)[0] == 0
    return db


def _rows(db, table: str) -> int:
    conn = sqlite3.connect(db)
    try:
        return conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
    finally:
        conn.close()


def _check(result, db, before, table: str | None = None, rows_before: int = 0):
    """Exit 2 with one sentence and the file untouched, or success that stored what it says it stored."""
    code, out, err = result
    assert "Traceback" not in err
    if code != 0:
        assert code == 2
        assert err.startswith("tui-rater: error: ") and err.count("\n") == 1, err
        assert digest(db) == before
    elif table is not None:
        added = re.search(r": (\d+) new", out)
        assert added, out
        assert _rows(db, table) - rows_before == int(added.group(1))


def _mutations(base: bytes):
    """Truncations, wrong encodings, giant fields, duplicated rows and random splices of a good file."""
    return st.one_of(
        st.binary(max_size=400),
        st.integers(0, len(base)).map(lambda n: base[:n]),
        st.just(base.decode().encode("utf-16")),
        st.just(base.decode().encode("latin-1") + "é,\xff".encode("latin-1")),
        st.integers(1, 3).map(lambda k: base + base.splitlines(keepends=True)[1] * k),
        st.integers(0, 200_000).map(lambda n: base + b"c,human,P," + b"x" * n + b"\n"),
        st.tuples(st.integers(0, len(base)), st.binary(max_size=30)).map(lambda t: base[: t[0]] + t[1] + base[t[0] :]),
    )


@SETTINGS
@given(content=_mutations(GOOD.encode()), ext=st.sampled_from(["csv", "tsv", "jsonl", "parquet"]))
def test_import_items_any_bytes(tmp_path, cli, study_file, content, ext):
    path = tmp_path / f"in.{ext}"
    path.write_bytes(content)
    before, rows = digest(study_file), _rows(study_file, "items")
    _check(cli("import", path, "--task", "story", "--db", study_file), study_file, before, "items", rows)


RATINGS = b"item,rater,attribute,value,kind,sample\na,t2,likability,4,human,0\nb,gpt,grammaticality,4.5,llm,1\n"


@SETTINGS
@given(content=_mutations(RATINGS), ext=st.sampled_from(["csv", "jsonl"]))
def test_import_ratings_any_bytes(tmp_path, cli, study_file, content, ext):
    path = tmp_path / f"r.{ext}"
    path.write_bytes(content)
    before, rows = digest(study_file), _rows(study_file, "ratings")
    _check(cli("import-ratings", path, "--db", study_file), study_file, before, "ratings", rows)


TOML = (
    b'[[task]]\nname = "t"\nfields = ["text"]\n[[task.attributes]]\nname = "q"\n'
    b'question = "How good?"\nscale = { kind = "likert", low = 1, high = 5 }\n'
)


@SETTINGS
@given(content=_mutations(TOML))
def test_task_file_any_bytes(tmp_path, cli, study_file, content):
    path = tmp_path / "task.toml"
    path.write_bytes(content)
    items = tmp_path / "t.csv"
    items.write_text("id,text\nx,hello\n")
    before, rows = digest(study_file), _rows(study_file, "items")
    result = cli("import", items, "--task", "t", "--task-file", path, "--db", study_file)
    _check(result, study_file, before, "items", rows)


@SETTINGS
@given(content=_mutations(b'db = "x.db"\nannotator = "me"\n[judge]\nsamples = 3\ntemperature = 0.7\n'))
def test_config_file_any_bytes(tmp_path, cli, study_file, content, monkeypatch):
    path = tmp_path / "config.toml"
    path.write_bytes(content)
    os.chmod(path, 0o600)
    monkeypatch.setenv("TUI_RATER_CONFIG", str(path))
    before = digest(study_file)
    _check(cli("info", "--db", study_file), study_file, before)

"""Files, through the real CLI in subprocesses: outputs never over a study or any SQLite file, with the
study's mode; another application's SQLite file refused unchanged; read-only studies readable; a full
disk said in one sentence."""

from __future__ import annotations

import os
import shutil
import sqlite3
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.store.test_migrations import _v1_file
from tests.support import SAMPLE, copy_demo, digest, run_cli_process
from tui_rater.store.schema import APPLICATION_ID, SCHEMA_VERSION

ROOT_USER = os.geteuid() == 0


def one_sentence(result: subprocess.CompletedProcess, code: int = 2) -> str:
    assert result.returncode == code, (result.returncode, result.stdout, result.stderr)
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith("tui-rater: error: ") and result.stderr.count("\n") == 1, result.stderr
    return result.stderr


@pytest.fixture
def study(demo_original, tmp_path) -> Path:
    return copy_demo(demo_original, tmp_path)  # items and 2,304 ratings


# --- outputs ----------------------------------------------------------------------------------------


def _side_files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir() if p.name.endswith((".partial", "-wal", "-shm", "-journal")))


def test_report_and_export_never_write_over_the_study(study, tmp_path):
    before = digest(study)
    link = tmp_path / "link.md"
    link.symlink_to(study)
    targets = [study, Path(f"{study}-wal"), Path(f"{study}-shm"), Path(f"{study}-journal"), link]
    targets.append(tmp_path / "sub" / ".." / study.name)  # the same file by another path
    (tmp_path / "sub").mkdir()
    for target in targets:
        error = one_sentence(run_cli_process("report", "--db", study, "--out", target))
        assert "refusing to write" in error
    for name in ("study.db.csv", "x.csv"):  # an export named like a table file, but an SQLite file
        shutil.copy(study, tmp_path / name)
        error = one_sentence(run_cli_process("export", "--db", study, "--out", tmp_path / name))
        assert "it is an SQLite database" in error
    assert digest(study) == before
    assert _side_files(tmp_path) == []  # nothing half-written left behind, no -wal from a refused write


def test_another_applications_database_is_never_overwritten(study, tmp_path):
    other = tmp_path / "notes.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE notes (text)")
    conn.commit()
    conn.close()
    before = digest(other)
    error = one_sentence(run_cli_process("report", "--db", study, "--format", "csv", "--out", other))
    assert "SQLite database" in error and digest(other) == before
    wal = tmp_path / "notes.db-wal"
    error = one_sentence(run_cli_process("report", "--db", study, "--out", wal))
    assert "SQLite wal file of the database" in error and not wal.exists()


@pytest.mark.parametrize("mode", [0o600, 0o640, 0o644])
def test_outputs_get_the_study_files_mode(study, tmp_path, mode):
    os.chmod(study, mode)
    outputs = {
        "report.md": ("report", "--format", "markdown"),
        "ratings.csv": ("export",),
        "items.parquet": ("export", "--what", "items"),
    }
    for name, args in outputs.items():
        out = tmp_path / name
        out.write_text("an older version, replaced whole")
        os.chmod(out, 0o666)
        result = run_cli_process(*args, "--db", study, "--out", out)
        assert result.returncode == 0, result.stderr
        assert stat.S_IMODE(out.stat().st_mode) == mode, name
        assert out.read_bytes() != b"an older version, replaced whole"
    assert _side_files(tmp_path) == []


# --- another application's SQLite file ------------------------------------------------------------


def _foreign(path: Path, kind: str) -> None:
    conn = sqlite3.connect(path)
    if kind == "items-table":  # the old check let any file with an `items` table through
        conn.execute("CREATE TABLE items (key INTEGER PRIMARY KEY, id TEXT, task TEXT)")
        conn.execute("INSERT INTO items VALUES (1, 'a', 'story')")
    elif kind == "user-version-1":  # ... and any file whose user_version was 1, with our migration 2 run on it
        conn.execute("CREATE TABLE t (x)")
        conn.execute("PRAGMA user_version = 1")
    elif kind == "application-id":
        conn.execute("PRAGMA application_id = 1598903374")  # 0x5F4D4F4E, some other program's
        conn.execute("CREATE TABLE t (x)")
    elif kind == "wal-mode":  # a WAL-mode database (no -wal file left): must not even get -wal/-shm
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("CREATE TABLE jobs (x)")
    elif kind == "tui-rater-lookalike":  # our tables at version 2, one column missing
        conn.execute("CREATE TABLE items (key, id, task)")
        conn.execute("PRAGMA user_version = 2")
    conn.commit()
    conn.close()


FOREIGN = ["items-table", "user-version-1", "application-id", "wal-mode", "tui-rater-lookalike"]
COMMANDS = [
    ("info",),
    ("report",),
    ("tasks",),
    ("queue",),
    ("reparse",),
    ("export", "--out", "{tmp}/out.csv"),
    ("import", SAMPLE / "stories.csv", "--task", "story"),
    ("import-ratings", SAMPLE / "hanna_human_ratings.csv"),
    ("annotate", "--annotator", "me", "--task", "story"),
    ("spa", "setup", "--systems", "a,b"),
]


@pytest.mark.parametrize("kind", FOREIGN)
def test_another_applications_sqlite_file_is_refused_unchanged(tmp_path, kind):
    path = tmp_path / "other.db"
    _foreign(path, kind)
    before = digest(path)
    for args in COMMANDS:
        args = [str(a).replace("{tmp}", str(tmp_path)) for a in args]
        error = one_sentence(run_cli_process(*args, "--db", path), 2)
        assert "not a tui-rater database" in error and "nothing was changed" in error, error
        assert digest(path) == before, args  # no WAL switch, no migration: byte for byte
    assert sorted(p.name for p in tmp_path.iterdir()) == ["other.db"]  # no -wal, -shm or output


def test_a_file_that_is_not_sqlite_is_refused_unchanged(tmp_path):
    path = tmp_path / "notes.db"
    path.write_text("just some notes, not a database\n" * 100)
    before = digest(path)
    error = one_sentence(run_cli_process("info", "--db", path))
    assert "not an SQLite file" in error and digest(path) == before


def test_studies_carry_the_application_id_and_old_ones_get_it(tmp_path, study):
    conn = sqlite3.connect(study)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    conn.close()
    old = tmp_path / "old.db"
    _v1_file(old)  # a study as tui-rater 0.1 wrote it: no application id
    assert run_cli_process("info", "--db", old).returncode == 0
    conn = sqlite3.connect(old)
    assert conn.execute("PRAGMA application_id").fetchone()[0] == APPLICATION_ID
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    conn.close()


# --- read-only studies ----------------------------------------------------------------------------

READING = [
    ("info",),
    ("info", "--json"),
    ("report",),
    ("report", "--format", "json"),
    ("tasks",),
    ("queue",),
    ("export", "--out", "{out}/ratings.csv"),
    ("report", "--format", "markdown", "--out", "{out}/report.md"),
]
WRITING = [
    ("import", SAMPLE / "stories.csv", "--task", "story"),
    ("import-ratings", SAMPLE / "hanna_human_ratings.csv"),
    ("queue", "--cancel"),
    ("queue", "--retry"),
    ("reparse",),
    ("annotate", "--annotator", "me", "--task", "story"),
    ("spa", "setup", "--systems", "a,b"),
]


def _as_another_user(args: list[str], home: Path) -> subprocess.CompletedProcess:
    """The CLI as a user without write access (as root, the permission bits would not apply: nobody)."""
    prefix = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"] if ROOT_USER else []
    env = {**os.environ, "HOME": str(home), "TUI_RATER_CONFIG": str(home / "none.toml")}
    return subprocess.run(
        [*prefix, sys.executable, "-m", "tui_rater.cli", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=home,
    )


@pytest.fixture
def shared_folder():
    """A folder every user may enter (pytest's own temporary folders are private to root)."""
    folder = Path(tempfile.mkdtemp(prefix="tui-rater-ro-"))
    os.chmod(folder, 0o755)
    out = folder / "out"
    out.mkdir()
    os.chmod(out, 0o777)
    yield folder
    for path in folder.rglob("*"):
        with_write = stat.S_IMODE(path.stat().st_mode) | 0o700
        os.chmod(path, with_write)
    shutil.rmtree(folder)


def _leave_wal_content(db: Path) -> None:
    """A committed write that is only in the -wal (the writer died before any checkpoint)."""
    script = (
        "import os, sqlite3, sys; c = sqlite3.connect(sys.argv[1], isolation_level=None);"
        "c.execute('PRAGMA wal_autocheckpoint = 0');"
        "c.execute(\"UPDATE raters SET name = name || '-latest' WHERE id = 1\"); os._exit(0)"
    )
    subprocess.run([sys.executable, "-c", script, str(db)], check=True)
    assert Path(f"{db}-wal").stat().st_size > 0


@pytest.mark.skipif(not ROOT_USER and os.name != "posix", reason="needs POSIX permissions")
@pytest.mark.parametrize("case", ["file-read-only", "folder-read-only", "folder-read-only-with-wal"])
def test_read_only_study_reads_and_refuses_writes_in_one_sentence(shared_folder, demo_original, case):
    studies = shared_folder / "studies"
    studies.mkdir()
    db = copy_demo(demo_original, studies)
    os.chmod(db, 0o644)
    if case == "folder-read-only-with-wal":
        _leave_wal_content(db)
        for side in ("-wal", "-shm"):
            os.chmod(f"{db}{side}", 0o644)
    if case.startswith("folder"):
        os.chmod(studies, 0o555)
    else:
        os.chmod(db, 0o444)
        os.chmod(studies, 0o777)
    before = {p.name: digest(p) for p in studies.iterdir()}
    out = shared_folder / "out"
    for args in READING:
        args = [str(a).replace("{out}", str(out)) for a in args]
        result = _as_another_user([*args, "--db", str(db)], shared_folder)
        assert result.returncode == 0, (args, result.stderr)
        assert "Traceback" not in result.stderr
    if case == "folder-read-only-with-wal":
        assert "-latest" in (out / "ratings.csv").read_text()  # what only the -wal holds was read
    study_mode = 0o444 if case == "file-read-only" else 0o644
    assert stat.S_IMODE((out / "ratings.csv").stat().st_mode) == study_mode
    for args in WRITING:
        result = _as_another_user([*map(str, args), "--db", str(db)], shared_folder)
        error = one_sentence(result)
        assert "read-only" in error and "cannot run" in error, error
    after = {p.name: digest(p) for p in studies.iterdir() if not p.name.endswith(("-wal", "-shm"))}
    assert after == {name: d for name, d in before.items() if not name.endswith(("-wal", "-shm"))}


# --- a full disk ------------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A 600 KB tmpfs (needs root; skipped elsewhere)."""
    mount = tmp_path / "disk"
    mount.mkdir()
    if not ROOT_USER or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mount)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    yield mount
    subprocess.run(["umount", str(mount)], check=False)


def test_disk_full_during_import_and_export_is_one_sentence(small_disk, tmp_path):
    db = small_disk / "study.db"
    assert run_cli_process("import", SAMPLE / "stories.csv", "--task", "story", "--db", db).returncode == 0
    big = tmp_path / "big.csv"
    rows = "".join(f"i{i},s,{'p' * 50},{'story text ' * 40}\n" for i in range(3000))
    big.write_text("id,system,prompt,story\n" + rows)
    error = one_sentence(run_cli_process("import", big, "--task", "story", "--db", db), 1)
    assert "the disk is full" in error
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM items").fetchone()[0] == 60  # the failed import added nothing
    conn.close()
    filler = small_disk / "filler"
    free = shutil.disk_usage(small_disk).free
    filler.write_bytes(b"\0" * max(0, free - 4096))
    error = one_sentence(run_cli_process("export", "--what", "items", "--db", db, "--out", small_disk / "items.csv"))
    assert "cannot write" in error
    assert not [p for p in small_disk.iterdir() if p.name.endswith(".partial") or p.name == "items.csv"]


def test_a_failed_first_import_leaves_no_empty_study_behind(small_disk, tmp_path):
    db = small_disk / "new-study.db"
    big = tmp_path / "big.csv"
    rows = "".join(f"i{i},s,{'p' * 50},{'story text ' * 40}\n" for i in range(3000))
    big.write_text("id,system,prompt,story\n" + rows)
    error = one_sentence(run_cli_process("import", big, "--task", "story", "--db", db), 1)
    assert "the disk is full" in error
    assert not [p.name for p in small_disk.iterdir() if p.name.startswith("new-study.db")]

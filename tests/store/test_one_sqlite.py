"""One copy of SQLite in the process. A second copy (e.g. the ADBC SQLite driver, once used to read the ratings as
columns) drops every POSIX lock this process holds on the study when it closes its connection: another process then
took the write lock while this one was inside a write transaction -- two writers, a corrupt file (SQLite's "How To
Corrupt An SQLite Database File", section 2.2.1). The pane's first look and the report's loader read the study while
another connection of the same process (the app's) writes; the write lock must hold throughout."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.support import story_study
from tui_rater.stats.live_sums import LiveSums
from tui_rater.stats.sections.data import load_all
from tui_rater.store.study import Study

TRY_TO_WRITE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)
try:
    conn.execute("BEGIN IMMEDIATE")
    print("took the write lock")
except sqlite3.OperationalError as exc:
    print("refused:", exc)
"""


def _other_process_writes(db: Path) -> str:
    found = subprocess.run([sys.executable, "-c", TRY_TO_WRITE, str(db)], capture_output=True, text=True, timeout=60)
    assert found.returncode == 0, found.stderr
    return found.stdout.strip()


def _shared_objects() -> set[str]:
    return {line.split()[-1] for line in Path("/proc/self/maps").read_text().splitlines() if ".so" in line}


def test_reading_the_study_keeps_the_write_lock_of_another_connection_of_the_process(tmp_path):
    db = story_study(tmp_path / "s.db")
    writer, reader = Study.open(db), Study.open(db)
    try:
        reader.human("ann")  # a rating, so that there are columns to read
        key = reader.items("story")[0].key
        reader.add_rating(key, "relevance", reader.human("ann").id, 3.0)
        conn = writer._db.conn
        conn.execute("BEGIN IMMEDIATE")  # the app, storing a rating
        try:
            assert _other_process_writes(db).startswith("refused"), "the lock is not held to begin with"
            LiveSums(reader.task("story")).build(reader)  # the pane's first look, in the pane's thread
            load_all(reader, "story")  # the report's loader
            assert _other_process_writes(db).startswith("refused: database is locked")
        finally:
            conn.execute("ROLLBACK")
    finally:
        writer.close()
        reader.close()
    sqlite_copies = {path for path in _shared_objects() if "sqlite" in Path(path).name.lower()}
    assert all("adbc" not in path for path in sqlite_copies), sqlite_copies

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import textwrap

import pytest

from tests.support import ROOT, digest
from tui_rater.domain.errors import UserError
from tui_rater.store.db import connect
from tui_rater.store.schema import APPLICATION_ID, SCHEMA_VERSION
from tui_rater.store.study import Study


def test_migrates_a_new_file_and_an_empty_one(tmp_path):
    for path in (tmp_path / "new.db", tmp_path / "empty.db"):
        if path.name == "empty.db":
            path.write_bytes(b"")
        db = connect(path)
        assert db.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert {"items", "raters", "ratings", "jobs", "notes", "tasks"} <= set(db.table_names())
        assert db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        db.conn.close()
        # opening again applies nothing and keeps the data
        assert connect(path).conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION


def test_new_database_is_private_and_shared_is_group_writable(tmp_path):
    connect(tmp_path / "private.db").conn.close()
    assert stat.S_IMODE(os.stat(tmp_path / "private.db").st_mode) == 0o600
    connect(tmp_path / "shared.db", shared=True).conn.close()
    assert stat.S_IMODE(os.stat(tmp_path / "shared.db").st_mode) == 0o660


def test_refuses_newer_schema_and_foreign_files(tmp_path):
    newer = tmp_path / "newer.db"
    conn = sqlite3.connect(newer)
    conn.execute(f"PRAGMA application_id = {APPLICATION_ID}")  # a study, from a newer tui-rater
    conn.execute("PRAGMA user_version = 99")
    conn.close()
    with pytest.raises(UserError, match="newer tui-rater"):
        connect(newer)
    garbage = tmp_path / "garbage.db"
    garbage.write_bytes(os.urandom(4096))
    before = digest(garbage)
    with pytest.raises(UserError, match="not a tui-rater database"):
        connect(garbage)
    assert digest(garbage) == before
    other = tmp_path / "other.db"
    conn = sqlite3.connect(other)
    conn.execute("CREATE TABLE t (x)")
    conn.close()
    with pytest.raises(UserError, match="not a tui-rater database"):
        connect(other)


def test_missing_file_without_create(tmp_path):
    with pytest.raises(UserError, match="does not exist"):
        connect(tmp_path / "nope.db", create=False)
    assert not (tmp_path / "nope.db").exists()


WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from tui_rater.store.study import Study
    from tui_rater.domain.tasks import BUILTIN_TASKS
    study = Study.open(sys.argv[1])
    rater = study.human(sys.argv[2])
    item = study.items("title-fluency")[0]
    for n in range(int(sys.argv[3])):
        study.add_rating(item.key, "fluency", rater.id, float(n % 5 + 1), sample=n)
""")


def test_two_processes_write_one_file(tmp_path):
    path = tmp_path / "study.db"
    study = Study.open(path)
    study.add_items(study.task("title-fluency"), [{"id": "t1", "system": None, "title": "A title"}])
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(root=str(ROOT)))
    n = 150
    procs = [
        subprocess.Popen(
            [sys.executable, str(script), str(path), f"annotator-{k}", str(n)], stderr=subprocess.PIPE, text=True
        )
        for k in range(2)
    ]
    for proc in procs:
        _, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert "locked" not in err
    counts = dict(
        study._db.conn.execute(
            "SELECT ra.name, count(*) FROM ratings r JOIN raters ra ON ra.id = r.rater_id GROUP BY ra.name"
        )
    )
    assert counts == {"annotator-0": n, "annotator-1": n}
    assert study._db.conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def test_opening_and_checking_a_study_keeps_this_processs_locks(tmp_path):
    """Recognising a study (and checking an output path against it) never opens the file by hand:
    closing any descriptor of it would drop this process's POSIX locks, and another process closing
    its connection would then delete the WAL under ours ("disk I/O error" on the next read)."""
    from tui_rater.store.outputs import check_output_target

    path = tmp_path / "study.db"
    study = Study.open(path)
    study.add_items(study.task("title-fluency"), [{"id": "t1", "system": None, "title": "A title"}])
    study.reopen().close()
    Study.open(path, readonly=True).close()
    for target in (path, tmp_path / "study.db-wal", tmp_path / "link.csv"):
        if target.name == "link.csv":
            target.symlink_to(path)
        with pytest.raises(UserError):
            check_output_target(target, path)
    other = "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.execute('SELECT count(*) FROM items'); c.close()"
    subprocess.run([sys.executable, "-c", other, str(path)], check=True)
    assert (tmp_path / "study.db-wal").exists()  # the other process saw us: it did not delete the WAL
    assert [i.id for i in study.items("title-fluency")] == ["t1"]
    study.close()

"""Opening a study file: WAL, busy timeout, migrations, file mode, transactions.

One SQLite file per study, shared by every annotator and judge process. Each write is its
own short ``BEGIN IMMEDIATE`` transaction, committed before the caller is told it happened,
so a crash loses nothing that was acknowledged.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from datetime import UTC, datetime
from pathlib import Path

import sqlite_utils

from tui_rater.domain.errors import UserError
from tui_rater.store.schema import MIGRATIONS, SCHEMA_VERSION, statements

BUSY_TIMEOUT_S = 30.0


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _create_file(path: Path, shared: bool) -> None:
    # 0600 by default: ratings and judge replies are research data, not for other users.
    mode = 0o660 if shared else 0o600
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode)
    os.close(fd)
    os.chmod(path, mode)  # umask may have masked the group bits


def connect(
    path: str | Path, *, create: bool = True, shared: bool = False, durable: bool = True
) -> sqlite_utils.Database:
    """Open (and if needed create and migrate) a study file.

    ``durable``: fsync every commit (``synchronous = FULL``), for ratings a person typed. Judge
    workers pass False (``NORMAL``): in WAL mode a commit still survives a killed process, and a
    result lost to a power cut is lost together with its job's "done" mark, so it is recomputed.
    """
    path = Path(path)
    if str(path) != ":memory:":
        if path.is_dir():
            raise UserError(f"{path} is a directory, not a database file")
        if not path.exists():
            if not create:
                raise UserError(f"database {path} does not exist (run `tui-rater import` first)")
            if not path.parent.exists():
                raise UserError(f"cannot create database {path}: folder {path.parent} does not exist")
            try:
                _create_file(path, shared)
            except FileExistsError:
                pass  # another process created it first
            except OSError as exc:
                raise UserError(f"cannot create database {path}: {exc.strerror}") from None
        elif shared:
            with contextlib.suppress(OSError):
                os.chmod(path, os.stat(path).st_mode | 0o060)
    try:
        conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        _check_readable(conn, path)
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL" if durable else "PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.DatabaseError as exc:
        raise UserError(f"{path} is not a tui-rater database ({exc})") from None
    db = sqlite_utils.Database(conn)
    migrate(db, path)
    return db


def _check_readable(conn: sqlite3.Connection, path: Path) -> None:
    # Any read fails on a file that is not SQLite ("file is not a database").
    conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version == 0:
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        if tables and "items" not in tables:
            raise UserError(f"{path} is an SQLite file but not a tui-rater database")


def migrate(db: sqlite_utils.Database, path: Path | str = "") -> int:
    """Apply the migrations this file lacks; return the version it ends at."""
    conn = db.conn
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise UserError(
            f"{path} was written by a newer tui-rater (schema {version}, this one knows {SCHEMA_VERSION}); "
            "upgrade tui-rater"
        )
    while version < SCHEMA_VERSION:
        # SQLite's procedure for changing a table: foreign keys off (outside the transaction),
        # the change, a foreign-key check inside the transaction, foreign keys on again
        conn.execute("PRAGMA foreign_keys = OFF")
        try:
            with write(db):
                # re-read inside the lock: another process may have migrated meanwhile
                version = conn.execute("PRAGMA user_version").fetchone()[0]
                if version >= SCHEMA_VERSION:
                    break
                migration = MIGRATIONS[version]
                if callable(migration):
                    migration(conn)
                else:
                    for statement in statements(migration):
                        conn.execute(statement)
                if conn.execute("PRAGMA foreign_key_check").fetchone() is not None:
                    raise RuntimeError(f"migration {version + 1} would break a foreign key of {path}")
                version += 1
                conn.execute(f"PRAGMA user_version = {version}")
        finally:
            conn.execute("PRAGMA foreign_keys = ON")
    return version


@contextlib.contextmanager
def write(db: sqlite_utils.Database):
    """One short write transaction (``BEGIN IMMEDIATE``), committed on exit, rolled back on error.

    Nested use joins the outer transaction. ``BEGIN IMMEDIATE`` takes the write lock up front,
    so two writers never deadlock on a lock upgrade; the busy timeout makes them queue.
    """
    conn = db.conn
    if conn.in_transaction:
        yield conn
        return
    _begin_immediate(conn)
    try:
        yield conn
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    else:
        conn.execute("COMMIT")


def _begin_immediate(conn: sqlite3.Connection) -> None:
    deadline = time.monotonic() + BUSY_TIMEOUT_S * 4
    delay = 0.01
    while True:
        try:
            conn.execute("BEGIN IMMEDIATE")
            return
        except sqlite3.OperationalError as exc:
            # the busy timeout already waited; keep queueing rather than surface "locked"
            if "locked" not in str(exc) and "busy" not in str(exc):
                raise
            if time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.5)

"""Opening a study file: WAL, busy timeout, migrations, file mode, transactions.

One SQLite file per study, shared by every annotator and judge process. Each write is its
own short ``BEGIN IMMEDIATE`` transaction, committed before the caller is told it happened,
so a crash loses nothing that was acknowledged.
"""

from __future__ import annotations

import contextlib
import dataclasses
import functools
import os
import sqlite3
import time
import urllib.parse
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui_rater.domain.errors import StudyMoved, UserError
from tui_rater.store import sqlite_utils_module
from tui_rater.store.schema import (
    APPLICATION_ID,
    LEGACY_VERSIONS,
    MIGRATIONS,
    READABLE_FROM,
    SCHEMA_VERSION,
    statements,
)

if TYPE_CHECKING:
    import sqlite_utils

BUSY_TIMEOUT_S = 30.0


class StudyConnection:
    """A study's SQLite connection (``conn``) and sqlite-utils' ``Database`` over it, made at its first use: the
    first write (``write``), ``query``, or any other of the ``Database``'s attributes. A command that only reads
    through ``conn`` (`info`) never imports sqlite-utils; every write goes through the ``Database`` as before."""

    __slots__ = ("_database", "conn")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._database: sqlite_utils.Database | None = None
        # what ``sqlite_utils.Database`` sets when it is made, set now: the connection behaves the same before
        conn.execute("PRAGMA recursive_triggers = on")

    @property
    def database(self) -> sqlite_utils.Database:
        if self._database is None:
            # no metadata scan: a study uses no plugin
            self._database = sqlite_utils_module().Database(self.conn, execute_plugins=False)
        return self._database

    def query(self, sql: str, params: Any = None) -> Iterator[dict[str, Any]]:
        return self.database.query(sql, params)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "database":
            # (not made for ``copy``'s or ``pickle``'s probes, nor before ``__init__`` ends; and an AttributeError
            # raised inside the ``database`` property lands here: looking it up again would recurse until a
            # RecursionError hid the first error)
            raise AttributeError(name)
        return getattr(self.database, name)


def utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="milliseconds")


def _create_file(path: Path, shared: bool) -> None:
    # 0600 by default: ratings and judge replies are research data, not for other users.
    mode = 0o660 if shared else 0o600
    fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, mode)
    os.close(fd)
    os.chmod(path, mode)  # umask may have masked the group bits


def connect(
    path: str | Path,
    *,
    create: bool = True,
    shared: bool = False,
    durable: bool = True,
    readonly: bool = False,
) -> StudyConnection:
    """Open (and if needed create and migrate) a study file.

    ``durable``: fsync every commit (``synchronous = FULL``), for ratings a person typed. Judge
    workers pass False (``NORMAL``): in WAL mode a commit still survives a killed process, and a
    result lost to a power cut is lost together with its job's "done" mark, so it is recomputed.

    ``readonly``: the caller only reads. Where the file or its folder cannot be written, it is
    opened read-only (see ``open_readonly``); elsewhere as usual, so a due migration still runs.

    A file is recognised as a study before anything is written to it (``recognise``): another
    application's SQLite file is refused, unchanged -- no WAL switch, no migration.
    """
    path = Path(path)
    if str(path) == ":memory:":
        return _open_writable(path, durable)
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
    _one_name(path)
    recognise(path)
    why_not = _why_not_writable(path)
    if readonly and why_not:
        return open_readonly(path)
    if readonly:
        try:
            return _open_writable(path, durable)
        except UserError:  # e.g. a full disk: no room for -wal and -shm, yet the file can be read
            return open_readonly(path)
    if why_not:
        raise UserError(f"{why_not}; this command changes the study, so it cannot run (info, report and export can)")
    if shared:
        with contextlib.suppress(OSError):
            os.chmod(path, os.stat(path).st_mode | 0o060)
    return _open_writable(path, durable)


def _one_name(path: Path) -> None:
    """Refuse a study file with a second name (a hard link): SQLite keeps a -wal file per *name*, so two
    people opening one study by two names each commit into their own WAL and one's work is lost when
    the other's checkpoint runs. A symbolic link is fine: SQLite resolves it to the one real name."""
    try:
        links = os.stat(path).st_nlink
    except OSError:
        return  # not there (yet): the open says why
    if links > 1:
        raise UserError(
            f"{path} has {links} names (hard links); SQLite keeps one journal per name, so work saved through "
            "one name can be lost through another: keep one name (rm the others) or use a symbolic link"
        )


@dataclasses.dataclass(frozen=True)
class FileIdentity:
    """Which file a path named when it was opened: (device, inode)."""

    device: int
    inode: int


def file_identity(path: str | Path) -> FileIdentity | None:
    """The file ``path`` names now (None: an in-memory database, or nothing there)."""
    if str(path) == ":memory:":
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return FileIdentity(st.st_dev, st.st_ino)


def check_still_named(path: str | Path, held: FileIdentity | None) -> None:
    """Raise ``StudyMoved`` unless ``path`` still names the file ``held`` and that file has no other name.

    Renamed (``mv a.db b.db``), removed, replaced by another file, or given a second name (a hard link):
    each leaves this connection committing into its own ``-wal``, which a connection opening the study by
    its name now never reads (issue 36; ``_one_name`` refuses a second name at open). One ``stat``: cheap
    enough before and after every save."""
    if held is None:
        return
    name = Path(path).name
    tail = "while this session had it open: nothing more is saved here; quit, and open the study by the name it has now"
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise StudyMoved(f"the study file {name} was moved or removed {tail}") from None
    except OSError:
        return  # (a folder turned unreadable, say: SQLite itself says what fails)
    if (st.st_dev, st.st_ino) != (held.device, held.inode):
        raise StudyMoved(f"the study file {name} was moved, or replaced by another file, {tail}")
    if st.st_nlink > 1:
        raise StudyMoved(f"the study file {name} was given a second name (a hard link) {tail}")


def _open_writable(path: Path, durable: bool) -> StudyConnection:
    conn = sqlite3.connect(str(path), timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False)
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        if conn.execute("PRAGMA journal_mode").fetchone()[0].lower() != "wal":
            conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("PRAGMA synchronous = FULL" if durable else "PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
    except sqlite3.DatabaseError as exc:  # the file was recognised: this is the disk or the folder
        conn.close()
        raise UserError(f"cannot open {path} for writing ({exc}): is the disk full, or the folder read-only?") from None
    db = StudyConnection(conn)
    migrate(db, path)
    return db


# --- recognising a study ---------------------------------------------------------------------

SQLITE_MAGIC = b"SQLite format 3\x00"


def is_sqlite_file(path: str | Path) -> bool:
    """True when the file starts with SQLite's magic header (whatever application wrote it).

    Never call it on a database this process has open: closing any descriptor of a file drops
    every POSIX lock the process holds on it, and another process would then delete the WAL
    under the open connections (SQLite's documented pitfall, "How To Corrupt", §2.2). Study
    files are inspected through SQLite itself (``_inspect``).
    """
    try:
        with open(path, "rb") as handle:
            return handle.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def _fingerprint(conn: sqlite3.Connection) -> dict[str, tuple[str, ...]]:
    """Each table's sorted column names (SQLite's own tables left out)."""
    names = [
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    ]
    return {name: tuple(sorted(r[1] for r in conn.execute(f"PRAGMA table_info('{name}')"))) for name in names}


@functools.cache
def _expected_tables(version: int) -> dict[str, tuple[str, ...]]:
    """The tables a study of schema ``version`` has: the migrations applied to an empty database."""
    conn = sqlite3.connect(":memory:", isolation_level=None)
    try:
        for migration in MIGRATIONS[:version]:
            if callable(migration):
                migration(conn)
            else:
                for statement in statements(migration):
                    conn.execute(statement)
        return _fingerprint(conn)
    finally:
        conn.close()


def _inspect(path: Path) -> tuple[int, int, dict[str, tuple[str, ...]], int]:
    """(application id, user version, tables, schema objects of any kind) read without changing the file
    or creating -wal/-shm.

    Without a -wal file the main file is the whole database, so ``immutable=1`` reads it without
    creating anything; with one, a read-only connection reads the WAL's pages too.
    """
    wal = Path(f"{path}-wal")
    no_wal = not wal.exists() or wal.stat().st_size == 0
    modes = ["ro&immutable=1", "ro"] if no_wal else ["ro"]
    last: sqlite3.DatabaseError | None = None
    for mode in modes:
        try:
            conn = sqlite3.connect(f"{_uri(path)}?mode={mode}", uri=True, timeout=BUSY_TIMEOUT_S)
        except sqlite3.DatabaseError as exc:
            last = exc
            continue
        try:
            conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
            app_id = conn.execute("PRAGMA application_id").fetchone()[0]
            version = conn.execute("PRAGMA user_version").fetchone()[0]
            objects = conn.execute("SELECT count(*) FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'").fetchone()[0]
            return app_id, version, _fingerprint(conn), objects
        except sqlite3.DatabaseError as exc:
            last = exc
        finally:
            conn.close()
    if last is not None and "not a database" in str(last):
        raise UserError(f"{path} is not a tui-rater database (it is not an SQLite file); nothing was changed")
    raise UserError(f"{path} is not a tui-rater database ({last})")


def recognise(path: Path) -> None:
    """Accept a tui-rater study (or an empty file to make one); refuse anything else, unchanged.

    A study carries ``PRAGMA application_id = APPLICATION_ID`` (set since schema 3). Files of
    schema 1 and 2 predate it: they are recognised by their exact tables and columns.
    """
    if path.stat().st_size == 0:
        return  # a new file (ours, or `touch`ed): nothing in it to protect
    app_id, version, tables, objects = _inspect(path)
    if app_id == APPLICATION_ID:
        return  # ours; a newer schema is refused by ``migrate`` / ``open_readonly``
    if app_id != 0:
        raise UserError(
            f"{path} is another application's SQLite file (application id {app_id:#x}), "
            "not a tui-rater database; nothing was changed"
        )
    if app_id == 0 and version == 0 and not objects:
        return  # an empty SQLite database (no table, view, index or trigger): becomes a study
    if app_id == 0 and version in LEGACY_VERSIONS and tables == _expected_tables(version):
        return  # a study written before schema 3; migration 3 marks it
    what = f"tables: {', '.join(sorted(tables))}" if tables else f"no tables but {objects} other schema object(s)"
    raise UserError(
        f"{path} is an SQLite file but not a tui-rater database "
        f"(application id {app_id:#x}, user_version {version}, {what}); nothing was changed"
    )


# --- read-only studies -------------------------------------------------------------------------


def _why_not_writable(path: Path) -> str | None:
    """Why this process cannot write the study (None: it can). SQLite's WAL needs the file and,
    to create -wal and -shm next to it, the folder (unless both exist and can be written)."""
    if not os.access(path, os.W_OK):
        return f"{path} is read-only for this user"
    folder = path.parent
    if not os.access(folder, os.W_OK):
        sides = [Path(f"{path}-wal"), Path(f"{path}-shm")]
        if not all(side.exists() and os.access(side, os.W_OK) for side in sides):
            return f"the folder {folder} is read-only for this user, and SQLite must create {path.name}-wal there"
    return None


def _uri(path: Path) -> str:
    return "file:" + urllib.parse.quote(str(path.resolve()))


def open_readonly(path: Path) -> StudyConnection:
    """A study this process cannot write (the file, or its folder for -wal and -shm).

    Without a -wal file the main file holds everything: ``immutable=1`` reads it and creates
    nothing (a read-only connection would leave -wal and -shm behind, owned by this user, which
    could then stop the owner's writes). With a -wal, ``mode=ro`` reads it through the existing
    -shm; if even that fails (a read-only folder without -shm), immutable would read stale data,
    so a -wal holding changes is refused instead.
    """
    wal = Path(f"{path}-wal")
    if not wal.exists():
        conn = _connect_ro(path, "ro&immutable=1")
    else:
        try:
            conn = _connect_ro(path, "ro")
        except sqlite3.OperationalError as exc:
            if wal.stat().st_size > 0:
                raise UserError(
                    f"cannot read {path}: its folder is read-only and {wal.name} holds changes not yet in the "
                    f"file ({exc}); open it once where it can be written, or copy the files elsewhere"
                ) from None
            conn = _connect_ro(path, "ro&immutable=1")
    version = conn.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        conn.close()
        raise UserError(
            f"{path} was written by a newer tui-rater (schema {version}, this one knows {SCHEMA_VERSION}); "
            "upgrade tui-rater"
        )
    if version < READABLE_FROM:
        conn.close()
        raise UserError(
            f"{path} has schema {version} and must be upgraded once by a tui-rater command that can write to it "
            f"(this user cannot: {_why_not_writable(path)})"
        )
    return StudyConnection(conn)


def _connect_ro(path: Path, mode: str) -> sqlite3.Connection:
    conn = sqlite3.connect(
        f"{_uri(path)}?mode={mode}", uri=True, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
    )
    try:
        conn.execute(f"PRAGMA busy_timeout = {int(BUSY_TIMEOUT_S * 1000)}")
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()  # opening is lazy: fail here, not later
    except sqlite3.DatabaseError:
        conn.close()
        raise
    return conn


def migrate(db: StudyConnection, path: Path | str = "") -> int:
    """Apply the migrations this file lacks; return the version it ends at."""
    conn = db.conn
    version: int = conn.execute("PRAGMA user_version").fetchone()[0]
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
def write(db: StudyConnection) -> Iterator[sqlite3.Connection]:
    """One short write transaction (``BEGIN IMMEDIATE``), committed on exit, rolled back on error.

    Nested use joins the outer transaction. ``BEGIN IMMEDIATE`` takes the write lock up front,
    so two writers never deadlock on a lock upgrade; the busy timeout makes them queue. Writes go through
    sqlite-utils' ``Database`` (made here at the first write).
    """
    conn = db.database.conn
    if conn.in_transaction:
        yield conn
        return
    _begin_immediate(conn)
    try:
        yield conn
        conn.execute("COMMIT")
    except BaseException:
        # SQLite may have rolled back already (a full disk, an I/O error): the first error is the one to tell
        if conn.in_transaction:
            with contextlib.suppress(sqlite3.Error):
                conn.execute("ROLLBACK")
        raise


def inserted_id(cursor: sqlite3.Cursor) -> int:
    """The rowid of the row an ``INSERT`` just added (``lastrowid`` is typed optional: None before any insert)."""
    if cursor.lastrowid is None:
        raise RuntimeError("the INSERT added no row")
    return cursor.lastrowid


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

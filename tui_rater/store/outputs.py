"""Writing a report or an export: never over a study (or any SQLite file), never half-written.

An output is written to a temporary file in the target's folder and renamed into place, so the
target is either the old file or the whole new one. It gets the study file's permissions: a
study kept private (0600) does not leak through a 0644 export.

A target that is not a regular file (``/dev/null``, ``/dev/stdout``, a terminal, a named pipe) is
written into, never renamed over; a symbolic link is followed, so the file it names gets the output
and the link stays. Nothing that is not a regular file is ever read (a named pipe would block).
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import stat
import tempfile
from collections.abc import Callable
from pathlib import Path

from tui_rater.domain.errors import UserError
from tui_rater.store.db import is_sqlite_file

# SQLite's files next to a database: writing one of them would damage the database
SIDE_FILES = ("-wal", "-shm", "-journal")


def _same(a: Path, b: Path) -> bool:
    try:
        return a.samefile(b)
    except OSError:
        return a.resolve() == b.resolve()


def check_output_target(out: str | Path, study: str | Path | None = None) -> None:
    """Refuse (one sentence) an output path that is the study, one of its -wal/-shm/-journal files,
    any SQLite file, or a SQLite file's side file; or a folder, or in a folder that does not exist."""
    out = Path(out)
    if out.is_dir():
        raise UserError(f"cannot write {out}: it is a folder; give a file name")
    if not out.parent.exists():
        raise UserError(f"cannot write {out}: folder {out.parent} does not exist")
    refusal = f"refusing to write {out}: "
    if study is not None:
        study = Path(study)
        if out.exists() and _same(out, study):
            raise UserError(refusal + "it is the study file itself; choose another name")
        for suffix in SIDE_FILES:
            if _same(out.parent, study.parent) and out.name == study.name + suffix:
                raise UserError(refusal + f"it is the study's SQLite {suffix[1:]} file; choose another name")
    if out.exists() and _is_sqlite(out, study):
        raise UserError(refusal + "it is an SQLite database (perhaps a study); choose another name")
    for suffix in SIDE_FILES:
        if out.name.endswith(suffix):
            base = out.with_name(out.name.removesuffix(suffix))
            if base.exists() and _is_sqlite(base, study):
                raise UserError(refusal + f"it is the SQLite {suffix[1:]} file of the database {base}")


def _is_sqlite(path: Path, study: Path | None) -> bool:
    # the open study is never read by hand (``db.is_sqlite_file``: that would drop its locks); nor is
    # anything but a regular file (reading a named pipe waits for a writer)
    if study is not None and path.exists() and _same(path, study):
        return True
    return path.is_file() and is_sqlite_file(path)


def output_mode(like: str | Path | None) -> int:
    """The study file's read/write bits (no execute); without a study, what the umask allows."""
    if like is not None:
        with contextlib.suppress(OSError):
            return stat.S_IMODE(os.stat(like).st_mode) & 0o666
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def _special(out: Path) -> bool:
    """An existing target that is not a regular file (a device, a pipe, a socket), links followed."""
    try:
        return not stat.S_ISREG(os.stat(out).st_mode) and not stat.S_ISDIR(os.stat(out).st_mode)
    except OSError:
        return False


def write_output(out: str | Path, content: bytes | Callable[[Path], None], like: str | Path | None = None) -> None:
    """Write ``content`` (bytes, or a function that writes a given path) to ``out`` atomically,
    with the permissions of ``like`` (the study file). The target is checked again just before
    the rename: nothing is ever renamed over an SQLite file."""
    out = Path(out)
    check_output_target(out, like)
    if _special(out):
        _write_into(out, content)
        return
    if out.is_symlink():  # the file the link names gets the output; the link itself stays a link
        out = Path(os.path.realpath(out))
        check_output_target(out, like)
    fd, name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.", suffix=".partial")
    tmp = Path(name)
    try:
        with os.fdopen(fd, "wb") as handle:
            if isinstance(content, bytes):
                handle.write(content)
        if not isinstance(content, bytes):
            content(tmp)  # e.g. polars writing Parquet to a path
        with open(tmp, "rb+") as handle:
            os.fsync(handle.fileno())
        os.chmod(tmp, output_mode(like))
        check_output_target(out, like)
        os.replace(tmp, out)
    except OSError as exc:
        raise UserError(f"cannot write {out}: {exc.strerror or exc}") from None
    finally:
        tmp.unlink(missing_ok=True)


def _write_into(out: Path, content: bytes | Callable[[Path], None]) -> None:
    """Write into a device or a pipe as it is (no temporary file beside it, no rename over it)."""
    try:
        # a named pipe nobody reads: ENXIO at once instead of waiting forever for a reader
        fd = os.open(out, os.O_WRONLY | os.O_NONBLOCK)
    except OSError as exc:
        if exc.errno == errno.ENXIO:
            raise UserError(f"cannot write {out}: nothing is reading from it (a named pipe needs a reader)") from None
        raise UserError(f"cannot write {out}: {exc.strerror or exc}") from None
    try:
        os.set_blocking(fd, True)
        with os.fdopen(fd, "wb", closefd=True) as handle:
            if isinstance(content, bytes):
                handle.write(content)
                return
            with tempfile.TemporaryDirectory(prefix="tui-rater-") as folder:
                tmp = Path(folder) / f"output{out.suffix}"
                content(tmp)
                with open(tmp, "rb") as source:
                    shutil.copyfileobj(source, handle)
    except BrokenPipeError:
        raise UserError(f"cannot write {out}: the reader closed it before the output was complete") from None
    except OSError as exc:
        raise UserError(f"cannot write {out}: {exc.strerror or exc}") from None

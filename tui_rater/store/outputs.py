"""Writing a report or an export: never over a study (or any SQLite file), never half-written.

An output is written to a temporary file in the target's folder and renamed into place, so the
target is either the old file or the whole new one. It gets the study file's permissions: a
study kept private (0600) does not leak through a 0644 export.
"""

from __future__ import annotations

import contextlib
import os
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
    # the open study is never read by hand (``db.is_sqlite_file``: that would drop its locks)
    return (study is not None and path.exists() and _same(path, study)) or is_sqlite_file(path)


def output_mode(like: str | Path | None) -> int:
    """The study file's read/write bits (no execute); without a study, what the umask allows."""
    if like is not None:
        with contextlib.suppress(OSError):
            return stat.S_IMODE(os.stat(like).st_mode) & 0o666
    umask = os.umask(0)
    os.umask(umask)
    return 0o666 & ~umask


def write_output(out: str | Path, content: bytes | Callable[[Path], None], like: str | Path | None = None) -> None:
    """Write ``content`` (bytes, or a function that writes a given path) to ``out`` atomically,
    with the permissions of ``like`` (the study file). The target is checked again just before
    the rename: nothing is ever renamed over an SQLite file."""
    out = Path(out)
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

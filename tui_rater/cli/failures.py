"""What the machine did wrong, in one sentence: a full disk, a read-only file, a lock held too long.

``main`` catches what no layer below turned into a ``UserError``. Failures of the environment get
a sentence saying what to do (exit 1); anything else is a bug in tui-rater, said in one line with
a hint (exit 70, EX_SOFTWARE) -- never a traceback, never exit 0.
"""

from __future__ import annotations

import errno
import sqlite3

EXIT_ENVIRONMENT = 1
EXIT_BUG = 70  # sysexits.h EX_SOFTWARE

_SQLITE = (
    ("disk is full", "the disk is full (SQLite: {msg}); free some space and run the command again"),
    ("readonly database", "the study file cannot be written (SQLite: {msg}); check its permissions and its folder's"),
    ("disk i/o error", "reading or writing the study file failed (SQLite: {msg}); check the disk and run it again"),
    ("locked", "the study file stayed locked by another process (SQLite: {msg}); run the command again later"),
    ("busy", "the study file stayed locked by another process (SQLite: {msg}); run the command again later"),
    ("unable to open", "cannot open the study file (SQLite: {msg}); check the path and its folder's permissions"),
    ("malformed", "the study file is damaged (SQLite: {msg}); restore it from a copy"),
    ("not a database", "the study file is not an SQLite database (SQLite: {msg})"),
)

_OS = {
    errno.ENOSPC: "the disk is full{where}; free some space and run the command again",
    errno.EDQUOT: "the disk quota is used up{where}; free some space and run the command again",
    errno.EROFS: "the file system is read-only{where}",
    errno.EACCES: "permission denied{where}; check the file's and its folder's permissions",
    errno.EPERM: "operation not permitted{where}",
    errno.EFBIG: "the file would grow larger than allowed{where}",
    errno.EIO: "an input/output error{where}; check the disk",
    # a path that cannot hold a new file (a pseudo file system such as /proc, a folder removed meanwhile)
    errno.ENOENT: "no such file or folder{where}; check the path",
    errno.ENOTDIR: "a part of the path is not a folder{where}; check the path",
    errno.EISDIR: "the path is a folder, not a file{where}",
    errno.ENAMETOOLONG: "the file name is too long{where}",
}


def failure_sentence(exc: BaseException) -> tuple[str, int]:
    """(one sentence, exit status) for an exception no layer turned into a ``UserError``."""
    if isinstance(exc, sqlite3.Error):
        msg = str(exc)
        for needle, sentence in _SQLITE:
            if needle in msg.lower():
                return sentence.format(msg=msg), EXIT_ENVIRONMENT
    if isinstance(exc, OSError) and exc.errno in _OS:
        where = f" ({exc.filename})" if exc.filename else ""
        return _OS[exc.errno].format(where=where), EXIT_ENVIRONMENT
    if isinstance(exc, MemoryError):
        return "out of memory; close other programs or use a smaller model or --n-ctx", EXIT_ENVIRONMENT
    detail = str(exc).splitlines()[0][:300] if str(exc) else ""
    return (
        f"unexpected {type(exc).__name__}{': ' + detail if detail else ''} -- a bug in tui-rater; "
        "run it again with TUI_RATER_DEBUG=1 to see where, and report it",
        EXIT_BUG,
    )

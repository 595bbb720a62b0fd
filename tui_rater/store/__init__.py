"""The study file (SQLite). sqlite-utils is imported here first, with numpy and pandas hidden from it."""

from __future__ import annotations

import sys


def _import_sqlite_utils() -> None:
    """sqlite-utils imports numpy and pandas when they are installed, only to map their scalar types to column
    types in its ``insert``, which tui-rater never calls (its rows go through SQL). Hidden from that import, they
    stay out of every process that does not use them itself: an annotation session (one process per browser
    page under ``serve``) is ~15 MB and ~0.1 CPU-s lighter without numpy, and would be ~60 MB lighter without
    pandas. A process that imported them before keeps them, and sqlite-utils sees them there."""
    if "sqlite_utils" in sys.modules:
        return
    hidden = [name for name in ("numpy", "pandas") if name not in sys.modules]
    for name in hidden:
        sys.modules[name] = None  # type: ignore[assignment]  # (None: an import of it raises ImportError)
    try:
        import sqlite_utils  # noqa: F401
    finally:
        for name in hidden:
            if sys.modules.get(name, 0) is None:
                del sys.modules[name]


_import_sqlite_utils()

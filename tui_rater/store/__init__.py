"""The study file (SQLite). sqlite-utils is imported at its first use (``sqlite_utils_module``), with numpy and
pandas hidden from it."""

from __future__ import annotations

import sys
import threading
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

_HIDDEN = ("numpy", "pandas")


class _HiddenFromThisThread:
    """A finder that says numpy and pandas are not installed, to one thread only (the one importing sqlite-utils).
    The import is lazy, so it may run while another thread of the process imports numpy or polars (the app's
    agreement pane): ``sys.modules[name] = None`` would have failed that thread's import."""

    def __init__(self) -> None:
        self.thread = threading.get_ident()

    def find_spec(
        self, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        if name in _HIDDEN and threading.get_ident() == self.thread:
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None  # the next finder looks


def sqlite_utils_module() -> ModuleType:
    """sqlite-utils, imported on the first use of its ``Database`` (``db.StudyConnection.database``): a command that
    only reads the study through the connection (`info`: ~80 ms of its ~0.2 s was this import, with click, pluggy
    and dateutil) never waits for it.

    sqlite-utils imports numpy and pandas when they are installed, only to map their scalar types to column
    types in its ``insert``, which tui-rater never calls (its rows go through SQL). Hidden from that import, they
    stay out of every process that does not use them itself: an annotation session (one process per browser
    page under ``serve``) is ~15 MB and ~0.1 CPU-s lighter without numpy, and would be ~60 MB lighter without
    pandas. A process that imported them before keeps them, and sqlite-utils sees them there."""
    found = sys.modules.get("sqlite_utils")
    if found is not None and not getattr(found.__spec__, "_initializing", False):
        return found
    # absent, or still being imported by another thread (the module is in sys.modules from its first line, and
    # has no ``Database`` until its ``db`` submodule is loaded): the import statement waits for that import
    finder = _HiddenFromThisThread()
    sys.meta_path.insert(0, finder)
    try:
        import sqlite_utils
    finally:
        sys.meta_path.remove(finder)
    return sqlite_utils

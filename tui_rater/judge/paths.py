"""Where a judge keeps files of its own: the user cache folder (model checksums, llama.cpp's log).

A module of its own so that the engine (``engine/native.py``) and the judge's settings (``spec.py``) both use it
without importing each other.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """``$TUI_RATER_CACHE_DIR``, else the platform's user cache folder (``~/.cache/tui-rater`` on Linux)."""
    explicit = os.environ.get("TUI_RATER_CACHE_DIR")
    if explicit:
        return Path(explicit).expanduser()
    import platformdirs

    return Path(platformdirs.user_cache_dir("tui-rater", appauthor=False))


LLAMA_LOG_FILE = "llama.log"


def llama_log_path() -> Path:
    """Where llama.cpp's own log goes (every run appends to it; the terminal gets only what needs acting on)."""
    return cache_dir() / LLAMA_LOG_FILE


__all__ = ["LLAMA_LOG_FILE", "cache_dir", "llama_log_path"]

"""Where tui-rater keeps its own files (cache, logs), for the help texts: imports nothing heavy."""

from __future__ import annotations

from tui_rater.judge.paths import llama_log_path

__all__ = ["llama_log_path"]

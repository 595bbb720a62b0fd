"""The saving line: shown only while something is not saved and it matters (locked file, failed save, quitting)."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static


class SavingLine(Static):
    def show(self, line: Text | None) -> None:
        """``line``: ``SaveView.line``'s words, or None to hide the line."""
        self.display = line is not None
        if line is not None:
            self.update(line)

"""What the screen may call saved: the committed view, the unsaved changes over it, and the saving line.

Runs on the UI thread only. The committed view changes only when the store thread reports a
commit (``Committed``), so a rating is shown as saved (``[4]``, "N/M rated") only once it is in
the file; until then it is shown as unsaved (``[4…]``, "+1 saving"). Under SIGKILL, everything
the screen showed as saved is in the file.
"""

from __future__ import annotations

import time

from rich.text import Text

from tui_rater.domain.display import safe_text
from tui_rater.domain.values import ShowingKey
from tui_rater.ui.writer import Change, Committed, Stalled, describe

UNSAVED_MARK = "…"  # after a value typed but not yet in the file: [4…]
FAILED_MARK = "!"  # while saving fails (disk full ...): [4!]

Key = tuple[ShowingKey, str]  # (showing key, attribute): an item's retest showing has answers of its own


class SaveView:
    def __init__(self, saved: dict[Key, float], skipped: set[ShowingKey], flagged: set[ShowingKey]):
        self.saved = saved  # committed values of this annotator's ratings in force
        self.skipped, self.flagged = skipped, flagged  # committed notes
        self.unsaved: list[Change] = []  # submitted, not yet committed, oldest first
        self.stalled: Stalled | None = None  # why the oldest unsaved change is not committed yet
        self._overlay: dict[Key, float | None] = {}

    # --- what to show ----------------------------------------------------------------------

    def shown(self, key: Key) -> tuple[float | None, bool]:
        """The value to show for (item, attribute), and whether it is unsaved."""
        if key in self._overlay:
            return self._overlay[key], True
        return self.saved.get(key), False

    def mark(self) -> str:
        return FAILED_MARK if self.stalled is not None and not self.stalled.locked else UNSAVED_MARK

    def unsaved_notes(self, item_key: ShowingKey) -> list[str]:
        return [c.note for c in self.unsaved if c.kind == "note" and c.item_key == item_key and c.note]

    def is_flagged(self, item_key: ShowingKey) -> bool:
        """Flagged on screen: in the file, as changed by the unsaved flags and take-backs (``f`` twice)."""
        flagged = item_key in self.flagged
        for change in self.unsaved:
            if change.kind == "note" and change.item_key == item_key and change.note in ("flag", "unflag"):
                flagged = change.note == "flag"
        return flagged

    def unsaved_keys(self) -> set[ShowingKey]:
        return {key for key, _ in self._overlay}

    # --- changes -----------------------------------------------------------------------------

    def add(self, change: Change) -> None:
        self.unsaved.append(change)
        self._recompute()

    def discard(self, change: Change) -> None:
        """A change that will not be committed as it is (an answer held back while its item's lease was asked)."""
        if change in self.unsaved:
            self.unsaved.remove(change)
            self._recompute()

    def apply(self, committed: Committed) -> None:
        change = committed.change
        if change in self.unsaved:
            self.unsaved.remove(change)
        if change.kind == "rating" and change.item_key is not None and change.attribute is not None:
            self.saved[(change.item_key, change.attribute)] = change.value  # type: ignore[assignment]
        elif change.kind == "undo" and committed.result is not None:
            key, value = committed.result  # the value in force once the undo was committed
            if value is None:
                self.saved.pop(key, None)
            else:
                self.saved[key] = value
        elif change.kind == "note" and change.item_key is not None:
            if change.note == "skip":
                self.skipped.add(change.item_key)
            elif change.note == "flag":
                self.flagged.add(change.item_key)
            elif change.note == "unflag":
                self.flagged.discard(change.item_key)
        self.stalled = None  # the next change reports again if it waits too
        self._recompute()

    def _recompute(self) -> None:
        self._overlay = {
            (c.item_key, c.attribute): c.value
            for c in self.unsaved
            if c.kind in ("rating", "undo") and c.item_key is not None and c.attribute is not None
        }

    # --- the saving line ----------------------------------------------------------------------

    def line(self, quitting: bool = False, confirming: bool = False) -> Text | None:
        """The line above the questions while something is not saved and it matters (the file is
        locked, a save failed, the person is quitting); None when there is nothing to say."""
        if not self.unsaved:
            return None
        what = describe(self.unsaved)
        text = Text()
        if confirming:
            text.append(f"Quit now and lose {what} not saved yet?", style="bold reverse")
            text.append(" y = quit and lose them · Esc = keep rating · any other key = keep waiting")
            return text
        stalled = self.stalled
        if quitting:
            text.append(f"saving {what} before quitting… ", style="bold")
        elif stalled is None:
            return None  # saving normally: the marks [4…] say enough, a line would only flicker
        if stalled is not None and stalled.locked:
            waited = f"{time.monotonic() - stalled.since:.0f} s"
            text.append("waiting for the study file (locked by another process)", style="bold reverse")
            text.append(f", {waited}" if quitting else f": {what} not saved yet, {waited}")
        elif stalled is not None and stalled.final:
            text.append(f"NOT SAVED: {safe_text(stalled.error or '')}", style="bold reverse")
            text.append(f" · {what} not saved")
        elif stalled is not None:
            text.append(f"NOT SAVED: {safe_text(stalled.error or '')}", style="bold reverse")
            text.append("" if quitting else f" · {what} not saved yet")
            text.append(f"; trying again (attempt {stalled.attempts + 1})")
        if quitting and not (stalled is not None and stalled.final):
            text.append(" · q again: quit without them", style="dim")
        return text

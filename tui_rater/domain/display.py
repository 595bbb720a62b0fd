"""Item text made safe to put on a terminal: shown literally, never interpreted.

Markup (``[bold red]``) is never parsed because the UI builds ``rich.text.Text`` objects from
plain strings; this module handles what would reach the terminal itself: C0/C1 control
characters (ESC starts ANSI CSI and OSC sequences that can move the cursor, retitle the
window, set the clipboard or make hyperlinks) and bidirectional overrides that reorder what
the reader sees. Each becomes a visible placeholder. The stored text is never changed.
"""

from __future__ import annotations

import re

_BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
# every C0 control except tab and newline, DEL, and the C1 range
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + _BIDI + "]")
_NAMES = {
    "\x1b": "ESC",
    "\x00": "NUL",
    "\x07": "BEL",
    "\x08": "BS",
    "\r": "CR",
    "\x7f": "DEL",
    "\x9b": "CSI",
    "\x9d": "OSC",
}


def _placeholder(match: re.Match[str]) -> str:
    char = match.group()
    return f"⟨{_NAMES.get(char, f'U+{ord(char):04X}')}⟩"


def safe_text(text: str) -> str:
    """The text with every terminal-control character replaced by a visible ⟨NAME⟩ placeholder."""
    return _UNSAFE.sub(_placeholder, text.replace("\r\n", "\n"))

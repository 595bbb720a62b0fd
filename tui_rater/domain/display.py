"""Text from data made safe to put on a terminal: shown literally, never interpreted.

This is the one sanitiser for everything shown that came from data: item text, and the names,
ids, replies, error bodies and file names that come from a study file, an import, a task or
config file, or a server. Markup (``[bold red]``, ``[/]``, ``[link=…]``) is never parsed
because the UI and the CLI build ``rich.text.Text`` objects from plain strings (and their
Rich consoles have markup and emoji off); this module handles what would reach the terminal
itself: C0/C1 control characters (ESC starts ANSI CSI and OSC sequences that can move the
cursor, clear the screen, retitle the window, set the clipboard (OSC 52) or make hyperlinks),
bidirectional overrides that reorder what the reader sees, and lone surrogates (which cannot
be encoded, so printing them would crash). Each becomes a visible placeholder. The stored
text is never changed.
"""

from __future__ import annotations

import re

_BIDI = "\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069\u200e\u200f\u061c"
# every C0 control except tab and newline, DEL, the C1 range, bidi controls, lone surrogates
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f" + _BIDI + "\ud800-\udfff]")
# a name, an id or a message is one line: its line breaks and tabs are shown, not obeyed
_UNSAFE_INLINE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029" + _BIDI + "\ud800-\udfff]")
_NAMES = {
    "\x1b": "ESC",
    "\x00": "NUL",
    "\x07": "BEL",
    "\x08": "BS",
    "\t": "TAB",
    "\n": "LF",
    "\r": "CR",
    "\x7f": "DEL",
    "\x9b": "CSI",
    "\x9d": "OSC",
}


def _placeholder(match: re.Match[str]) -> str:
    char = match.group()
    return f"⟨{_NAMES.get(char, f'U+{ord(char):04X}')}⟩"


def safe_text(text: object, *, inline: bool = False) -> str:
    """The text with every terminal-control character replaced by a visible ⟨NAME⟩ placeholder.

    ``inline``: for a name, an id or a one-line message: line breaks and tabs become placeholders
    too (``⟨LF⟩``), so a value can neither break a table's layout nor forge a line of output.
    ``None`` is shown as an empty string; other values as ``str()`` shows them.
    """
    if text is None:
        return ""
    if not isinstance(text, str):
        text = str(text)
    if inline:
        return _UNSAFE_INLINE.sub(_placeholder, text.replace("\r\n", "\n"))
    return _UNSAFE.sub(_placeholder, text.replace("\r\n", "\n"))


def check_name(name: str, flag: str, longest: int) -> None:
    """A name a person gives (``--annotator``, ``--judge-name``): one line of text, no control characters.

    Such a name labels ratings in every table and report, so it is checked where it comes in, once, the
    same way for people and judges; anything shown later still goes through ``safe_text``.
    """
    from tui_rater.domain.errors import UserError

    if not name.strip():
        raise UserError(f"{flag} must not be empty")
    if _UNSAFE_INLINE.search(name):
        raise UserError(f"{flag} must be one line of text, without control characters")
    if len(name) > longest:
        raise UserError(f"{flag} is {len(name)} characters long; give at most {longest}")


# OWASP's CSV injection rule: a cell that starts with one of these is run by a spreadsheet as a formula
# (=HYPERLINK(...), +cmd|' /C calc'!A0, @SUM(...)); the full-width forms are read the same way
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r", "＝", "＋", "－", "＠")


def spreadsheet_safe(cell: str) -> str:
    """A CSV cell a spreadsheet shows as text: one that would start a formula gets a leading ``'``.

    A plain number ("-3", "+1.5e-2") is no formula and stays as it is.
    """
    if not cell.startswith(FORMULA_STARTS):
        return cell
    try:
        float(cell)
    except ValueError:
        return "'" + cell
    return cell

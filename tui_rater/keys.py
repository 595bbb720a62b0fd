"""The app's key-binding ids and the key names Textual understands, without importing Textual.

The config file's ``[keys]`` table maps these ids to key strings (``undo = "z,ctrl+z"``); config.py
checks it here so a typo gets one clear warning with the closest valid name instead of doing nothing.
The ids are those of the ``Binding(..., id=...)`` entries in ``ui/`` (tests/test_keys.py keeps the two
lists equal), and the key grammar is the one Textual matches key events against.
"""

from __future__ import annotations

import difflib
import string
import unicodedata

# The main screen's actions in the order of the help screen, with its words.
HELP: tuple[tuple[str, str], ...] = (
    # one line each at 80x24, so every row is in view without scrolling the help
    ("rate", "rate: keys under the question (0-100: digits, Enter)"),
    ("next_attribute", "next question"),
    ("prev_attribute", "previous question"),
    ("next_item", "next item"),
    ("prev_item", "previous item"),
    ("undo", "undo the last rating"),
    ("skip", "skip this item"),
    ("flag", "flag this item"),
    ("comment", "comment on this item"),
    ("goto", "go to an item"),
    ("agreement", "live agreement pane (^a where a answers A)"),
    ("scroll_down", "scroll the text"),
    ("scroll_up", "scroll the text back"),
    ("scroll_home", "the text's top"),
    ("scroll_end", "the text's end"),
    ("help", "this help"),
    ("quit", "quit (once every rating is in the file)"),
)
# typed numbers on 0-100 scales
NUMBER_ENTRY = ("enter", "backspace")
# the bindings of the other screens, named "<screen>.<action>"
SCREENS = (
    "help.close",
    "input.cancel",
    "reveal.up",
    "reveal.down",
    "reveal.agree",
    "reveal.disagree",
    "reveal.comment",
    "reveal.revise",
    "reveal.done",
    "agreement.close",
    "agreement.up",
    "agreement.down",
    "agreement.next_gap",
    "agreement.prev_gap",
    "agreement.jump",
    "agreement.cancel",
    "agreement.retry",
    "confirm.yes",
    "confirm.no",
)
ACTION_IDS: tuple[str, ...] = (*(action for action, _ in HELP), *NUMBER_ENTRY, *SCREENS)

# Textual's names: modifiers in the order its events carry them (sorted), keys without a character,
# and printable characters that are not letters or digits, by their Unicode name (textual.keys).
MODIFIERS = ("alt", "ctrl", "hyper", "meta", "shift", "super")
NAMED_KEYS = (
    "escape",
    "enter",
    "return",
    "tab",
    "space",
    "backspace",
    "delete",
    "insert",
    "home",
    "end",
    "pageup",
    "pagedown",
    "up",
    "down",
    "left",
    "right",
    *(f"f{n}" for n in range(1, 25)),
)
_RENAMED = {
    "solidus": "slash",
    "reverse_solidus": "backslash",
    "commercial_at": "at",
    "hyphen_minus": "minus",
    "plus_sign": "plus",
    "low_line": "underscore",
}


def character_name(character: str) -> str:
    """Textual's name for a key that types ``character`` ('?' -> 'question_mark'; letters stay as they are)."""
    if character.isalnum():
        return character
    name = unicodedata.name(character, character).lower().replace("-", "_").replace(" ", "_")
    return _RENAMED.get(name, name)


CHARACTER_NAMES = tuple(character_name(c) for c in string.punctuation)
BASE_KEYS = (*NAMED_KEYS, *CHARACTER_NAMES, *string.ascii_lowercase, *string.digits)


def closest(word: str, choices: tuple[str, ...] | list[str]) -> str | None:
    found = difflib.get_close_matches(word, choices, n=1, cutoff=0.6)
    return found[0] if found else None


def key_problem(key: str) -> tuple[str, str | None] | None:
    """Why Textual would never match ``key`` (one key of a comma-separated list), and a likely fix.

    None when the key is fine. Textual compares key strings literally, so 'Ctrl+Z', 'shift+ctrl+up' or
    'ctrl+?' are never pressed; a single character ('?', 'é', 'Z') is always fine.
    """
    key = key.strip()
    if not key:
        return "an empty key", None
    if len(key) == 1:
        return None
    head, _, base = key.rpartition("+")
    if not base and head.endswith("+"):  # "ctrl++"
        head, base = head[:-1], "+"
    mods = head.split("+") if head else []
    if mods == sorted(set(mods)) and all(m in MODIFIERS for m in mods):
        if base in NAMED_KEYS or base in CHARACTER_NAMES:
            return None
        if mods and len(base) == 1 and base.isalnum() and not base.isupper():
            return None
    return f"{key!r} is not a key Textual knows", _fix(mods, base)


def _fix(mods: list[str], base: str) -> str | None:
    fixed_mods = [closest(m.lower(), MODIFIERS) for m in mods]
    if len(base) == 1:
        fixed_base: str | None = character_name(base.lower())
    else:
        fixed_base = closest(base.lower(), BASE_KEYS)
    if fixed_base is None or None in fixed_mods:
        return None
    return "+".join([*sorted({m for m in fixed_mods if m}), fixed_base])


def check_keymap(keymap: dict[str, str]) -> tuple[dict[str, str], list[str]]:
    """The part of a ``[keys]`` table Textual can use, and one sentence for each thing left out."""
    usable: dict[str, str] = {}
    problems: list[str] = []
    for action, keys in keymap.items():
        if action not in ACTION_IDS:
            hint = closest(action, ACTION_IDS)
            problems.append(f"[keys] has no action {action!r}{_did_you_mean(hint)}; ignored")
            continue
        if not keys.strip():
            problems.append(f"[keys] {action} is empty; ignored, so {action} keeps its default keys")
            continue
        good = []
        for key in keys.split(","):
            problem = key_problem(key)
            if problem is None:
                good.append(key.strip())
            else:
                reason, fix = problem
                problems.append(f"[keys] {action} = {keys!r}: {reason}{_did_you_mean(fix)}; ignored")
        if good:
            usable[action] = ",".join(good)
        else:
            problems[-1] += f", so {action} keeps its default keys"
    return usable, problems


def _did_you_mean(hint: str | None) -> str:
    return f" (did you mean {hint!r}?)" if hint else ""

"""tui_rater/keys.py: the app's binding ids and Textual's key names, kept without importing Textual."""

from __future__ import annotations

import string
import subprocess
import sys

import pytest

from tests.support import ROOT
from tui_rater.keys import ACTION_IDS, CHARACTER_NAMES, HELP, NAMED_KEYS, check_keymap, key_problem


def _binding_ids(*classes) -> list[str]:
    from textual.binding import Binding

    return [b.id for cls in classes for b in cls.__dict__.get("BINDINGS", []) if isinstance(b, Binding) and b.id]


def _ui_classes() -> list[type]:
    """Every class defined in tui_rater/ui/ and its subpackages (screens/, widgets/) that declares BINDINGS
    (a new screen cannot slip past)."""
    import importlib
    import inspect
    import pkgutil

    import tui_rater.ui

    classes = []
    for info in pkgutil.walk_packages(tui_rater.ui.__path__, "tui_rater.ui."):
        module = importlib.import_module(info.name)
        classes += [
            c
            for _, c in inspect.getmembers(module, inspect.isclass)
            if c.__module__ == module.__name__ and "BINDINGS" in c.__dict__
        ]
    return classes


def test_the_ids_are_the_apps_binding_ids():
    from tui_rater.ui.app import RaterApp
    from tui_rater.ui.screens.rating import RatingScreen

    ids = _binding_ids(*_ui_classes())
    assert sorted(ids) == sorted(ACTION_IDS) and len(set(ids)) == len(ids)
    # the help screen lists every main-screen action (the rating screen's, and the app's quit) but the two of typed
    # numbers
    assert {a for a, _ in HELP} == set(_binding_ids(RatingScreen, RaterApp)) - {"enter", "backspace"}


def test_the_key_names_are_textuals():
    from textual.keys import Keys, _character_to_key

    plain = {k.value for k in Keys if "+" not in k.value and not k.value.startswith("<") and k.value != "ctrl-at"}
    assert plain == set(NAMED_KEYS)
    assert list(CHARACTER_NAMES) == [_character_to_key(c) for c in string.punctuation]


@pytest.mark.parametrize(
    "key",
    [
        *("u", "?", "é", "Z", "ctrl+z", "question_mark", "ctrl+question_mark", "pageup", "ctrl+shift+up"),
        *("f12", "space", "shift+tab", "alt+x", "ctrl+shift+pagedown", "ctrl+é", " ctrl+z "),
    ],
)
def test_keys_textual_matches(key):
    assert key_problem(key) is None


@pytest.mark.parametrize(
    "key,fix",
    [
        ("ctlr+z", "ctrl+z"),
        ("Ctrl+Z", "ctrl+z"),
        ("pgup", "pageup"),
        ("esc", "escape"),
        ("shift+ctrl+up", "ctrl+shift+up"),  # Textual's events carry the modifiers sorted
        ("ctrl+?", "ctrl+question_mark"),  # with a modifier, a character goes by its name
        ("ctrl++", "ctrl+plus"),
        ("F5", "f5"),
        ("ctrlz", None),
        ("", None),
    ],
)
def test_keys_textual_would_never_match(key, fix):
    problem = key_problem(key)
    assert problem is not None and problem[1] == fix


def test_check_keymap_keeps_what_works_and_says_what_it_left_out():
    usable, problems = check_keymap(
        {"undo": "u, ctlr+z", "undp": "x", "skip": "pgup", "flag": "", "quit": "Q", "agreement.jump": "space"}
    )
    assert usable == {"undo": "u", "quit": "Q", "agreement.jump": "space"}
    assert problems == [
        "[keys] undo = 'u, ctlr+z': 'ctlr+z' is not a key Textual knows (did you mean 'ctrl+z'?); ignored",
        "[keys] has no action 'undp' (did you mean 'undo'?); ignored",
        "[keys] skip = 'pgup': 'pgup' is not a key Textual knows (did you mean 'pageup'?); ignored, "
        "so skip keeps its default keys",
        "[keys] flag is empty; ignored, so flag keeps its default keys",
    ]


def test_the_key_module_does_not_import_textual():
    code = "import sys, tui_rater.config, tui_rater.keys; sys.exit(any(m.startswith('textual') for m in sys.modules))"
    assert subprocess.run([sys.executable, "-c", code], cwd=ROOT).returncode == 0

"""The rating screen owns its keys and actions (Posting's ``MainScreen``): the app holds only quitting, and the screen
knows nothing of the app's class (no cast, no import of it even for the type checker). The keys' behaviour is the
tmux and pilot tests' (test_terminal_rating.py, test_footer_keys.py, test_flow.py)."""

from __future__ import annotations

import grimp
from textual.binding import Binding

from tui_rater.ui.app import RaterApp
from tui_rater.ui.screens.rating import RatingScreen


def _ids(bindings: list) -> set[str]:
    return {b.id for b in bindings if isinstance(b, Binding) and b.id}


def test_the_rating_keys_and_their_actions_are_the_screens():
    assert _ids(RaterApp.BINDINGS) == {"quit"}
    rating = {"rate", "enter", "backspace", "next_attribute", "prev_attribute", "next_item", "prev_item", "undo"}
    rating |= {"skip", "flag", "comment", "goto", "scroll_up", "scroll_down", "scroll_home", "scroll_end"}
    assert _ids(RatingScreen.BINDINGS) == rating | {"agreement", "help"}
    digits = {b.key for b in RatingScreen.BINDINGS if isinstance(b, Binding) and b.action.startswith("digit(")}
    assert digits == set("0123456789")
    # every action a binding names is the screen's own method, and the app forwards none of them
    actions = {b.action.split("(")[0] for b in RatingScreen.BINDINGS if isinstance(b, Binding)}
    assert all(callable(getattr(RatingScreen, f"action_{name}", None)) for name in actions)
    assert not [name for name in vars(RaterApp) if name.startswith("action_")]


def test_the_rating_screen_does_not_import_the_app():
    graph = grimp.build_graph("tui_rater", exclude_type_checking_imports=False, cache_dir=None)
    assert not graph.chain_exists(importer="tui_rater.ui.screens.rating", imported="tui_rater.ui.app")

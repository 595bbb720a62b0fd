"""The app's screens, one module each (the agreement pane and the adjudication app have modules of their own,
``ui/agreement.py`` and ``ui/adjudicate.py``)."""

from tui_rater.ui.screens.confirm import ConfirmScreen
from tui_rater.ui.screens.help import HelpScreen
from tui_rater.ui.screens.input import InputScreen
from tui_rater.ui.screens.rating import RatingScreen
from tui_rater.ui.screens.reveal import RevealScreen

__all__ = ["ConfirmScreen", "HelpScreen", "InputScreen", "RatingScreen", "RevealScreen"]

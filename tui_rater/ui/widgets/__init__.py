"""The rating screen's widgets, one module each: they draw what the app hands them (attributes down)."""

from tui_rater.ui.widgets.end import EndLine
from tui_rater.ui.widgets.item import ItemPane
from tui_rater.ui.widgets.questions import QuestionsPane
from tui_rater.ui.widgets.saving import SavingLine
from tui_rater.ui.widgets.status import StatusLine

__all__ = ["EndLine", "ItemPane", "QuestionsPane", "SavingLine", "StatusLine"]

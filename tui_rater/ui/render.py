"""Rich renderables for items and questions (pure functions of the session's state)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from rich.cells import cell_len
from rich.text import Text

from tui_rater.domain import protocols
from tui_rater.domain.diff import changed_words
from tui_rater.domain.display import safe_text
from tui_rater.domain.tasks import Attribute, Task
from tui_rater.domain.values import Item

if TYPE_CHECKING:  # (rich.console and rich.table are imported where columns are drawn)
    from rich.console import Group


def label(task: Task, field: str) -> str:
    return task.field_labels.get(field) or field.replace("_", " ").capitalize() + ":"


def item_text(task: Task, item: Item, attribute: Attribute, *, show_system: bool, prompt_always: bool) -> Text:
    """The item as the human sees it: instructions, then each shown field, literally."""
    text = Text()
    if task.instructions:
        text.append(safe_text(task.instructions) + "\n\n", style="dim")
    if show_system and item.system:
        text.append(f"written by: {safe_text(item.system, inline=True)}\n\n", style="italic")
    # fields shown for one question only come after the others (Chiang & Lee's form shows the
    # PROMPT after the story, for relevance), unless the annotator asked to see them always
    extra = [f for f in task.fields if f not in task.display_fields and (prompt_always or f in attribute.shows)]
    for name in (*task.display_fields, *extra):
        value = item.fields.get(name, "")
        text.append(safe_text(label(task, name)) + "\n", style="bold")
        if task.changed_words and name == task.changed_words[1]:
            # Figure 5: the words the attack changed are in bold
            for span in changed_words(item.fields.get(task.changed_words[0], ""), value):
                text.append(safe_text(span.text), style="bold reverse" if span.changed else "")
            text.append("\n\n")
        else:
            # the paper's form introduces a field shown for one question ("Now read the PROMPT ...")
            intro = next((a.intro for a in task.attributes if name in a.shows and a.intro), "")
            if intro and name in extra:
                text.append(safe_text(intro) + "\n", style="italic")
            text.append(safe_text(shown_part(value)) + "\n\n")
            if len(value) > len(shown_part(value)):
                text.append(cut_notice(value) + "\n\n", style="bold reverse")
    return text


# the most of one field the app lays out (Rich wraps ~25,000 lines a second: an item of 50,000 lines froze
# the app for 9-16 s a key); past it the field is cut, visibly, and the stored item is untouched
MAX_SHOWN_LINES = 600
MAX_SHOWN_CHARS = 40_000


def shown_part(value: str) -> str:
    """The start of a field that the app shows: at most MAX_SHOWN_LINES lines and MAX_SHOWN_CHARS characters."""
    if len(value) <= MAX_SHOWN_CHARS and value.count("\n") < MAX_SHOWN_LINES:
        return value
    part = value[:MAX_SHOWN_CHARS]
    cut = -1
    for _ in range(MAX_SHOWN_LINES):
        cut = part.find("\n", cut + 1)
        if cut < 0:
            return part
    return part[:cut]


def cut_notice(value: str) -> str:
    shown = shown_part(value)
    rest_lines = value.count("\n") - shown.count("\n")
    rest = f"{rest_lines:,} more lines" if rest_lines > 0 else f"{len(value) - len(shown):,} more characters"
    return (
        f"⟨… {rest} not shown: this field is too long to show here whole; "
        "`tui-rater export --what items` has all of it⟩"
    )


def scale_hint(attribute: Attribute, width: int | None = None) -> str:
    """The keys that answer ``attribute``, on one line of ``width`` cells: whole where they fit, else the
    longest choice labels cut first, each cut one ending in "…" (a label cut silently read as whole)."""
    human = protocols.of(attribute).human_input(attribute)
    if not human.labels:
        return shorten(safe_text(human.hint, inline=True), width)
    labels = [safe_text(label, inline=True) for label in human.labels]
    keys = [safe_text(key, inline=True) for key in human.keys]  # a package's protocol says them too

    def joined(longest: int | None) -> str:
        return "  ".join(f"{key} = {shorten(label, longest)}" for key, label in zip(keys, labels))

    if width is None or cell_len(joined(None)) <= width:
        return joined(None)
    for longest in range(max(map(cell_len, labels)) - 1, 0, -1):
        if cell_len(joined(longest)) <= width:
            return joined(longest)
    return shorten(joined(1), width)


def shorten(text: str, width: int | None) -> str:
    """``text`` in at most ``width`` cells, ending in "…" when cut."""
    if width is None or cell_len(text) <= width:
        return text
    cut = Text(text)
    cut.truncate(max(1, width), overflow="ellipsis")
    return cut.plain


def format_value(attribute: Attribute, value: float | None) -> str:
    return safe_text(protocols.of(attribute).format_value(attribute, value))


HINT_INDENT = "     "


def questions_text(
    task: Task,
    values: dict[str, float | None],
    focus: int,
    typed: str,
    window: int = 6,
    marks: dict[str, str] | None = None,
    width: int | None = None,
) -> Text:
    """The questions, verbatim, with their answers; the focused one marked (not by colour alone).

    ``marks``: after an answer not yet in the file, "…" (or "!" while saving fails): ``[4…]``.

    With more than ``window`` questions (SPA asks one per ordered pair of writers), a window
    around the focused one is shown with a count of the others. ``width``: the pane's, for the answer keys' line.
    """
    text = Text()
    attributes = list(enumerate(task.attributes))
    hidden_before = hidden_after = 0
    if len(attributes) > window:
        start = max(0, min(focus - window // 2, len(attributes) - window))
        hidden_before, hidden_after = start, len(attributes) - start - window
        attributes = attributes[start : start + window]
    if hidden_before:
        answered = sum(values.get(a.name) is not None for a in task.attributes[:hidden_before])
        text.append(f"  … {hidden_before} questions above ({answered} answered)\n", style="dim")
    for position, attribute in attributes:
        focused = position == focus
        value = values.get(attribute.name)
        marker = "▶ " if focused else "  "
        answer = f"[{format_value(attribute, value)}{(marks or {}).get(attribute.name, '')}]"
        if focused and typed:
            answer = f"[{typed}_]"
        style = "bold reverse" if focused else ""
        text.append(marker + answer + " ", style=style)
        text.append(f"{safe_text(attribute.name, inline=True)}: ", style="bold")
        text.append(safe_text(attribute.question))
        if focused:
            hint = scale_hint(attribute, None if width is None else width - len(HINT_INDENT))
            text.append(f"\n{HINT_INDENT}{hint}", style="dim")
        text.append("\n")
    if hidden_after:
        text.append(f"  … {hidden_after} questions below\n", style="dim")
    return text


def pairwise_columns(task: Task, item: Item, attribute: Attribute) -> Group:
    """Two texts side by side (wide terminals): instructions and prompt above, the compared texts in columns."""
    from rich.console import Group
    from rich.table import Table

    pair = protocols.of(attribute).compared_fields(attribute)
    head = Text()
    if task.instructions:
        head.append(safe_text(task.instructions) + "\n\n", style="dim")
    for name in task.display_fields:
        if name not in pair:
            head.append(safe_text(label(task, name)) + "\n", style="bold")
            head.append(safe_text(item.fields.get(name, "")) + "\n\n")
    grid = Table.grid(expand=True, padding=(0, 2))
    grid.add_column(ratio=1)
    grid.add_column(ratio=1)
    grid.add_row(
        *(Text(safe_text(label(task, n)) + "\n", style="bold") + Text(safe_text(item.fields.get(n, ""))) for n in pair)
    )
    return Group(head, grid)


WRITER_MARK = "━━ Writer "


def spa_columns(task: Task, item: Item, width: int) -> Group | None:
    """SPA's writers side by side when each gets at least 48 columns; None when they would not fit."""
    from rich.console import Group
    from rich.table import Table

    text = item.fields.get("writers", "")
    blocks = [b for b in text.split(WRITER_MARK) if b.strip()]
    if len(blocks) < 2 or width < 48 * len(blocks):
        return None
    head = Text(safe_text(task.instructions) + "\n\n", style="dim") if task.instructions else Text()
    grid = Table.grid(expand=True, padding=(0, 2))
    for _ in blocks:
        grid.add_column(ratio=1)
    grid.add_row(*(Text(safe_text(WRITER_MARK + block.rstrip())) for block in blocks))
    return Group(head, grid)

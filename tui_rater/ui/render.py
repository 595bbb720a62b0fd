"""Rich renderables for items and questions (pure functions of the session's state)."""

from __future__ import annotations

from rich.text import Text

from tui_rater.domain.diff import changed_words
from tui_rater.domain.display import safe_text
from tui_rater.domain.tasks import Attribute, Task
from tui_rater.store.study import Item

FIELD_LABELS = {
    "story": "Story fragment:",
    "prompt": "PROMPT:",
    "title": "News title:",
    "original": "News title 1:",
    "attacked": "News title 2:",
    "story_a": "Storyline-1:",
    "story_b": "Storyline-2:",
}


def label(field: str) -> str:
    return FIELD_LABELS.get(field, field.replace("_", " ").capitalize() + ":")


def item_text(task: Task, item: Item, attribute: Attribute, *, show_system: bool, prompt_always: bool) -> Text:
    """The item as the human sees it: instructions, then each shown field, literally."""
    text = Text()
    if task.instructions:
        text.append(safe_text(task.instructions) + "\n\n", style="dim")
    if show_system and item.system:
        text.append(f"written by: {safe_text(item.system)}\n\n", style="italic")
    # fields shown for one question only come after the others (Chiang & Lee's form shows the
    # PROMPT after the story, for relevance), unless the annotator asked to see them always
    extra = [f for f in task.fields if f not in task.display_fields and (prompt_always or f in attribute.shows)]
    for name in (*task.display_fields, *extra):
        value = item.fields.get(name, "")
        text.append(label(name) + "\n", style="bold")
        if task.name == "title-meaning" and name == "attacked":
            # Figure 5: the words the attack changed are in bold
            for span in changed_words(item.fields.get("original", ""), value):
                text.append(safe_text(span.text), style="bold reverse" if span.changed else "")
            text.append("\n\n")
        else:
            if name == "prompt" and task.name == "story":
                text.append("Now read the PROMPT based on which the story fragment was written.\n", style="italic")
            text.append(safe_text(value) + "\n\n")
    return text


def choice_keys(scale) -> list[str]:
    """Keys for a choice scale: a / b / t for Chen et al.'s A / B / tie, else the digits 1..k
    (letters would collide with the app's own keys: s skip, f flag, c comment ...)."""
    keys = tuple(c.key for c in scale.choices)
    if keys == ("A", "B", "C"):
        return ["a", "b", "t"]
    if keys == ("A", "B"):
        return ["a", "b"]
    return [str(i + 1) for i in range(len(keys))]


def scale_hint(attribute: Attribute) -> str:
    scale = attribute.scale
    if scale.kind == "choice":
        return "  ".join(f"{key} = {safe_text(c.label)[:28]}" for key, c in zip(choice_keys(scale), scale.choices))
    if scale.kind == "likert":
        low, high = int(scale.low), int(scale.high)
        ends = ""
        if scale.labels:
            ends = f"  ({low} {scale.labels.get(low, '')} … {high} {scale.labels.get(high, '')})"
        return f"keys {low}-{high}{ends}"
    return f"type {scale.low:g}-{scale.high:g}, then Enter"


def format_value(attribute: Attribute, value: float | None) -> str:
    if value is None:
        return "·"
    if attribute.scale.kind == "choice":
        return attribute.scale.choices[int(value)].key
    return f"{value:g}"


def questions_text(
    task: Task,
    values: dict[str, float | None],
    focus: int,
    typed: str,
    window: int = 6,
    marks: dict[str, str] | None = None,
) -> Text:
    """The questions, verbatim, with their answers; the focused one marked (not by colour alone).

    ``marks``: after an answer not yet in the file, "…" (or "!" while saving fails): ``[4…]``.

    With more than ``window`` questions (SPA asks one per ordered pair of writers), a window
    around the focused one is shown with a count of the others.
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
        text.append(f"{attribute.name}: ", style="bold")
        text.append(safe_text(attribute.question))
        if focused:
            text.append(f"\n     {scale_hint(attribute)}", style="dim")
        text.append("\n")
    if hidden_after:
        text.append(f"  … {hidden_after} questions below\n", style="dim")
    return text


def pairwise_columns(task: Task, item: Item, attribute: Attribute):
    """Two texts side by side (wide terminals): instructions and prompt above, the storylines in columns."""
    from rich.console import Group
    from rich.table import Table

    head = Text()
    if task.instructions:
        head.append(safe_text(task.instructions) + "\n\n", style="dim")
    for name in task.display_fields:
        if name not in ("story_a", "story_b"):
            head.append(label(name) + "\n", style="bold")
            head.append(safe_text(item.fields.get(name, "")) + "\n\n")
    grid = Table.grid(expand=True, padding=(0, 2))
    grid.add_column(ratio=1)
    grid.add_column(ratio=1)
    grid.add_row(
        *(Text(label(n) + "\n", style="bold") + Text(safe_text(item.fields.get(n, ""))) for n in ("story_a", "story_b"))
    )
    return Group(head, grid)


WRITER_MARK = "━━ Writer "


def spa_columns(task: Task, item: Item, width: int):
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

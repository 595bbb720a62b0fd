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


def scale_hint(attribute: Attribute) -> str:
    scale = attribute.scale
    if scale.kind == "choice":
        return "  ".join(f"{c.key.lower()}={safe_text(c.label)[:24]}" for c in scale.choices)
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


def questions_text(task: Task, values: dict[str, float | None], focus: int, typed: str) -> Text:
    """Every question, verbatim, with its current answer; the focused one marked (not by colour alone)."""
    text = Text()
    for position, attribute in enumerate(task.attributes):
        focused = position == focus
        value = values.get(attribute.name)
        marker = "▶ " if focused else "  "
        answer = f"[{format_value(attribute, value)}]"
        if focused and typed:
            answer = f"[{typed}_]"
        style = "bold reverse" if focused else ""
        text.append(marker + answer + " ", style=style)
        text.append(f"{attribute.name}: ", style="bold")
        text.append(safe_text(attribute.question))
        if focused:
            text.append(f"\n     {scale_hint(attribute)}", style="dim")
        text.append("\n")
    return text

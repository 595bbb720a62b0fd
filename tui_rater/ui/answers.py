"""How a person answers the focused question with keys, and what the footer and messages call those keys."""

from __future__ import annotations

from tui_rater.domain import protocols
from tui_rater.domain.tasks import Attribute


def choice_letters(attribute: Attribute) -> tuple[str, ...]:
    """The question's answer keys that are letters (pairwise a / b / t): they answer it, ahead of the
    bindings of the same keys (``RatingScreen.choose``, ``QuestionsPane.check_consume_key``)."""
    human = protocols.of(attribute).human_input(attribute)
    return tuple(key for key in human.keys if not key.isdigit()) if human.kind == "key" else ()


def answer_keys(attribute: Attribute) -> str:
    """The question's answer keys in a few characters, as the footer and messages name them: "1-5",
    "0-100" (typed, then Enter), "a/b/t"."""
    human = protocols.of(attribute).human_input(attribute)
    if human.kind == "number":
        return f"{attribute.scale.low:g}-{attribute.scale.high:g}"
    keys = human.keys
    numbers = [int(k) for k in keys if k.isdigit()]
    consecutive = len(numbers) == len(keys) > 2 and numbers == list(range(numbers[0], numbers[0] + len(keys)))
    return f"{keys[0]}-{keys[-1]}" if consecutive else "/".join(keys)


def keymap_without(keymap: dict[str, str], letters: tuple[str, ...]) -> dict[str, str]:
    """The config file's [keys] less the focused question's choice letters. ``RatingScreen`` keeps those from
    the default bindings, but Textual applies the keymap after that filter: a remapped key (``next_attribute =
    "down,tab,t"``, a priority binding) took `t` from the tie, and a remapped `b` showed in the footer."""
    kept_keymap = {}
    for binding_id, keys in keymap.items():
        kept = [key for key in keys.split(",") if key.strip() not in letters]
        if kept:  # an action whose every key answers here keeps its default keys (the filter applies to those)
            kept_keymap[binding_id] = keys if len(kept) == len(keys.split(",")) else ",".join(kept)
    return kept_keymap

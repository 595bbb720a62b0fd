"""Short, readable, unique labels for raters: what reports, the live pane and ``tui-rater judges`` call them.

A judge configuration's rater name is exact but unreadable (``tiny.gguf@1a2b3c4d/text/plain/T1/p0.9/s0#9f8e7d``).
Its label is ``J<n> <what>``: ``n`` numbers the study's judge configurations in the order they were
created, ``what`` is the name the user gave it (``--judge-name``) or its model and mode
(``J1 qwen2-0.5b text``). A person, a judge whose ratings were imported, and a rater stored under
a name of its own are labelled by that name. Labels are stored (``raters.label``, unique): a label
never changes once given, and two raters never share one. Nothing here touches SQLite.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

MAX_JUDGE_NAME = 40  # a --judge-name longer than this is refused (a label is read in a table column)
MAX_MODEL_CHARS = 24  # a model name in a label is cut here ("…" marks the cut)


def is_configured(kind: str, config: dict[str, Any] | None) -> bool:
    """A judge configuration this tool ran: its provenance (``judge.spec.provenance``) names the backend.

    Anything else -- a person, a judge whose ratings were imported, a rater a script stored under a
    name of its own -- is labelled by its name."""
    return kind == "llm" and isinstance(config, dict) and isinstance(config.get("backend"), str)


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def model_of(config: dict[str, Any], name: str) -> str:
    """The model a configuration ran, in a few characters: the GGUF file's stem, or the API model."""
    if config.get("model_file"):
        model = str(config["model_file"])
        model = model[: -len(".gguf")] if model.lower().endswith(".gguf") else model
    elif config.get("api_model"):
        model = str(config["api_model"])
    elif config.get("model"):
        model = Path(str(config["model"])).name
    else:  # a configuration from before the provenance named the model: the start of its rater name
        model = name.split("/")[0].split("#")[0] or "judge"
    return _cut(model, MAX_MODEL_CHARS)


def describe(config: dict[str, Any], name: str) -> str:
    """What a judge configuration is called after its number: the user's name for it, or model and mode."""
    given = config.get("judge_name")
    if isinstance(given, str) and given.strip():
        return given
    mode = config.get("mode")
    return f"{model_of(config, name)} {mode}" if isinstance(mode, str) and mode else model_of(config, name)


def judge_label(number: int, config: dict[str, Any], name: str, taken: set[str]) -> str:
    """``J<number> <what>``, made unique against ``taken`` (a person may be called anything)."""
    base = f"J{number} {describe(config, name)}"
    label, k = base, 2
    while label in taken:
        label, k = f"{base} ({k})", k + 1
    return label


def assign_all(raters: list[tuple[int, str, str, dict[str, Any] | None]]) -> dict[int, str]:
    """Labels for every rater of a study at once, (id, name, kind, config) in creation order (migration 5):
    people and imported judges keep their names; judge configurations are numbered in order."""
    labels = {rid: name for rid, name, kind, config in raters if not is_configured(kind, config)}
    taken = set(labels.values())
    number = 0
    for rid, name, kind, config in raters:
        if is_configured(kind, config):
            number += 1
            labels[rid] = judge_label(number, config or {}, name, taken)
            taken.add(labels[rid])
    return labels

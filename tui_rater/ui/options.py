"""How the annotation app runs: the CLI's flags that change what the screen shows and does."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class AppOptions:
    blind: bool = True  # hide who wrote the item
    reveal: bool = False  # after each item, show the other raters (App. C.3.2)
    prompt_always: bool = False  # show the prompt for every question, not only relevance
    keymap: dict[str, str] | None = None
    # judges to start in the background once the first item is on screen (their jobs are
    # enqueued off the UI thread)
    judge_specs: tuple[Any, ...] = ()

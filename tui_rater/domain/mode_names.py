"""The judge modes' names, as constants: ``--mode``'s choices are built from these without importing the modes
(domain/modes.py imports the protocols, the parser's regular expressions and the pre-flight checks, which
``tui-rater --help`` never uses). domain/modes.py checks that its built-in modes are exactly these, in this order."""

from __future__ import annotations

import sys
from collections.abc import Iterator

MODE_NAMES: tuple[str, ...] = ("text", "constrained", "distribution", "implicit")


class RegisteredModes:
    """``--mode``'s choices: the registered modes (a mode module may add one, domain/modes.register), read without
    importing the modes until a value is checked. Listing them (the usage line, --help) shows the registered ones
    once domain/modes.py is loaded, else the built-in names; checking a given value loads it (the run needs it)."""

    def _names(self) -> tuple[str, ...]:
        modes = sys.modules.get("tui_rater.domain.modes")
        return tuple(modes.MODES) if modes is not None else MODE_NAMES

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name: object) -> bool:
        from tui_rater.domain.modes import MODES  # a --mode was given: the run imports the modes anyway

        return name in MODES

"""The judge modes' names, as constants: ``--mode``'s choices are built from these without importing the modes
(domain/modes.py imports the protocols, the parser's regular expressions and the pre-flight checks, which
``tui-rater --help`` never uses). domain/modes.py checks that its built-in modes are exactly these, in this order;
cli/common.RegisteredModes lists them."""

from __future__ import annotations

MODE_NAMES: tuple[str, ...] = ("text", "constrained", "distribution", "implicit")

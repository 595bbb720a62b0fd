"""tui-rater: humans and LLM judges rate the same texts with the same instructions.

Only light names are exported here: importing ``tui_rater`` must not import Textual,
llama.cpp or openai (headless commands and the judge workers import this package).
``parse_score`` and ``ParseResult`` are loaded on first use (PEP 562): the parser compiles some
hundred regular expressions when imported (~40 ms), which ``tui-rater --help`` and ``info`` never use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from tui_rater.domain.parsing import ParseResult, parse_score

__all__ = ["ParseResult", "__version__", "parse_score"]
__version__ = "0.1.0"

_LAZY = {"ParseResult", "parse_score"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        from tui_rater.domain import parsing

        return getattr(parsing, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

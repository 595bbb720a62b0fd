"""tui-rater: humans and LLM judges rate the same texts with the same instructions.

Only light names are exported here: importing ``tui_rater`` must not import Textual,
llama.cpp or openai (headless commands and the judge workers import this package).
"""

from tui_rater.domain.parsing import ParseResult, parse_score

__all__ = ["ParseResult", "__version__", "parse_score"]
__version__ = "0.1.0"

"""Word-level diff of a title pair: which words of the attacked title changed.

Chiang & Lee (Figure 5) show humans the substituted words in bold.
"""

from __future__ import annotations

import difflib
import re
from dataclasses import dataclass

_TOKEN = re.compile(r"\S+|\s+")


@dataclass(frozen=True)
class Span:
    text: str
    changed: bool


def changed_words(original: str, attacked: str) -> list[Span]:
    """Split ``attacked`` into spans, marking words not in the aligned ``original``.

    Whitespace is kept as its own unchanged spans, so joining the texts gives ``attacked`` back.
    """
    before = _TOKEN.findall(original)
    after = _TOKEN.findall(attacked)
    words_before = [t for t in before if not t.isspace()]
    words_after_idx = [i for i, t in enumerate(after) if not t.isspace()]
    words_after = [after[i] for i in words_after_idx]
    changed_idx: set[int] = set()
    matcher = difflib.SequenceMatcher(a=words_before, b=words_after, autojunk=False)
    for tag, _i1, _i2, j1, j2 in matcher.get_opcodes():
        if tag in ("replace", "insert"):
            changed_idx.update(words_after_idx[j1:j2])
    return [Span(token, i in changed_idx) for i, token in enumerate(after)]

"""Reply text -> score, or a typed failure.

Chiang & Lee App. D.2.1 strip "1-5", "out of 5", "/5" and "title 1"/"title 2", then take the
first number. That rule reads "On a scale of 1-5, with 1 being the lowest, I would rate ... as
a 5" as 1 (the paper read ChatGPT's replies by hand). This parser keeps the paper's
spirit -- strip the scale's own description, keep x.5 scores -- but looks for the number the
reply *assigns* before falling back to the first number:

1. remove scale descriptions ("on a scale of 1-5", "with 1 being the lowest", "(1-100)",
   "title 1", "Storyline-2" ...) and markdown emphasis;
2. assignment patterns: "rate ... as a 3", "Score: 85", "4/5", "4 out of 5", "Rating: 4",
   "4 stars", and a reply that opens with its number ("2 — The story ...");
3. otherwise the numbers left: one distinct value -> that value; several -> ``ambiguous``.

Failures: ``refusal`` ("I am an AI and I do not have the ability ..."), ``no_number``,
``out_of_range``, ``ambiguous``. The raw reply is always kept by the caller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FAILURES = ("refusal", "no_number", "out_of_range", "ambiguous")

_NUMBER_WORDS = {
    "zero": 0,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
}
_NUM = r"(\d+(?:\.\d+)?|" + "|".join(_NUMBER_WORDS) + r")"

_REFUSAL = re.compile(
    r"\b(as an ai|i am an ai|i'm an ai|i am a language model|i'm a language model|as a language model|"
    r"do not have the ability|don't have the ability|cannot provide (?:a )?(?:rating|score)|"
    r"can(?:not|'t) (?:rate|evaluate|score|assess)|unable to (?:rate|evaluate|score|assess)|"
    r"i am not able to|i'm not able to|i'm sorry, but i|i apologize, but i|"
    r"do not have personal (?:preferences|opinions|feelings)|don't have personal (?:preferences|opinions|feelings))",
    re.IGNORECASE,
)

# Scale descriptions the judge echoes back: removed before looking for the score.
_SCALE_NOISE = [
    re.compile(p, re.IGNORECASE)
    for p in (
        r"\bon a (?:continual |continuous |likert |\d+-point )?scale (?:of|from) "
        r"\d+\s*(?:-|–|—|to)\s*\d+(?:\s*\([^)]*\))?",
        r"\bfrom \d+ \((?:worst|lowest)\) to \d+ \((?:best|highest)\)",
        r"\b(?:with )?\d+ being (?:the )?(?:lowest|highest|worst|best|strongly disagree|strongly agree|"
        r"not at all|very)[^,.;)]*",
        r"\(\s*\d+\s*(?:-|–|to)\s*\d+\s*\)",
        r"\b(?:score|rating|stars?)\s*:?\s*\(?\s*\d+\s*(?:-|–|to)\s*\d+\b\s*\)?",
        r"\b(?:news )?title\s*[12]\b",
        r"\bstoryline[- ]?[12]\b",
        r"\btext[- ][12]\b",
        r"\b\d+\s*(?:-|–|to)\s*\d+\s+scale\b",
        r"\bscale\s*(?:of|from)?\s*\d+\s*(?:-|–|to)\s*\d+",
    )
]

_ASSIGN = [
    # "4/5", "4 / 5", "85/100"
    re.compile(r"(?<![\d.])" + _NUM + r"\s*/\s*(?:5|10|100)\b", re.IGNORECASE),
    # "4 out of 5"
    re.compile(r"(?<![\d.])" + _NUM + r"\s+out\s+of\s+(?:5|10|100|five|ten)\b", re.IGNORECASE),
    # "Score: 85", "Rating: 4", "Answer: 3", "Final score = 70", "score of 4", "score is 4"
    re.compile(
        r"\b(?:final |overall |my )?(?:score|rating|answer|grade|stars)\s*(?:\*+\s*)?(?::|=|is|of|would be|will be)\s*"
        r"(?:a |an )?(?:\*+\s*)?" + _NUM + r"\b",
        re.IGNORECASE,
    ),
    # "I would rate ... as a 3", "I'd give it a 4", "I rate this story a 2 on Complexity"
    re.compile(
        r"\b(?:rate|rated|rating|give|gave|giving|assign|assigned|score|scored)\b[^.\d!?\n]{0,120}?"
        r"\b(?:as|at|a|an|with|of|to|:)\s+(?:an? |score of |rating of )?" + _NUM + r"\b",
        re.IGNORECASE,
    ),
    # "4 stars", "a 3 in terms of enjoyability"
    re.compile(r"(?<![\d.])" + _NUM + r"\s+stars?\b", re.IGNORECASE),
]
# A reply that opens with its rating: "2 — The story only has ...", "4. The ...", "(B)".
_LEADING = re.compile(r"^\s*[\(\[]?\s*(\d+(?:\.\d+)?)\s*(?:[\)\]]|—|–|-|:|\.(?!\d)|,|\s|$)")
_ANY_NUMBER = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)(?![\w])")
_EMPHASIS = re.compile(r"(\*\*|__|\*|`)")
_CHOICE_LEADING = re.compile(r"^\s*\(?([A-Z])\)?(?:[\s.,:)]|$)")
_CHOICE_PATTERNS = [
    re.compile(
        r"\b(?:answer|option|choose|choice|select)\s*(?:is|:)?\s*(?:option\s*)?\(?([A-Z])\)?(?![\w])", re.IGNORECASE
    ),
    re.compile(r"\(([A-Z])\)"),
]


@dataclass(frozen=True)
class ParseResult:
    value: float | None
    failure: str | None = None  # None, or one of FAILURES

    @property
    def ok(self) -> bool:
        return self.failure is None


def _to_number(token: str) -> float:
    token = token.lower()
    if token in _NUMBER_WORDS:
        return float(_NUMBER_WORDS[token])
    return float(token)


def _strip_noise(text: str) -> str:
    text = _EMPHASIS.sub("", text)
    for pattern in _SCALE_NOISE:
        text = pattern.sub(" ", text)
    return text


def parse_score(text: str | None, scale: tuple[float, float] = (1, 5)) -> ParseResult:
    """Read the score a judge's reply assigns on ``scale`` = (low, high)."""
    low, high = scale
    if not text or not text.strip():
        return ParseResult(None, "no_number")
    cleaned = _strip_noise(text)

    def judged(values: list[float]) -> ParseResult:
        distinct = sorted(set(values))
        in_range = [v for v in distinct if low <= v <= high]
        if len(in_range) == 1:
            return ParseResult(in_range[0])
        if len(in_range) > 1:
            return ParseResult(None, "ambiguous")
        return ParseResult(None, "out_of_range")

    # 1. a reply that opens with its number ("2 — ..."): HANNA's judges answer this way.
    leading = _LEADING.match(cleaned)
    if leading:
        return judged([float(leading.group(1))])

    # 2. the earliest assignment in the text ("rate ... as a 3"); a second assignment with
    #    another value ("a 4 for grammar and a 2 for style") makes the reply ambiguous.
    hits: list[tuple[int, float]] = []
    for pattern in _ASSIGN:
        hits.extend((m.start(1), _to_number(m.group(1))) for m in pattern.finditer(cleaned))
    if hits:
        hits.sort()
        return judged([value for _, value in hits])

    # 3. no assignment: a refusal says so; otherwise the paper's "first number" rule,
    #    made strict (several distinct values on the scale are ambiguous, not the first).
    if _REFUSAL.search(text):
        return ParseResult(None, "refusal")
    numbers = [float(m.group(1)) for m in _ANY_NUMBER.finditer(cleaned)]
    if numbers:
        return judged(numbers)
    return ParseResult(None, "no_number")


def parse_choice(text: str | None, keys: tuple[str, ...] = ("A", "B", "C")) -> ParseResult:
    """Read an option letter (Chen et al. pairwise: "(A)", "Answer: B", "I will choose Option C")."""
    if not text or not text.strip():
        return ParseResult(None, "no_number")
    cleaned = _EMPHASIS.sub("", text)
    found: list[str] = []
    leading = _CHOICE_LEADING.match(cleaned)
    if leading and leading.group(1) in keys:
        return ParseResult(float(keys.index(leading.group(1))))
    for pattern in _CHOICE_PATTERNS:
        found.extend(m.group(1).upper() for m in pattern.finditer(cleaned))
        if found:
            break
    found = [k for k in found if k in keys]
    if len(set(found)) == 1:
        return ParseResult(float(keys.index(found[0])))
    if len(set(found)) > 1:
        # V4 replies reason over the options before "Answer: X": the last answer counts.
        answer = re.findall(r"answer\s*:\s*\(?([A-Z])\)?", cleaned, re.IGNORECASE)
        if answer and answer[-1].upper() in keys:
            return ParseResult(float(keys.index(answer[-1].upper())))
        return ParseResult(None, "ambiguous")
    if _REFUSAL.search(text):
        return ParseResult(None, "refusal")
    return ParseResult(None, "no_number")

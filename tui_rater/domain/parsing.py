"""Reply text -> score or option, or a typed failure.

Chiang & Lee App. D.2.1 strip "1-5", "out of 5", "/5" (and "title 1"/"title 2"), then take the first
number, keeping .5 scores. That rule reads "On a scale of 1-5, with 1 being the lowest, I would rate ...
as a 5" as 1 (the paper read ChatGPT's replies by hand), and a base model's "1. Grammar: ...", "3,000
years" or "2004/05" as a score. A wrong number is worse than a typed failure, so this parser
keeps the paper's stripping and its .5 scores but takes a number only where the reply *assigns* it:

1. the part of the reply before any echoed prompt ("Question: ...", "Storyline: ...") is the answer;
   the scale's own description ("on a scale of 1-5", "with 1 being the lowest", "1-100") is removed; a
   markdown table row reads as "name: value"; given the question asked (``asked``), a clause that scores
   only another question ("Grammaticality: 4, Cohesiveness: 2" asked cohesiveness) is left out;
2. candidates, each with what follows it checked ("4/5", "3 or 4", "4,5", "10 minutes", "2004/05"):
   - final:  in a sentence that opens "Overall"/"In conclusion"/"Final ..." or says "I'll go with";
   - label:  "Score: 4", "Rating: 3/5", '"score": 72', or a line that is only the answer ("4", "★★★");
   - other:  "I would rate ... as a 3", "a 4", "4 stars", "2 — The story ...", "Grammar: 4";
   a judge that revises its number ("4 -- wait, 3", "On second thought ... I'll lower it to 3", "Revised
   score: 3") is read after its last revision; a revision whose value cannot be read is ``ambiguous``;
   a listed scale ("1: Not relevant\n2: ..."), a reference ("the fragment (2) and", "the previous rating of 1")
   and a section number ("3.10:") are no candidates;
3. the highest tier present decides: one value -> that value; two values or a hedge -> ``ambiguous``, and
   so is a lower tier's or an unread rating clause's other value ("I'd give it a 4. ... Score: 3") unless a
   final word decides -- never the first number;
   a value off the scale, or on another scale ("8/10" on 1-5, "4 stars" on 0-100) -> ``out_of_range``;
   a fraction of 1 on a 0-100 scale ("P = 0.7") -> ``ambiguous``.

Options (Chen et al. App. B) are read the same way: "Answer: B", "Option C", "(A)", a reply that is just
"B" or continues "I will choose Option" with " B", an option's name ("Storyline-2") after a marker or on
its own, a one-word option opening the reply ("Yes, ...") -- never the article "A" ("A close call, ...
Answer: B" is B) and never a prose mention. "Final answer: A" decides over options named before it, and a
revision ("B. Actually, A", "Correction: C") as for scores.

Failures: ``refusal``, ``no_number`` (no number / no option at all), ``out_of_range``, ``ambiguous``.
The caller keeps the raw reply. Known limits, each a typed failure and never a value: number words above
ten ("seventy"); a prose statement that is not the whole first sentence ("The better storyline is
Storyline-2"; "Storyline-1 wins." and "A is better than B." are read, in the question's terms: "which is
worse" is known from the options' names); a letter followed by the other option's name, even in the
explanation (" B. Storyline-1 ...").
``tests/domain/judge_replies.jsonl`` holds the replies this is measured on.
"""

from __future__ import annotations

import functools
import itertools
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

FAILURES = ("refusal", "no_number", "out_of_range", "ambiguous")


@dataclass(frozen=True)
class ParseResult:
    value: float | None
    failure: str | None = None  # None, or one of FAILURES

    @property
    def ok(self) -> bool:
        return self.failure is None


# --------------------------------------------------------------------------------------------------
# Shared: normalising the reply, finding where the answer ends, refusals
# --------------------------------------------------------------------------------------------------

_WORD_VALUES = {
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
_WORDS = "|".join(_WORD_VALUES)
# A number token: digits not glued to letters, digits or a slash ("v2", "3rd", the 5 of "4/5"), a sign
# only after a space or colon ("-1", not the 4 of "3-4"), or a number word.
_TOKEN = rf"(?:(?:(?<![^\s:=(\[])-(?=\d)|(?<![\w.,/-]))\d+(?:[.,]\d+)*|(?<![\w-])(?i:{_WORDS}))(?![\w])"
_TOKEN_RE = re.compile(_TOKEN)

_EMPHASIS = re.compile(r"\*+|`+|__+")
_LINE_MARKUP = re.compile(r"^[ \t]*(?:#+|>)[ \t]?", re.MULTILINE)
# A base model that has answered goes on with the prompt's next part; what follows is not the answer.
_ECHO_START = re.compile(
    r"^[ \t]*(?:(?:Question|Q|Human|User|Instruction|Story fragment|Story|News title(?:[ \t]*\d)?|"
    r"The beginning of the story|Storyline)[ \t]*:|Consider the following\b|Now read the PROMPT\b|\(End of\b)",
    re.MULTILINE,
)
_REFUSAL = re.compile(
    r"\b(?:as an ai|i am an ai|i'm an ai|(?:i am|i'm|as) an? (?:ai |large )?language model|"
    r"do(?: not|n't) have (?:the ability|personal (?:preferences|opinions|feelings)|preferences|opinions)|"
    r"can(?:not|'t| not) (?:provide|give|assign|offer|rate|evaluate|score|assess|judge|determine|choose|decide|answer|"
    r"pick|compare|help)|(?:unable|not able) to (?:provide|give|rate|evaluate|score|assess|judge|determine|"
    r"choose|decide|compare)|sorry,? (?:but )?i (?:can(?:not|'t)|am unable|won't)|i apologi[sz]e,? but|"
    r"i (?:must )?decline|i (?:won't|will not) (?:rate|score|evaluate|assess|judge|choose)|"
    r"need more (?:context|information) to (?:rate|score|evaluate|assess|judge|choose))",
    re.IGNORECASE,
)


def _normalise(text: str) -> str:
    """Plain text: no markdown emphasis, headings or quote marks; one kind of space, dash and half."""
    text = text.replace("\r\n", "\n").replace("\u00a0", " ").replace("\u2009", " ").replace("\u2212", "-")
    text = text.replace("\uff1a", ":").replace("\u202f", " ")  # a full-width colon ("评分：4"), French spacing
    text = re.sub("[\ufe0e\ufe0f]", "", text)  # emoji variation selectors: "⭐️⭐️⭐️" is three stars
    text = re.sub(r"(?<=\d)\u00bd", ".5", text)  # "3½"
    text = re.sub(rf"\b(\d+|(?i:{_WORDS})) and a half\b", lambda m: f"{_number_value(m.group(1)):g}.5", text)
    text = re.sub(r"~~[^~\n]*~~", " ", text)  # "**Rating: 3** ~~4~~": what the judge struck out is not its answer
    text = _EMPHASIS.sub("", text)
    text = _TABLE_RULE.sub("", text)
    text = _TABLE_ROW.sub(lambda m: _table_row(m.group(1)), text)
    return _LINE_MARKUP.sub("", text)


# A markdown table, as larger instruct models write their scores: "| Coherence | 4 |" reads as "Coherence: 4"
_TABLE_RULE = re.compile(r"^[ \t]*\|?[ \t]*:?-{3,}:?[ \t]*(?:\|[ \t]*:?-{3,}:?[ \t]*)*\|?[ \t]*$", re.MULTILINE)
_TABLE_ROW = re.compile(r"^[ \t]*\|(.*\|.*)\|[ \t]*$", re.MULTILINE)


def _table_row(cells: str) -> str:
    first, second, *rest = (cell.strip() for cell in cells.split("|"))
    return f"{first}: {second}" + "".join(f" — {cell}" for cell in rest if cell)


def _answer_part(text: str) -> str:
    echo = _ECHO_START.search(text)
    return text[: echo.start()] if echo else text


_SENTENCE_END = re.compile(r"[.!?;](?=\s)|\n|[,{]\s*(?=[\"']\w[\w ]*[\"']\s*:)")


def _sentence_start(text: str, pos: int) -> int:
    """Where the sentence holding ``pos`` begins (after ". ", "! ", "? ", ";" or a line break)."""
    ends = [m.end() for m in _SENTENCE_END.finditer(text, max(0, pos - 300), pos)]
    return ends[-1] if ends else max(0, pos - 300)


# --------------------------------------------------------------------------------------------------
# Scores: the scale's own description (App. D.2.1)
# --------------------------------------------------------------------------------------------------

_NUMBER_OR_WORD = rf"(?:\d+|(?i:{_WORDS}|one hundred|hundred))"
_SCALE_PHRASES = [
    re.compile(p, re.IGNORECASE)
    for p in (
        # "on a scale of 1-5", "on a continual scale from 0 (worst) to 100 (best)", "scale of 1 to 10"
        rf"\b(?:on\s+(?:a|the)\s+)?(?:continual\s+|continuous\s+|likert\s+|\d+-point\s+)?scale\s+(?:of|from)\s+"
        rf"{_NUMBER_OR_WORD}(?:\s*\([^)\n]*\))?\s*(?:-|–|—|to)\s*{_NUMBER_OR_WORD}(?:\s*\([^)\n]*\))?",
        rf"\bfrom\s+{_NUMBER_OR_WORD}\s*\([^)\n]*\)\s*to\s+{_NUMBER_OR_WORD}\s*\([^)\n]*\)",
        # "with 1 being the lowest", "and 5 being strongly agree", "where 1 is poor"
        rf"(?:\b(?:with|where|and)\s+)?{_NUMBER_OR_WORD}\s+(?:being|is|=|means?|meaning|represents?|indicates?)\s+"
        r"(?:the\s+)?(?:lowest|highest|worst|best|strongly|not\b|very|poor|excellent|perfect|nonsense|"
        r"incomprehensible|no\b|low\b|high\b|totally|completely|extremely|[\"“])[^,.;)\n]*",
        # Chen V1/V2: 'a score of 0 means "..."'; V4: 'one star means "Nonsense"'
        rf"\b(?:a\s+)?(?:score|rating)\s+of\s+{_NUMBER_OR_WORD}\s+(?:means|indicates|represents|would mean)\b",
        rf"\b{_NUMBER_OR_WORD}\s+stars?\s+means?\b",
        # Chiang & Lee's title tasks (App. D.2.1: "title 1"/"title 2"); Chen's pairwise storyline names
        r"\b(?:news\s+)?title\s*[12]\b",
        r"\bstoryline[- ]?[12]\b",
        r"\btext[- ][12]\b",
    )
]
# App. D.2.1 strips a bare "1-5": a range whose ends are a rating scale's is its description, not a hedge.
_SCALE_RANGE = re.compile(rf"(?<![\w.,/-])({_NUMBER_OR_WORD})\s*(?:-|–|—|to)\s*({_NUMBER_OR_WORD})(?![\w.,])")
_COMMON_SCALES = {(1, 5), (0, 5), (1, 7), (1, 10), (0, 10), (0, 100), (1, 100)}
# ... and "out of 5" or "/5" that follow no number ("Rating (out of 5): 4").
_LONE_DENOMINATOR = re.compile(r"\(?\s*(?:out\s+of|/)\s*(?:5|10|100|five|ten)\b\s*\)?", re.IGNORECASE)


def _number_value(token: str) -> float:
    word = token.lower()
    if word in _WORD_VALUES:
        return float(_WORD_VALUES[word])
    if word in ("hundred", "one hundred"):
        return 100.0
    return float(token)


def _strip_scale(text: str, scale: tuple[float, float]) -> str:
    for pattern in _SCALE_PHRASES:
        text = pattern.sub(" ", text)
    known = {*_COMMON_SCALES, (scale[0], scale[1])}

    def range_or_keep(m: re.Match[str]) -> str:
        return " " if (_number_value(m.group(1)), _number_value(m.group(2))) in known else m.group(0)

    def denominator_or_keep(m: re.Match[str]) -> str:
        before = text[max(0, m.start() - 12) : m.start()]
        return m.group(0) if re.search(rf"(?:\d|\b(?i:{_WORDS}))\s*$", before) else " "

    text = _SCALE_RANGE.sub(range_or_keep, text)
    return _LONE_DENOMINATOR.sub(denominator_or_keep, text)


# --------------------------------------------------------------------------------------------------
# Scores: what follows a number decides whether it is a score
# --------------------------------------------------------------------------------------------------

DROP, AMBIGUOUS, OFF_SCALE = "drop", "ambiguous", "out_of_range"

# "3-4", "3 or 4", "3 to 4", "a 3, maybe a 4", "4 (or 5 ...)": the reply names two values.
_PLAIN_NUMBER = rf"(?:\d+(?:[.,]\d+)?|(?i:{_WORDS}))(?![\w])"
_RANGE_AFTER = re.compile(
    r"(?:\.[ \t]*(?=(?-i:Or|Maybe|Perhaps)\b))?"  # "70. Or 75." (a new sentence: "a 4." cut short is not "a 4. or")
    r"\s*[,;(]?\s*(?:[-–—~,&]|to|or|and|or even|or maybe|or possibly|maybe|perhaps|possibly|if not|"
    r"leaning (?:towards?|to)|closer to|round(?:ed|ing)?\s+(?:up\s+|down\s+)?to)\s*(?:an?\s+)?" + _PLAIN_NUMBER,
    re.IGNORECASE,
)
# "I'm leaning towards a 4", "maybe a 4": a number offered, not given.
_HEDGE_BEFORE = re.compile(
    r"\b(?:leaning\s+(?:towards?|to)|maybe|perhaps|possibly|could\s+be|might\s+be|closer\s+to|almost|nearly|"
    r"bordering\s+on|verging\s+on)\s+(?:an?\s+)?$",
    re.IGNORECASE,
)
_HEDGE_SUFFIX = re.compile(r"\+|-?ish\b")  # "4+", "3-ish"
# "4 sur 5", "4 de 5", "4 su 5", "4 von 5": "out of" in the judge's language
_OUT_OF = r"(?:/|out\s+of\b|(?:sur|de|su|von|auf)\s+(?=\d))"
_DENOMINATOR = re.compile(
    r"\s*" + _OUT_OF + r"\s*(\d+|(?i:five|ten|one hundred|hundred))(?![\w,/]|\.\d)", re.IGNORECASE
)
_PERCENT = re.compile(r"\s*(?:%|percent\b)", re.IGNORECASE)
_STARS_AFTER = re.compile(r"\s*-?\s*stars?\b", re.IGNORECASE)
_CONVENTIONAL_DENOMINATORS = {1.0, 5.0, 10.0, 20.0, 100.0}
# Lower-case words that may follow a score; any other word makes the number a count ("3 miles",
# "2 people", "4 out of 5 households") -- as base models' replies do.
_FOLLOW_WORDS = frozenset(
    (  # noqa: SIM905 -- a word list reads better as words
        "for in on because as since and but overall with from though although given due which that this here so "
        "rating score grade at is was would seems feels if when considering based mainly mostly largely also too "
        "then now even only just mark rather instead compared relative thanks while whereas where not really i it "
        "after my out to or yet still across points point stars star percent chance probability likelihood"
    ).split()
)


def _after_number(text: str, end: int, value: float, scale: tuple[float, float]) -> str | None:
    """DROP (a count, date or list item), AMBIGUOUS (a range or hedge), OFF_SCALE, or None (a score)."""
    high = scale[1]
    rest = text[end : end + 80]
    if _RANGE_AFTER.match(rest) or _HEDGE_SUFFIX.match(rest):
        return AMBIGUOUS
    if re.match(r":\d|/\d+/|-[a-z]", rest, re.IGNORECASE) and not _STARS_AFTER.match(rest):
        return DROP  # "5:30", "3/5/2019", "3-act", "2-hour" (but "4-star")
    problem = None
    if denominator := _DENOMINATOR.match(rest):
        problem = _denominator_problem(value, _number_value(denominator.group(1)), scale)
        rest = rest[denominator.end() :]
    elif percent := _PERCENT.match(rest):
        problem = None if high == 100 else OFF_SCALE
        rest = rest[percent.end() :]
    if stars := _STARS_AFTER.match(rest):
        # Chen et al.'s V4 asks for one to five stars: stars on another scale are off it
        problem = problem or (None if high == 5 or denominator else OFF_SCALE)
        rest = rest[stars.end() :]
    if _RANGE_AFTER.match(rest):
        return AMBIGUOUS  # "3 stars, maybe 3.5", "4/5 or 5/5"
    word = re.match(r"[ \t]+([a-z][a-z']*)", rest)
    if word and word.group(1) not in _FOLLOW_WORDS:
        return DROP
    return problem


def _denominator_problem(value: float, denominator: float, scale: tuple[float, float]) -> str | None:
    low, high = scale
    if denominator == high:
        return None
    if denominator in _CONVENTIONAL_DENOMINATORS or not (low <= value <= high and low <= denominator <= high):
        return OFF_SCALE  # "8/10" on 1-5: scored on another scale
    return AMBIGUOUS  # "3/4" on 1-5: a fraction, or "three or four"


def _token_value(token: str, rest: str, scale: tuple[float, float]) -> tuple[float, str | None]:
    """The token's value, or a problem: DROP for thousands and years, AMBIGUOUS for a decimal comma."""
    if "," in token:
        if re.fullmatch(r"-?\d{1,3}(?:,\d{3})+", token):
            return 0.0, DROP  # "3,000 years": a quantity
        if re.fullmatch(r"\d+,\d{1,2}", token) and re.match(r"\s*(?:/|out\s+of|stars?|points?)", rest):
            return float(token.replace(",", ".")), None  # "4,5/5": clearly a decimal comma
        return 0.0, AMBIGUOUS  # "I would rate this a 4,5.": 4.5, or 4 and 5
    if token.count(".") > 1 or (re.fullmatch(r"\d+\.\d{2,}", token) and rest.startswith(":")):
        return 0.0, DROP  # "1.2.3", "3.10:": a version or section number
    value = _number_value(token)
    if re.fullmatch(r"[12]\d{3}", token) and scale[1] < 1000:
        return value, DROP  # a year ("In 1984", "2004/05")
    if scale[1] >= 10 and "." in token and 0 < value <= 1 and not _DENOMINATOR.match(rest):
        return value, AMBIGUOUS  # "P = 0.7" on 0-100: 0.7, or 70 written as a fraction of 1
    return value, None


# --------------------------------------------------------------------------------------------------
# Scores: candidates
# --------------------------------------------------------------------------------------------------

FINAL, LABEL, OTHER = 0, 1, 2  # tiers: the lowest present decides


@dataclass(frozen=True)
class _Candidate:
    pos: int
    value: float
    problem: str | None
    tier: int


# "Overall, ...", "In conclusion, ...", "Final rating:", "I'll go with 3": the reply's own last word.
_FINAL_OPENING = re.compile(
    r"[\W_]*(?:(?:so|thus|therefore|hence|and|but)\W+)?(?:all in all|in conclusion|in summary|to sum up|"
    r"to summari[sz]e|ultimately|in the end|on balance|overall|finally|final|total)\b",
    re.IGNORECASE,
)
_FINAL_WORDS = re.compile(
    r"\b(?:final|overall)\s+(?:score|rating|grade|answer|verdict|assessment|evaluation|decision)\b|"
    r"\b(?:go(?:ing)?|settle|land|decide)\s+(?:with|on)\b|\bmy final\b",
    re.IGNORECASE,
)
# Labels in the languages judges answer in when the story is not English: "Note : 4", "Puntuación: 3", "评分：4".
_FOREIGN_LABELS = (
    r"note|note finale|puntuaci[oó]n|calificaci[oó]n|valoraci[oó]n|nota|nota final|punteggio|valutazione|voto|"
    r"bewertung|punktzahl|punkte|gesamtnote|pontua[cç][aã]o|avalia[cç][aã]o|[ée]valuation|score final|"
    r"評価|评分|評分|分数|得分|点数|점수|평가"
)
_LABEL = re.compile(
    r"\b(?i:(?:final\s+|overall\s+|total\s+)?(?:score|rating|grade|answer|stars?|points|verdict|assessment|"
    r"evaluation|mark|probability|chance|likelihood|overall|total|final|p|" + _FOREIGN_LABELS + r"))"
    r"[\"']?[ \t]*(?:\([^)\n]{0,30}\)[ \t]*)?[:=]"
    r"\s*(?i:(?:about|around|approximately|roughly|approx\.|an?)\s+)?[\"']?"
)
_ASSIGN = re.compile(
    r"\b(?:rate|rated|rating|give|gave|giving|assign|assigned|award|awarded|score|scored|grade|graded|"
    r"deserves?|earns?|merits?|gets?|put|say|answer|go(?:ing)?\s+with|settle\s+on|land\s+on|choose|pick|"
    r"donne|donnerais|donnerai|attribue|daría|doy|darei|dou|gebe|vergebe|darei|assegno|darei)\b",
    re.IGNORECASE,
)
# A number word counts only where a rating is stated ("a four", "as five"), not "this one", "one of".
_WORD_OK_AFTER = re.compile(r"(?:\ban?|\bas|\bit|\bat|\bis|\bbe|:|\bgive|\bsay|\bscore of|\brating of)\s+$", re.I)
_ARTICLE = re.compile(
    r"\b(?i:an?)\s+(?i:(?:solid|strong|weak|low|high|generous|fair|clear|firm|middling|decent|respectable|"
    r"good|harsh|modest|perfect|full|flat|straight|definite|borderline)\s+)?(?=[\d-]|(?i:" + _WORDS + r")\b)"
)
# HANNA's and Chiang & Lee's attribute names: "Grammar: 4", "4 Coherence", "I strongly agree: 5".
_ATTRIBUTES = (
    r"(?i:grammar|grammaticality|grammatical correctness|coherence|cohesiveness|cohesion|likability|likeability|"
    r"enjoyment|enjoyability|relevance|fluency|meaning|agreement|agree|disagree|empathy|surprise|engagement|"
    r"complexity|quality|consistency)"
)
_ATTRIBUTE_PAIR = re.compile(rf"\b{_ATTRIBUTES}\b[\"']?[ \t]*(?:\([^)\n]{{0,30}}\)[ \t]*)?[:=\-–—][ \t]*")
_ATTRIBUTE_AFTER = re.compile(rf"[ \t]+{_ATTRIBUTES}\b")
_FRACTION_AFTER = re.compile(_OUT_OF + r"\s*\d", re.IGNORECASE)
# "(4)" where it ends a clause or a line; "the end of the story fragment (2) and ..." refers to something
_PARENTHESISED = re.compile(rf"\(({_TOKEN})\)(?=[ \t]*(?:$|[.!?,;:\n—–]|-[ \t]))", re.MULTILINE)
_BETWEEN = re.compile(rf"\b(?:between|torn between)\s+(?:an?\s+)?({_TOKEN})\s+(?:and|&|or)\s", re.IGNORECASE)
_STAR_GLYPHS = re.compile(r"[★⭐]+(?:\.5)?[☆✩]*")
# "1. ...", "2) ...", and a rubric echoed as "4 — The story ...\n5 — The story ..." or "1: Not relevant\n2: ..."
_LIST_ITEM = re.compile(r"^[ \t]*\d+(?:[.):]|[ \t]*[—–])[ \t]+\S", re.MULTILINE)
_LONE_LINE = re.compile(
    r"^[ \t\"'(\[]*(?:[-•][ \t]+)?(" + _TOKEN + r"|[★⭐]+[☆✩]*)"
    r"(?:[ \t]*(?:/|out of)[ \t]*\d+)?(?:[ \t]*stars?)?[ \t\"')\].!]*$",
    re.MULTILINE | re.IGNORECASE,
)


# "the previous rating of "1"", "the human's score (3)": a rating the reply talks about, not one it gives
_OTHER_RATING_BEFORE = re.compile(
    r"\b(?:previous|earlier|prior|original|other|old|first|initial|given|above|human'?s?|annotator'?s?|their|"
    r"his|her|its)\s+(?:rating|score|grade|answer|assessment)s?\s*(?:of|was|is|were|as|=|:)?\s*[\"'“(]?\s*$",
    re.IGNORECASE,
)


# "... was missing a stronger connection to rate a 5", "short of a 5", "better than a 2": a score the text does not get
_COUNTERFACTUAL_BEFORE = re.compile(
    r"(?:\bto\s+(?:rate|earn|get|deserve|reach|warrant|merit|be|score|receive|become|justify)\s+(?:as\s+)?|"
    r"\b(?:short\s+of|shy\s+of|than|not\s+quite|rather\s+than|instead\s+of|away\s+from|considered|debated|"
    r"thought\s+(?:of|about)|not(?:\s+even)?|previously|formerly|originally|initially|"
    r"(?:down|up|revised|changed|lowered|raised|moved)\s+from)\s+|"
    # "not as elaborate as a 4 or 5", "not strong enough to make the story a 4": a level it does not reach
    r"\bas\s+\w+(?:\s+\w+)?\s+as\s+|\bto\s+make\s+(?:it|this|the\s+\w+)\s+|"
    # "(I was going to say 3, but ...)": a score it did not give
    r"\b(?:was|were)\s+(?:going|about)\s+to\s+(?:say|give|rate|go\s+with)\s+(?:it\s+)?)(?:an?\s+)?$",
    re.IGNORECASE,
)


# "No -- 4 is too generous. 2.": a number the judge talks about, not one it gives
_DISCUSSED = re.compile(
    r"(?:/\d+)?\s+(?:is|was|seems|feels|sounds|looks|would\s+be|might\s+be)\s+(?:a\s+bit\s+|slightly\s+|far\s+|way\s+|"
    r"much\s+|probably\s+)?(?:too|overly|generous|harsh|unfair|excessive)\b",
    re.IGNORECASE,
)


_SOMEONE_ELSE = re.compile(
    r"\b(?:some|other|many|most|a\s+few)\s+(?:readers?|people|judges?|critics?|raters?|annotators?|reviewers?)\b|"
    r"\bothers\b|\bsomeone\b|\bone\s+(?:could|might)\b",
    re.IGNORECASE,
)


def _candidate_at(text: str, token: re.Match[str], tier: int, scale: tuple[float, float]) -> _Candidate | None:
    before, rest = text[max(0, token.start() - 40) : token.start()], text[token.end() : token.end() + 80]
    if re.search(r"(?:/|\bout\s+of|\b(?:sur|de|su|von|auf))\s*$", before, re.IGNORECASE):
        return None  # the 5 of "4 out of 5 stars"
    if _OTHER_RATING_BEFORE.search(before) or _COUNTERFACTUAL_BEFORE.search(before) or _DISCUSSED.match(rest):
        return None
    value, problem = _token_value(token.group(0), rest, scale)
    if problem is None:
        problem = _after_number(text, token.end(), value, scale)
    if problem == DROP:
        return None
    if _HEDGE_BEFORE.search(before):
        problem = AMBIGUOUS
    start = _sentence_start(text, token.start())
    prefix = text[start : token.start()]
    if _FINAL_OPENING.match(prefix) or _FINAL_WORDS.search(prefix):
        tier = FINAL
    return _Candidate(token.start(), value, problem, tier)


def _token_at(text: str, pos: int) -> re.Match[str] | None:
    return _TOKEN_RE.match(text, pos)


def _labelled(text: str, scale: tuple[float, float]) -> list[_Candidate]:
    found = []
    for label in _LABEL.finditer(text):
        token = _token_at(text, label.end())
        if token is None:
            continue
        if "\n" in label.group(0) and re.match(r"[.)][ \t]+\S", text[token.end() :]):
            continue  # "Rating:\n1. Grammar ...": the list under the label, not a score
        found.append(_candidate_at(text, token, LABEL, scale))
    return [c for c in found if c]


_NOT_THE_TEXT = re.compile(r"\s+(?:you|me|us|them|him|her|yourself|myself|people|readers?|someone)\b", re.IGNORECASE)


def _assigned(text: str, scale: tuple[float, float]) -> list[_Candidate]:
    """The first number after a rating verb in its sentence: "I would rate ... as a 3", "I'd give it 4"."""
    found = []
    for verb in _ASSIGN.finditer(text):
        if _NOT_THE_TEXT.match(text, verb.end()):
            continue  # "(points to which of these 5 give you 2.)": a person is given something, not the text a score
        end = re.compile(r"[.!?](?!\d)|\n").search(text, verb.end(), verb.end() + 160)
        stop = end.start() if end else min(len(text), verb.end() + 160)
        for token in _TOKEN_RE.finditer(text, verb.end(), stop):
            if token.group(0).isalpha() and not _WORD_OK_AFTER.search(text[max(0, token.start() - 20) : token.start()]):
                continue
            found.append(_candidate_at(text, token, OTHER, scale))
            break
    return [c for c in found if c]


def _stated(text: str, scale: tuple[float, float]) -> list[_Candidate]:
    """ "a 4", "Grammar: 4", "4 Coherence", "4/5", "4 stars", "(4)", "★★★★"; "between 3 and 4" (a hedge)."""
    found = []
    for pattern in (_ARTICLE, _ATTRIBUTE_PAIR):
        for m in pattern.finditer(text):
            if token := _token_at(text, m.end()):
                found.append(_candidate_at(text, token, OTHER, scale))
    for token in _TOKEN_RE.finditer(text):
        rest = text[token.end() :]
        if any(p.match(rest) for p in (_STARS_AFTER, _FRACTION_AFTER, _ATTRIBUTE_AFTER)):
            found.append(_candidate_at(text, token, OTHER, scale))
    for paren in _PARENTHESISED.finditer(text):
        if re.search(r"\?[ \t]*$", text[max(0, paren.start() - 3) : paren.start()]):
            continue  # "What is the most important thing ...? (5)": a questionnaire's item, not an answer
        if token := _token_at(text, paren.start(1)):
            found.append(_candidate_at(text, token, OTHER, scale))
    for m in _BETWEEN.finditer(text):
        found.append(_Candidate(m.start(1), 0.0, AMBIGUOUS, OTHER))
    found.extend(_stars_drawn(_STAR_GLYPHS.finditer(text), OTHER, scale))
    return [c for c in found if c]


def _stars_drawn(runs: Iterable[re.Match[str]], tier: int, scale: tuple[float, float]) -> list[_Candidate]:
    """ "★★★★☆" is 4 (Chen et al. V4's stars); stars on a scale that is not 1-5 are off it."""
    found = []
    for run in runs:
        drawn = run.group(0)
        value = drawn.count("★") + drawn.count("⭐") + (0.5 if ".5" in drawn else 0)
        found.append(_Candidate(run.start(), float(value), None if scale[1] == 5 else OFF_SCALE, tier))
    return found


# What may follow a number that opens the reply: "2 — The", "4 Coherence", "4\n", "3.", "5 (strongly agree)".
_OPENS_WITH_DIGITS = re.compile(
    r"\s*$|\s*[—–:(]|[ \t]+-[ \t]|[ \t]*\n|[.)\]][ \t\n]|[.!]$|,[ \t]*[A-Za-z]|[ \t]+[A-Z]|%|\s*/|"
    r"\s+out\s+of|\s+(?:or|to)\s|[-–~]\d|\s+points?\b(?!\s+[a-z])"
)
_OPENS_WITH_WORD = re.compile(r"\s*$|\s*[—–:(]|[ \t]+-[ \t]|[ \t]*\n|[.!,]")  # "Four. The story ..."


def _leading(text: str, scale: tuple[float, float]) -> list[_Candidate]:
    """A reply that opens with its score: HANNA's "2 — The story ...", "4 Coherence", "(3)", " 70"."""
    opening = re.match(r"[ \t\n\"'(\[:]*", text)
    token = _token_at(text, opening.end() if opening else 0)
    if token is None:
        return []
    rest = text[token.end() :]
    if len(_LIST_ITEM.findall(text)) > 1 or (token.group(0) == "1" and re.match(r"[.)][ \t]+\S", rest)):
        return []  # one item of a numbered list, or "1. The story ..." that starts one
    if not (_OPENS_WITH_WORD if token.group(0).isalpha() else _OPENS_WITH_DIGITS).match(rest):
        return []  # "10 minutes later, ...", "Three Musketeers": a count that opens a sentence
    candidate = _candidate_at(text, token, OTHER, scale)
    return [candidate] if candidate else []


def _lone_lines(text: str, scale: tuple[float, float]) -> list[_Candidate]:
    """Lines that are only a number or stars: an answer written on its own line ("Score:\\n**4**")."""
    in_list = bool(_LIST_ITEM.search(text))
    found = []
    for line in _LONE_LINE.finditer(text):
        if in_list and re.search(r"\d[.)]\s*$", line.group(0)):
            continue  # "3." under "1. ... 2. ...": the next item of the list
        if stars := _STAR_GLYPHS.match(text, line.start(1)):
            found.extend(_stars_drawn([stars], LABEL, scale))
            continue
        token = _TOKEN_RE.match(text, line.start(1))
        if token and (candidate := _candidate_at(text, token, LABEL, scale)):
            found.append(candidate)
    if len({c.value for c in found}) > 1:  # " 3\n4\n5\n6": counting, not answering
        return [_Candidate(found[0].pos, 0.0, AMBIGUOUS, LABEL)]
    return found


def _closing(text: str, scale: tuple[float, float]) -> list[_Candidate]:
    """The reply's only number, closing it after a comma or colon: "On the 1-5 scale, 4."."""
    tokens = list(_TOKEN_RE.finditer(text))
    if len(tokens) != 1 or not re.search(r"[,:—–-][ \t]*$", text[: tokens[0].start()]):
        return []
    if not re.fullmatch(r"[ \t.!]*", text[tokens[0].end() :].rstrip()):
        return []
    candidate = _candidate_at(text, tokens[0], OTHER, scale)
    return [candidate] if candidate else []


def _score_candidates(text: str, scale: tuple[float, float]) -> list[_Candidate]:
    by_pos: dict[int, _Candidate] = {}
    for reader in (_labelled, _lone_lines, _assigned, _stated, _leading, _closing):
        for candidate in reader(text, scale):
            known = by_pos.get(candidate.pos)
            if known is not None:  # several readers found this number: the best tier, any problem seen
                problem = known.problem or candidate.problem
                candidate = _Candidate(known.pos, known.value, problem, min(known.tier, candidate.tier))
            by_pos[candidate.pos] = candidate
    return list(by_pos.values())


def _outvoted(value: float, others: list[_Candidate], scale: tuple[float, float]) -> bool:
    """Another score on the scale, stated lower in the reply's order of emphasis ("I'd give it a 4. ... Score: 3"):
    the reply gives two scores and does not say which is final, so neither is read."""
    return any(c.problem is None and c.value != value and scale[0] <= c.value <= scale[1] for c in others)


def _judge_score(candidates: list[_Candidate], scale: tuple[float, float]) -> ParseResult:
    low, high = scale
    tier = min(c.tier for c in candidates)
    deciding = [c for c in candidates if c.tier == tier]
    if any(c.problem == AMBIGUOUS for c in deciding) or len({(c.value, c.problem) for c in deciding}) > 1:
        return ParseResult(None, "ambiguous")
    value, problem = deciding[0].value, deciding[0].problem
    if tier != FINAL and _outvoted(value, [c for c in candidates if c.tier != tier], scale):
        return ParseResult(None, "ambiguous")
    if problem == OFF_SCALE or not low <= value <= high:
        return ParseResult(None, "out_of_range")
    return ParseResult(value)


# "Score: 4/5 -- wait, on reflection, 3/5.", "I'd rate it 4 -- no, 3.", "85 -- hmm, maybe 80": the judge
# takes its number back; what follows the last such turn is its answer (when it gives one there). These words
# also open sentences that revise nothing ("Rating: 4. Actually, the ending works."): a weak turn.
_CORRECTION = re.compile(
    r"(?:(?<=--)|(?<=[—–,.;!?(])|^)[ \t]*(?:wait|no|hmm+|oops|sorry|correction|scratch that|actually|"
    r"on (?:second|further) thought|on reflection|on further reflection|let me reconsider|make (?:that|it))\b"
    r"(?:[ \t]*[,.:!-]+)?[ \t]*(?:(?:on (?:second|further) thought|on reflection|on further reflection|"
    r"i (?:think|mean)|i'd say|i would say|maybe|perhaps|probably|make (?:that|it)|more like|rather|"
    r"it's|it is|let's say|let's go with|say)\b[ \t,:]*)*",
    re.IGNORECASE | re.MULTILINE,
)
# A judge that says it revises ("On second thought, the ending is rushed, so I'll lower it to 3", "Actually ... I'd
# lower that to 70", "Revised score: 3", "I'll change it to 5"): a strong turn. The later value is its answer; a
# revision whose new value cannot be read is ``ambiguous`` -- never the number it revised.
_REVISION_VERBS = (
    r"lower|raise|change|revise|adjust|bump|update|correct|downgrade|upgrade|reduce|increase|drop|move|bring|"
    r"knock|mark|take|modify|amend|switch|up|round"
)
_REVISION_OBJECT = (
    r"(?:it|that|this|(?:my|the|its|this|that)\s+(?:\w+\s+)?(?:score|rating|grade|answer|mark|verdict|choice|"
    r"assessment|evaluation|number))"
)
_REVISES = re.compile(
    r"\b(?:on|upon)\s+(?:second|further)\s+thoughts?\b|\b(?:on|upon)\s+(?:further\s+|more\s+)?reflection\b|"
    r"\b(?:after|having|upon)\s+(?:re-?considering|re-?reading|re-?thinking|thinking (?:about it|it over)|"
    r"further consideration|a second look)\b|\bthinking\s+(?:about\s+it\s+)?(?:more|again|twice)\b|"
    r"\blet\s+me\s+(?:re-?consider|revise|re-?think|correct|adjust|change|update)\b|\bre-?considering\b|"
    r"\bscratch\s+that\b|\bi\s+take\s+(?:that|it)\s+back\b|\bcorrection\b|\bi\s+(?:mis-?spoke|was\s+wrong)\b|"
    r"\b(?:revised|updated|corrected|adjusted|amended|new|changed|reconsidered)\s+(?:score|rating|grade|answer|"
    r"verdict|assessment|choice|evaluation)\b|^[ \t]*(?:edit|update|revised|revision|corrected|amended|updated)[ \t]*:|"
    r"(?<=[.!?;(\[])[ \t]*(?:edit|update|revised|revision|corrected|amended|updated)[ \t]*:|"
    r"\brevis(?:e|ing)\s+(?:it\s+|that\s+|my\s+score\s+)?(?:upwards?|downwards?|up|down)\b|"
    # "Score: 70. Hmm, maybe lower.": it revises without saying to what
    r"\b(?:maybe|perhaps|probably|possibly|or\s+even|a\s+(?:bit|little|touch)|slightly)\s+(?:lower|higher)\b|"
    # "I'll lower it", "so I'd bump my score", "let's change the rating": a subject that does it, no negation
    r"\b(?:i(?:'ll|'d|'ve|\s+have|\s+will|\s+would|\s+should|\s+must|\s+need\s+to|\s+have\s+to|'m\s+going\s+to|"
    r"\s+am\s+going\s+to)?|let\s+me|let's|we(?:'ll|'d)?)\s+(?:(?:now|then|just|instead|actually|rather|probably|"
    rf"therefore|also)\s+)?(?:(?:{_REVISION_VERBS})(?:d|ed|s)?(?:\s+(?:up|down))?\s+{_REVISION_OBJECT}|go\s+(?:up|down)\b)|"
    # "Lowering it to 3.", "Changing my answer to B": the participle opening a clause
    r"(?:^|(?<=[.!?;:,\n—–-]))[ \t]*(?:lowering|raising|changing|revising|adjusting|bumping|updating|correcting|"
    rf"downgrading|upgrading|reducing|dropping|bringing|knocking|marking|moving)(?:\s+(?:up|down))?\s+{_REVISION_OBJECT}",
    re.IGNORECASE | re.MULTILINE,
)
# What a revision binds right after it: "lower it to 3", "from 4 to 3", "down to a 3", "Correction: 3", "make that 3".
_BOUND_VALUE = re.compile(
    rf"[ \t]*(?:(?:up|down)[ \t]+)?(?:from[ \t]+(?:an?[ \t]+)?{_TOKEN}[ \t]+(?:(?:up|down)[ \t]+)?)?"
    r"(?:(?:to|at|with|as|by)[ \t]+|[ \t]*[:=,\-–—][ \t]*)(?:(?:just|only|a\s+mere)[ \t]+)?(?:an?[ \t]+)?"
    rf"(?=(?P<value>{_TOKEN}))",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Turn:
    start: int
    end: int
    strong: bool  # the reply says it revises: a revision it gives no readable value for is ambiguous


def _turns(body: str) -> list[_Turn]:
    found, pos = [], 0
    while weak := _CORRECTION.search(body, pos):  # overlapping: "No, wait -- yes" turns twice
        found.append(_Turn(weak.start(), weak.end(), False))
        pos = weak.start() + 1
    strong = [_Turn(m.start(), m.end(), True) for m in _REVISES.finditer(body)]
    # "Correction: 3" is both: the strong reading decides
    found = [t for t in found if not any(s.start <= t.start < s.end or t.start <= s.start < t.end for s in strong)]
    return sorted(found + strong, key=lambda t: t.start)


def _bound(after: str, scale: tuple[float, float]) -> list[_Candidate]:
    """The value a revision names right after itself ("... to 3", ": 3"); "by 1" is a step, not a score."""
    bound = _BOUND_VALUE.match(after)
    if bound is None:
        return []
    if re.match(r"[ \t]*(?:(?:up|down)[ \t]+)?by\b", after, re.IGNORECASE):
        return [_Candidate(bound.start("value"), 0.0, AMBIGUOUS, FINAL)]  # "lower it by one": a step
    token = _TOKEN_RE.match(after, bound.start("value"))
    candidate = _candidate_at(after, token, FINAL, scale) if token else None
    return [candidate] if candidate else []


def _loose(after: str, scale: tuple[float, float], *, weak: bool = False) -> list[_Candidate]:
    """Numbers of the revising sentence and the next ("so 3.", "... I think 70 is fairer") that are no count, date,
    list item or reference: after a revision, a number left there is the new score or leaves the reading in doubt.
    After a weak turn ("Actually, chapter 2 is great.") only a number in a rating clause or a sentence of its own
    ("Hmm, the ending is weak. 2.") is a new score; any other leaves the reading in doubt."""
    # a sentence's end, but not an ellipsis ("Reconsidering... still 4.")
    stop = re.compile(r"(?<!\.)[.!?](?![\d.])(?:[^.!?]*?(?<!\.)[.!?](?![\d.]))?|\n\s*\n").search(after)
    window = after[: stop.end()] if stop else after
    found = []
    for token in _TOKEN_RE.finditer(window):
        if token.group(0).isalpha() and not _WORD_OK_AFTER.search(window[max(0, token.start() - 20) : token.start()]):
            continue
        if _numbers_something(window, token):
            continue  # "chapter 2", "line 3": it numbers something
        candidate = _candidate_at(window, token, OTHER, scale)
        if candidate and weak and not (_rating_context(window, token) or _alone(window, token)):
            candidate = replace(candidate, problem=AMBIGUOUS)
        if candidate:
            found.append(candidate)
    return found


def _alone(text: str, token: re.Match[str]) -> bool:
    """A number that is its own sentence or clause: "... the ending is weak. 2.", "-- 3"."""
    before = text[_sentence_start(text, token.start()) : token.start()]
    return not before.strip(" \t-–—,:") and bool(re.match(r"[ \t]*(?:[.!]|$)", text[token.end() :], re.MULTILINE))


def _another_score(body: str, value: float, scale: tuple[float, float]) -> bool:
    """Is there a number the readers above passed over that would score the text otherwise ("65 (could be 70)",
    "I'll give 60. Final: 65." with an unread label)? Any number that is no count, date, list item or reference,
    on the scale and of another value, or hedged: the reply does not single out one score."""
    for candidate in _loose_all(body, scale):
        if candidate.problem == AMBIGUOUS:
            return True
        if candidate.problem is None and candidate.value != value and scale[0] <= candidate.value <= scale[1]:
            return True
    return False


_NUMBERED = re.compile(
    r"\b(?:step|lines?|chapter|paragraph|sentence|part|act|scene|point|item|no\.|#|number|page|verse|stanza|section|"
    r"criterion|aspect)[ \t]*(?:\d+[ \t]*[-–,&][ \t]*)?$",
    re.IGNORECASE,
)


def _numbers_something(text: str, token: re.Match[str]) -> bool:
    """ "1. Grammar" (a list item at a line's start), "Step 2:", "chapter 3", "lines 4-5": a number that numbers."""
    line_start = text.rfind("\n", 0, token.start()) + 1
    if not text[line_start : token.start()].strip() and re.match(r"[.)](?:\s|$)", text[token.end() :]):
        return True
    return bool(_NUMBERED.search(text[max(0, token.start() - 16) : token.start()]))


# Words of a clause that gives a rating: a number of another value there is a second score ("Final: 65"); "the
# character is 12 in one sentence and 15 in the next" gives none
_RATING_WORDS = re.compile(
    r"\b(?:rat\w*|scor\w*|grad\w*|giv\w*|gave|mark|points?|stars?|final|answer|verdict|assess\w*|judg\w*|"
    r"deserv\w*|earn\w*|say|go\s+with|settle|revis\w*|chang\w*|lower\w*|rais\w*|bump\w*|adjust\w*|could\s+be|"
    r"maybe|perhaps|think|stick\s+with|stay\s+with|stand\s+by|keep(?:ing)?)\b",
    re.IGNORECASE,
)


def _rating_context(text: str, token: re.Match[str]) -> bool:
    rest = re.match(r"[^.!?;\n]{0,20}", text[token.end() :])
    clause = text[_sentence_start(text, token.start()) : token.end() + (rest.end() if rest else 0)]
    if _SOMEONE_ELSE.search(clause):
        return False  # "Some readers might lower it to 3, but I won't": another rater's score, not a second one
    return bool(_RATING_WORDS.search(clause) or re.match(r"\s*(?:/|%|out\s+of\b)", text[token.end() :]))


def _loose_all(text: str, scale: tuple[float, float]) -> list[_Candidate]:
    found = []
    for token in _TOKEN_RE.finditer(text):
        if token.group(0).isalpha():
            continue  # "one of", "the two leads": number words count only where a reader placed them
        if _numbers_something(text, token):
            continue  # "1. Grammar", "Step 2:", "line 3": it numbers something
        candidate = _candidate_at(text, token, OTHER, scale)
        if candidate and (candidate.problem == AMBIGUOUS or _rating_context(text, token)):
            found.append(candidate)
    return found


def _revised(body: str, scale: tuple[float, float]) -> ParseResult | None:
    """The reading after the reply's last revision of an earlier score; None when it revises none.

    A strong revision ("on second thought", "I'll lower it") without a readable new value is ``ambiguous``: the
    judge said the first number is not its answer. A weak turn ("Actually, ...") with no number after it revises
    nothing, and the turn before it is looked at."""
    turns = _turns(body)
    for turn in reversed(turns):
        before, after = body[: turn.start], body[turn.end :]
        if turn.strong and (bound := _bound(after, scale)):
            return _judge_score(bound, scale)  # "I'll lower it from 4 to 3", "Revised score: 3"
        if not (_score_candidates(before, scale) or re.search(r"\d|[★⭐]", before)):
            continue  # nothing earlier to revise: "On second thought about the ending, I'd give it a 3"
        weak_loose = functools.partial(_loose, weak=True)
        for reader in (_bound, _score_candidates, _loose) if turn.strong else (_score_candidates, weak_loose):
            candidates = reader(after, scale)
            if candidates:
                return _judge_score(candidates, scale)
        if turn.strong and not _same_sentence_revision(body, turn, turns):
            return ParseResult(None, "ambiguous")
    return None


def _same_sentence_revision(body: str, turn: _Turn, turns: list[_Turn]) -> bool:
    """A strong turn that closes a revision its sentence already made: the "after a second look" of
    "I'll lower it from 4 to 3 after a second look."."""
    start = _sentence_start(body, turn.start)
    return any(t.strong and start <= t.start < turn.start for t in turns)


# "About 65%.", "~70": a reply that is only an approximate number
_APPROXIMATE = re.compile(r"[ \t\n]*(?i:about|around|approximately|roughly|approx\.|~)[ \t]*(?=[\d-])")


# --------------------------------------------------------------------------------------------------
# Scores: the question asked, among others a judge rates beside it
# --------------------------------------------------------------------------------------------------

# The papers' criteria, with the names judges use for them: a judge asked for cohesiveness that writes
# "Grammaticality: 4, Cohesiveness: 2" answers 2, and its 4 answers another question.
_QUESTION_NAMES = (
    ("grammaticality", "grammar", "grammatical correctness", "grammaticalness"),
    ("cohesiveness", "cohesion", "coherence", "coherency"),
    ("likability", "likeability", "enjoyment", "enjoyability"),
    ("relevance",),
    ("fluency",),
    ("meaning", "semantics"),
    ("empathy",),
    ("surprise",),
    ("engagement",),
    ("complexity",),
    ("consistency",),
)
# Where one question's statement ends and the next begins: "Grammar: 4, Cohesiveness: 2", '{"a": 4, "b": 2}',
# "grammar a 4 and relevance a 2", a line of a table.
_CLAUSE_END = re.compile(r"[.!?](?!\d)|[;,\n]|\b(?:and|but)\b", re.IGNORECASE)
# "Coherence: 3\nOverall: 4" scores the question and the story as a whole: the overall row is another question
_OVERALL_ROW = re.compile(
    r"[ \t\-•|{\"']*(?:overall|total)(?:[ \t]+(?:score|rating|quality|impression))?[\"']?[ \t|]*[:=|]", re.IGNORECASE
)


def _names_of(asked: str, body: str) -> tuple[tuple[str, ...], list[str]]:
    """(the asked question's names, every question name to look for). The name itself when the reply uses it
    (a study may ask coherence and cohesion both), else the names judges use for it."""
    asked = asked.lower().replace("_", " ").replace("-", " ").strip()
    names = [name for group in _QUESTION_NAMES for name in group]
    if asked and asked not in names:
        names.append(asked)
    if re.search(rf"\b{re.escape(asked)}\b", body, re.IGNORECASE):
        return (asked,), names
    group = next((g for g in _QUESTION_NAMES if asked in g), (asked,))
    return group, names


def _other_questions_masked(body: str, asked: str) -> str:
    """The reply with the clauses that score another question blanked out ("Grammaticality: 4" when asked
    cohesiveness). A clause naming the asked question, or no question at all, is kept."""
    if not asked:
        return body
    own_names, names = _names_of(asked, body)
    own = set(own_names)
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True)) + r")\b", re.I)
    number = re.compile(rf"\d|[★⭐]|\b(?i:{_WORDS})\b")
    ends = [0, *(m.end() for m in _CLAUSE_END.finditer(body)), len(body)]
    clauses = [(start, end, body[start:end]) for start, end in itertools.pairwise(ends)]
    named = [{n.group(0).lower() for n in pattern.finditer(text)} for _, _, text in clauses]
    own_scored = any(found & own and number.search(text) for found, (_, _, text) in zip(named, clauses))
    out = list(body)
    for found, (start, end, text) in zip(named, clauses):
        other = (found and not found & own) or (own_scored and not found & own and _OVERALL_ROW.match(text))
        if other and number.search(text):
            out[start:end] = " " * (end - start)
    return "".join(out)


def parse_score(text: str | None, scale: tuple[float, float] = (1, 5), *, asked: str = "") -> ParseResult:
    """Read the score a judge's reply assigns on ``scale`` = (low, high) to the question named ``asked`` (the
    attribute's name; "" when unknown: then a reply scoring several questions is ambiguous)."""
    if not text or not text.strip():
        return ParseResult(None, "no_number")
    body = _other_questions_masked(_strip_scale(_answer_part(_normalise(text)), scale), asked)
    if approximate := _APPROXIMATE.match(body):
        body = body[approximate.end() :]
    if (revised := _revised(body, scale)) is not None:
        return revised
    candidates = _score_candidates(body, scale)
    if candidates:
        result = _judge_score(candidates, scale)
        final = min(c.tier for c in candidates) == FINAL  # "Final rating: 3": the reply said which one it gives
        if result.value is not None and not final and _another_score(body, result.value, scale):
            return ParseResult(None, "ambiguous")
        return result
    if _REFUSAL.search(text):
        return ParseResult(None, "refusal")
    return ParseResult(None, "ambiguous" if re.search(r"\d|[★⭐]", body) else "no_number")


# --------------------------------------------------------------------------------------------------
# Options (Chen et al. App. B: "(A) Storyline-1 (B) Storyline-2 (C) Both storylines are equally ...")
# --------------------------------------------------------------------------------------------------

_LETTER = re.compile(r"(?<![\w'’/-])\(?([A-Z])\)?(?![\w'’])")
_CHOICE_MARKER = re.compile(
    r"\b(?i:(?:final\s+)?answer|r[ée]ponse|respuesta|risposta|antwort|resposta|option|choice|choose|chose|"
    r"choosing|picks?|picked|select|selected|verdict|decision|go(?:ing)?\s+with|settle\s+on|stick\s+with|"
    r"stay\s+with)\b[\"']?[ \t]*(?i:is|would be|will be|[:=])?\s*(?i:option\b)?[ \t]*[\"']?"
)
# After the article "A" (or the pronoun "I") only these words make it a letter: "A because ...".
_LETTER_CONNECTORS = frozenset(
    ("is", "because", "since", "as", "was", "seems", "appears", "has", "wins", "would", "should", "for", "due", "given")
)


def _words(text: str) -> tuple[str, ...]:
    return tuple(re.findall(r"[a-z]+|\d+", text.lower()))


def _name_pattern(name: str) -> re.Pattern[str]:
    """An option's name as written in a reply: "Storyline-2", "storyline 2"; a long one by its first words."""
    words = _words(name)[:6] or ("(?!)",)  # a name without words is never found
    return re.compile(r"(?<![\w-])" + r"\W*".join(words) + r"(?![\w-])", re.IGNORECASE)


@dataclass(frozen=True)
class _Options:
    keys: tuple[str, ...]
    names: tuple[re.Pattern[str], ...]  # empty when the options have no names
    full_names: tuple[tuple[str, ...], ...]  # each name's words, to recognise a line that is only a name

    def name_at(self, text: str, pos: int, *, across: bool = False) -> int | None:
        """The index of the option whose name starts at ``pos`` (after spaces, brackets, a dash), or
        ``across`` a full stop or line break too ("(A).\n\nStoryline-2 ...")."""
        lead = re.compile(r"[\s\"'(\[\]).:,—–-]*" if across else r"[ \t\"'(\[]*").match(text, pos)
        start = lead.end() if lead else pos
        for index, pattern in enumerate(self.names):
            if pattern.match(text, start):
                return index
        return None


def _letter_problem(text: str, key: str, end: int, options: _Options) -> str | None:
    """DROP (an article, a subject), AMBIGUOUS ("A or B", "(A) Storyline-2"), or None (an answer)."""
    rest = text[end:]
    if re.match(r"\s*(?:or|/|vs\.?|versus)\s*\(?[A-Z]\)?(?![\w])", rest):
        return AMBIGUOUS
    other = re.match(r"[ \t]+\(?([A-Z])\)?(?![\w])", rest)
    if other and other.group(1) != key and other.group(1) in options.keys:
        return AMBIGUOUS  # " A B C"
    if re.match(r"\s*(?:and|&|,)\s*\(?[A-Z]\)?(?![\w])", rest):
        return DROP  # "A and B are both weak"
    if key == "I" and key not in options.keys:
        return DROP  # the pronoun: "I would choose Option B"
    word = re.match(r"[ \t]+([a-z][\w'-]*)", rest)
    if key in ("A", "I") and word and word.group(1) not in _LETTER_CONNECTORS and text[end - 1] != ")":
        return DROP  # "A close call", "I will choose"
    named = options.name_at(text, end, across=True)
    if named is not None and options.keys[named] != key:
        return AMBIGUOUS  # the letter and the name written after it disagree (a conservative check)
    return None


@dataclass(frozen=True)
class _Choice:
    pos: int
    key: str | None  # None: ambiguous
    decisive: bool  # a marker, the opening, a line of its own; else a "(B)" in the reasoning
    final: bool = False  # "Final answer: A", "In conclusion, ... Option B": the reply's own last word


# A lower-case letter is an option only where nothing can follow it: "Answer: b", a reply " a".
_LOWER_LETTER = re.compile(r"\(?([a-z])\)?(?=[ \t]*(?:[.)\],;:!]|$))", re.MULTILINE)


def _choice_at(
    text: str, pos: int, options: _Options, decisive: bool, *, by_name: bool = True, lower: bool = True
) -> _Choice | None:
    named = options.name_at(text, pos) if by_name and options.names else None
    letter = _LETTER.match(text, pos) or (_LOWER_LETTER.match(text, pos) if lower else None)
    if letter is None:
        return _Choice(pos, options.keys[named], decisive) if named is not None else None
    key = letter.group(1).upper()
    problem = _letter_problem(text, key, letter.end(), options)
    if problem == DROP:
        return None
    return _Choice(pos, None if problem else key, decisive)


# "Both are equally good, so C.", " B\n\nActually A.": a letter that ends a concluding sentence.
_CONCLUDING = re.compile(
    r"\b(?i:so|thus|therefore|hence|actually|rather|instead|i mean|make (?:that|it)|i think|i believe|i'd say|"
    r"i would say|go for)\b,?[ \t]+"
    r"(?=\(?[A-Z]\)?[ \t]*(?:[.!]|$))",
    re.MULTILINE,
)
# " A is better, but B is more consistent": an opening letter that is a sentence's subject.
_LETTER_AS_SUBJECT = re.compile(r"\(?[A-Z]\)?[ \t]+(?:is|was|seems|appears|has|wins)\b")


def _other_letters(text: str, key: str, options: _Options) -> bool:
    return any(
        m.group(1) in options.keys and m.group(1) != key and _letter_problem(text, m.group(1), m.end(), options) != DROP
        for m in _LETTER.finditer(text)
    )


# "Storyline-1 wins.", "A is better than B.": a reply whose first sentence is only that verdict
_VERDICT_VERB = re.compile(
    r"[ \t]+(?:(?:clearly|definitely|slightly|much|far|a bit|somewhat|is)[ \t]+)*"
    r"(?:(?P<better>wins|is[ \t]+(?:(?:clearly|definitely|slightly|much|far|a bit|somewhat)[ \t]+)*(?:the[ \t]+)?"
    r"(?:better|stronger)(?:[ \t]+(?:one|storyline|text|option))?)|"
    r"(?P<worse>loses|is[ \t]+(?:(?:clearly|definitely|slightly|much|far|a bit|somewhat)[ \t]+)*(?:the[ \t]+)?"
    r"(?:worse|weaker)(?:[ \t]+(?:one|storyline|text|option))?))"
    r"(?:[ \t]+than[ \t]+[^.!?\n]{1,40}?)?[ \t]*(?:[.!]|$)",
    re.IGNORECASE | re.MULTILINE,
)


def _verdict_sentence(text: str, pos: int, options: _Options) -> _Choice | None:
    """The option a reply opening "X wins." / "X is better than Y." picks, where the question asks which is better
    (its "which is worse" form for "X is worse"); the options' names say which question was asked."""
    if not options.names:
        return None  # the question is not known: "better" may answer "which is worse"
    named = options.name_at(text, pos)
    if named is not None:
        key, end = options.keys[named], options.names[named].match(text, pos)
        subject_end = end.end() if end else pos
    elif (letter := _LETTER.match(text, pos)) and letter.group(1) in options.keys:
        key, subject_end = letter.group(1), letter.end()
    else:
        return None
    verdict = _VERDICT_VERB.match(text, subject_end)
    if verdict is None:
        return None
    worse_question = any("poor" in words and "well" not in words for words in options.full_names)
    if (verdict.group("worse") is not None) != worse_question:
        return _Choice(pos, None, True)  # "Storyline-1 is better" to "which is worse": only a mention
    return _Choice(pos, key, True)


_OPTION_HEDGE = (
    r"\b(?:leaning|or|maybe|perhaps|rather|more|closer|but|than|towards?|almost|bordering|verging)\W+(?:\w+\W+)?"
)


def _one_word_answer(text: str, pos: int, options: _Options) -> _Choice | None:
    """A reply that opens with a one-word option and a stop: "Yes, the response stays on topic.", "Negative. The
    reviewer ..." (a yes/no or category question). "No doubt ..." or "Positive aspects ..." open prose."""
    named = options.name_at(text, pos)
    if named is None or len(options.full_names[named]) != 1:
        return None
    end = options.names[named].match(text, pos)
    if end is None or not re.match(r"[ \t]*(?:[.,!:;—–]|-[ \t]|$)", text[end.end() :], re.MULTILINE):
        return None
    sentence = text[end.end() :].split("\n", 1)[0]
    sentence = re.split(r"[.!?]", sentence, maxsplit=1)[0]
    others = (p for i, p in enumerate(options.names) if i != named)
    if any(re.search(_OPTION_HEDGE + p.pattern, sentence, re.IGNORECASE) for p in others):
        return _Choice(pos, None, True)  # "neutral, leaning negative": the first sentence offers another option
    return _Choice(pos, options.keys[named], True)


def _opening_choice(text: str, options: _Options) -> _Choice | None:
    """The opening answers "I will choose Option" (V1-V3) with a letter; a name there opens a prose sentence."""
    opening = re.match(r"[ \t\n\"']*", text)
    pos = opening.end() if opening else 0
    if (verdict := _verdict_sentence(text, pos, options)) is not None:
        return verdict
    if (word := _one_word_answer(text, pos, options)) is not None:
        return word
    choice = _choice_at(text, pos, options, True, by_name=False, lower=False)
    if choice and choice.key and _LETTER_AS_SUBJECT.match(text, pos) and _other_letters(text, choice.key, options):
        return _Choice(pos, None, True)
    return choice


def _choice_candidates(text: str, options: _Options) -> list[_Choice | None]:
    found = [_opening_choice(text, options)]
    for marker in _CHOICE_MARKER.finditer(text):
        choice = _choice_at(text, marker.end(), options, True)
        prefix = text[_sentence_start(text, marker.start()) : marker.end()]
        if choice and (_FINAL_OPENING.match(prefix) or _FINAL_WORDS.search(prefix)):
            choice = replace(choice, final=True)
        found.append(choice)
    for marker in _CONCLUDING.finditer(text):
        found.append(_choice_at(text, marker.end(), options, True, lower=False))
    for line in re.finditer(r"^[ \t\"'(\[]*(.+?)[ \t\"')\].!]*$", text, re.MULTILINE):
        body = line.group(1)
        if re.fullmatch(r"\(?[A-Za-z]\)?", body) or _words(body) in options.full_names:
            found.append(_choice_at(text, line.start(1), options, True))
    for paren in re.finditer(r"\([A-Z]\)", text):
        found.append(_choice_at(text, paren.start(), options, False, lower=False))
    return found


def _judge_choice(candidates: list[_Choice | None], keys: tuple[str, ...]) -> ParseResult | None:
    """The reply's final word decides ("Option B is vivid ... Final answer: A" is A), else its decisive answers,
    else the options it marks in passing; two different answers in the deciding group are ambiguous."""
    finals = [c for c in candidates if c and c.final]
    for decisive in (True, False):
        group = finals or [c for c in candidates if c and c.decisive == decisive]
        if not group:
            continue
        answered = {c.key for c in group}
        if None in answered or len(answered) > 1:
            return ParseResult(None, "ambiguous")
        key = answered.pop()
        return ParseResult(float(keys.index(key))) if key in keys else ParseResult(None, "out_of_range")
    return None


def _strip_option_echo(text: str, options: _Options) -> tuple[str, bool]:
    """Remove the instructions' "A/B/C" and an echoed options list; say whether the list was echoed."""
    key = "(?:" + "|".join(map(re.escape, options.keys)) + ")"
    text = re.sub(rf"\(?{key}\)?(?:\s*(?:/|,|,?\s*or)\s*\(?{key}\)?){{2,}}", " ", text)
    lines = text.split("\n")
    echo = [i for i, line in enumerate(lines) if re.match(r"\s*[-•]?\s*\([A-Z]\)\s+\S", line)]
    if len(echo) < 2:
        return text, False
    return "\n".join(line for i, line in enumerate(lines) if i not in echo), True


def _mentions_an_option(text: str, options: _Options) -> bool:
    if re.search(r"\d", text) or any(p.search(text) for p in options.names):
        return True
    return any(
        _letter_problem(text, m.group(1), m.end(), options) != DROP
        for m in _LETTER.finditer(text)
        if m.group(1) in options.keys
    )


_BOUND_CHOICE = re.compile(r"[ \t]*(?:(?:to|with|as)[ \t]+|[ \t]*[:=,\-–—][ \t]*)(?i:option[ \t]+)?")


def _revised_choice(body: str, options: _Options) -> ParseResult | None:
    """The option after the reply's last revision of an earlier answer ("B. Actually, A is better", "Correction:
    C", "I'll change my answer to B"); a strong revision without a readable option is ambiguous; None: no revision."""
    for turn in reversed(_turns(body)):
        after = body[turn.end :]
        bound = _BOUND_CHOICE.match(after)
        choice = _choice_at(after, bound.end(), options, True, lower=False) if bound else None
        earlier = _judge_choice(_choice_candidates(body[: turn.start], options), options.keys)
        if earlier is None and not (turn.strong and choice):
            continue  # nothing earlier to revise ("I'll change my answer to B" needs none)
        found: list[_Choice | None] = [replace(choice, final=True)] if choice else _choice_candidates(after, options)
        decided = _judge_choice(found, options.keys)
        if decided is not None:
            return decided
        if turn.strong or _mentions_an_option(after, options):
            return ParseResult(None, "ambiguous")  # "Negative. Actually, it reads as neutral."
    return None


def parse_choice(
    text: str | None, keys: tuple[str, ...] = ("A", "B", "C"), *, names: Sequence[str] | None = None
) -> ParseResult:
    """Read the option a reply picks: the index into ``keys`` of "(A)", "Answer: B", "I will choose Option C".

    ``names`` are the options' texts in the same order ("Storyline-1", "Storyline-2", "Both storylines
    are equally ..."): with them "Answer: Storyline-2" and a reply that is only a name are read too.
    """
    if not text or not text.strip():
        return ParseResult(None, "no_number")
    names = tuple(names or ())
    options = _Options(tuple(keys), tuple(_name_pattern(n) for n in names), tuple(_words(n) for n in names))
    body, echoed = _strip_option_echo(_answer_part(_normalise(text)), options)
    decided = _revised_choice(body, options) or _judge_choice(_choice_candidates(body, options), options.keys)
    if decided is not None:
        return decided
    if _REFUSAL.search(text):
        return ParseResult(None, "refusal")
    return ParseResult(None, "ambiguous" if echoed or _mentions_an_option(body, options) else "no_number")

"""The judge-reply corpus (``judge_replies.jsonl``) and a tally of how a parser reads it.

Each line is one realistic judge reply with the answer a careful reader codes: ``value`` (a number, or an
option letter for ``kind: choice``) when the reply singles out one answer, else ``failure`` (refusal,
no_number, out_of_range, ambiguous). ``options`` names the option set of a choice reply (below).
``declined`` marks a reply the parser deliberately does not read (its typed failure, with a ``note``
saying why): a lost rating, never a wrong one. Rows ``heldout-*`` and ``heldout2-*`` were written after
the parser and measured before it was changed for them (see the commit log).

Measure any version of the parser (e.g. main's) with:
    python -m tests.domain.reply_corpus path/to/parsing.py
"""

from __future__ import annotations

import importlib.util
import inspect
import json
import sys
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from tui_rater.domain import protocols
from tui_rater.domain.questions import Attribute, Choice, Scale
from tui_rater.domain.tasks import BUILTIN_TASKS

CORPUS = Path(__file__).with_name("judge_replies.jsonl")

_STORYLINES = ("Storyline-1", "Storyline-2")
# Chen et al. App. B: the options of pairwise prompts V1 (and V2), V3 ("which is worse") and V4.
OPTIONS: dict[str, tuple[tuple[str, ...], tuple[str, ...] | None]] = {
    "chen-v1": (
        ("A", "B", "C"),
        (*_STORYLINES, "Both storylines are equally well-written and consistent with the beginning of the story."),
    ),
    "chen-v3": (
        ("A", "B", "C"),
        (*_STORYLINES, "Both storylines are equally poor-written and inconsistent with the beginning of the story."),
    ),
    "chen-v4": (
        ("A", "B", "C"),
        (
            *_STORYLINES,
            "Both storylines are equally well-written (poor-written) and consistent (inconsistent) with the "
            "beginning of the story.",
        ),
    ),
    "letters": (("A", "B", "C", "D"), None),
}


# Rows of ``kind: protocol`` are read as a judge's reply is, through the question's protocol (``read_reply``: the
# parse, then the value in the item's terms -- a pair's order, V3's inversion, V4's stars); their ``value`` is the
# stored value. ``question`` is "task/attribute" of a built-in task, or one of these custom questions.
_YES_NO = Scale("choice", 0, 1, choices=(Choice("A", "Yes"), Choice("B", "No")))
_SENTIMENT = Scale("choice", 0, 2, choices=(Choice("A", "positive"), Choice("B", "negative"), Choice("C", "neutral")))
CUSTOM: dict[str, Attribute] = {
    "yesno": Attribute("on_topic", "Does the response stay on topic?", _YES_NO, protocol="choice"),
    "category": Attribute("sentiment", "What is the review's sentiment?", _SENTIMENT, protocol="choice"),
}


def question(row: dict[str, Any]) -> Attribute:
    if row["question"] in CUSTOM:
        return CUSTOM[row["question"]]
    task, attribute = row["question"].split("/")
    return BUILTIN_TASKS[task].attribute(attribute)


def category(row: dict[str, Any]) -> str:
    """The row's kind of question for the figures: "rev-likert-007" -> "likert"."""
    return row["id"].split("-")[1] if row["kind"] == "protocol" else row["kind"]


def load() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


def expected(row: dict[str, Any]) -> tuple[float | None, str | None]:
    """(value, failure) the row expects; a choice's letter as its 0-based index, as parse_choice returns it."""
    if "failure" in row:
        return None, row["failure"]
    if row["kind"] == "protocol":
        return float(row["value"]), None
    if row["kind"] == "choice":
        return float(OPTIONS[row["options"]][0].index(row["value"])), None
    return float(row["value"]), None


@dataclass
class Tally:
    total: int = 0
    correct: int = 0
    silent_wrong: list[str] = field(default_factory=list)  # a value where the reader codes another answer
    typed_failures: int = 0  # every failure returned, expected or not
    lost: list[str] = field(default_factory=list)  # a failure where the reader codes a value
    declined: list[str] = field(default_factory=list)  # ... that the row marks as the parser's known limit
    wrong_failure: list[str] = field(default_factory=list)  # a failure, but not the expected kind
    by_failure: Counter[str] = field(default_factory=Counter)

    def line(self) -> str:
        return (
            f"{self.correct}/{self.total} correct ({100 * self.correct / self.total:.1f} %), "
            f"{len(self.silent_wrong)} silent wrong values, {self.typed_failures} typed failures "
            f"({len(self.lost) + len(self.declined)} where a value was expected, {len(self.declined)} of them "
            f"marked declined; {len(self.wrong_failure)} of another kind), "
            f"failures returned: {dict(sorted(self.by_failure.items()))}"
        )


def read(row: dict[str, Any], parse_score: Callable[..., Any], parse_choice: Callable[..., Any]) -> Any:
    if row["kind"] == "protocol":  # the judge's own path, whatever parser module is measured
        attribute = question(row)
        reading = protocols.of(attribute).read_reply(
            row["text"], attribute, row["variant"], row.get("presentation", "")
        )
        return SimpleNamespace(value=reading.value, failure=None if reading.ok else reading.status)
    if row["kind"] == "score":
        return parse_score(row["text"], tuple(row["scale"]))
    keys, names = OPTIONS[row["options"]]
    if names is not None and "names" in inspect.signature(parse_choice).parameters:
        return parse_choice(row["text"], keys, names=names)
    return parse_choice(row["text"], keys)


def figures(rows: list[dict[str, Any]], parse_score: Callable[..., Any], parse_choice: Callable[..., Any]) -> str:
    """One line per kind of question: replies, read as coded, silent wrong, recall (readable replies read right)."""
    lines = []
    for kind in dict.fromkeys(category(row) for row in rows):
        part = [row for row in rows if category(row) == kind]
        t = tally(part, parse_score, parse_choice)
        readable = sum(1 for row in part if "value" in row)
        read_right = readable - len(t.lost) - len(t.declined) - sum(1 for w in t.silent_wrong if _coded_value(w, part))
        lines.append(
            f"{kind:>10}: {t.total} replies ({readable} readable), {t.correct} read as coded, "
            f"{len(t.silent_wrong)} silent wrong, recall {read_right}/{readable}, "
            f"failures {dict(sorted(t.by_failure.items()))}"
        )
    return "\n".join(lines)


def _coded_value(silent: str, rows: list[dict[str, Any]]) -> bool:
    row_id = silent.split(":", 1)[0]
    return any(row["id"] == row_id and "value" in row for row in rows)


def recall(rows: list[dict[str, Any]], parse_score: Callable[..., Any], parse_choice: Callable[..., Any]) -> float:
    """The share of the readable replies (coded with a value) that are read as coded."""
    readable = [row for row in rows if "value" in row]
    right = sum(1 for row in readable if _read_as_coded(row, parse_score, parse_choice))
    return right / len(readable)


def _read_as_coded(row: dict[str, Any], parse_score: Callable[..., Any], parse_choice: Callable[..., Any]) -> bool:
    got = read(row, parse_score, parse_choice)
    return (got.value, got.failure) == expected(row)


def tally(rows: list[dict[str, Any]], parse_score: Callable[..., Any], parse_choice: Callable[..., Any]) -> Tally:
    t = Tally()
    for row in rows:
        want_value, want_failure = expected(row)
        got = read(row, parse_score, parse_choice)
        t.total += 1
        if got.failure is not None:
            t.typed_failures += 1
            t.by_failure[got.failure] += 1
        if (got.failure, got.value) == (want_failure, want_value):
            t.correct += 1
        elif got.failure is None:
            t.silent_wrong.append(f"{row['id']}: {got.value!r} for {row['text'][:70]!r}")
        elif want_failure is None:
            into = t.declined if got.failure == row.get("declined") else t.lost
            into.append(f"{row['id']}: {got.failure} for {row['text'][:70]!r}")
        else:
            t.wrong_failure.append(f"{row['id']}: {got.failure} (want {want_failure}) for {row['text'][:70]!r}")
    return t


def _module_from(path: str) -> Any:
    spec = importlib.util.spec_from_file_location("parsing_under_test", path)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up here
    spec.loader.exec_module(module)
    return module


if __name__ == "__main__":
    if len(sys.argv) > 1:
        parsing = _module_from(sys.argv[1])
    else:
        from tui_rater.domain import parsing
    result = tally(load(), parsing.parse_score, parsing.parse_choice)
    print(result.line())
    listed = (("silent wrong", result.silent_wrong), ("lost", result.lost), ("declined", result.declined))
    for title, items in (*listed, ("other", result.wrong_failure)):
        for item in items:
            print(f"  {title}: {item}")

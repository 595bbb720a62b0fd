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
from typing import Any

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


def load() -> list[dict[str, Any]]:
    return [json.loads(line) for line in CORPUS.read_text(encoding="utf-8").splitlines() if line.strip()]


def expected(row: dict[str, Any]) -> tuple[float | None, str | None]:
    """(value, failure) the row expects; a choice's letter as its 0-based index, as parse_choice returns it."""
    if "failure" in row:
        return None, row["failure"]
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
    if row["kind"] == "score":
        return parse_score(row["text"], tuple(row["scale"]))
    keys, names = OPTIONS[row["options"]]
    if names is not None and "names" in inspect.signature(parse_choice).parameters:
        return parse_choice(row["text"], keys, names=names)
    return parse_choice(row["text"], keys)


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

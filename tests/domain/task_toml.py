"""Hypothesis strategies for custom task files: TOML text of tables that are sometimes right and
often wrong in every way a person (or an attacker) can get them wrong, and a small TOML writer."""

from __future__ import annotations

import json
import math

from hypothesis import strategies as st

from tui_rater.domain.protocols import REGISTRY
from tui_rater.domain.tasks import SCALE_KINDS

HOSTILE = [
    "\x1b]52;c;Y3VybCBldmlsLmV4YW1wbGUgfCBzaA==\x07",  # OSC 52: write the clipboard
    "\x1b]0;pwned\x07",  # set the window title
    "\x1b[2J\x1b[H",  # clear the screen
    "[/]",
    "[bold red]",
    "[link=https://evil.example]x[/link]",
    "\u202e",
    "\r",
    "\n",
    "\t",
    "{story}",
    "{nope}",
    "}{",
    "",
    " ",
    "x" * 300,
]

names = st.one_of(
    st.sampled_from(["text", "q", "quality", "story_a", "writers", "t2", "Fluency level"]),
    st.builds(lambda a, b: a + b, st.sampled_from(["q", "t", "x "]), st.sampled_from(HOSTILE)),
)
texts = st.one_of(names, st.sampled_from(HOSTILE), st.text(st.characters(exclude_categories=["Cs"]), max_size=12))
numbers = st.one_of(
    st.integers(-10, 110),
    st.integers(-(2**70), 2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([0, 1, 5, 9, 10, 100, 0.5, 1e300, -1e300]),
)
scalars = st.one_of(texts, numbers, st.booleans())
junk = st.recursive(scalars, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(texts, inner, max_size=3))


def maybe(strategy, other=junk):
    """Mostly (8 in 10) the right kind of value, else anything, or missing (None)."""
    return st.integers(0, 9).flatmap(lambda k: strategy if k < 8 else other if k == 8 else st.none())


_params = st.sampled_from(["text", "story_a", "story_b", "A", "B", "C", "prompt", "x"])


def scale_tables():
    return st.fixed_dictionaries(
        {},
        optional={
            "kind": maybe(st.sampled_from(SCALE_KINDS)),
            "low": maybe(numbers),
            "high": maybe(numbers),
            "labels": maybe(st.dictionaries(st.sampled_from(["1", "5", "0", "100", "x", "1e9"]), texts, max_size=3)),
            "choices": maybe(st.lists(texts, min_size=2, max_size=11)),
        },
    )


def attribute_tables(fields):
    return st.fixed_dictionaries(
        {"name": maybe(names), "question": maybe(texts)},
        optional={
            "scale": maybe(scale_tables()),
            "shows": maybe(st.lists(st.sampled_from(fields) | names, max_size=2)),
            "template": maybe(st.sampled_from(["{text}", "Rate {text}.", "{nope}", "{", "{{text}}", "x"])),
            "protocol": maybe(st.sampled_from(sorted(REGISTRY))),
            "params": maybe(st.dictionaries(st.sampled_from(["first", "second", "x", "y", "writer"]), _params)),
            "intro": maybe(texts),
        },
    )


@st.composite
def task_tables(draw):
    fields = draw(st.lists(st.sampled_from(["text", "story", "prompt", "story_a", "story_b"]), min_size=1, max_size=3))
    fields = list(dict.fromkeys(fields))
    table = draw(
        st.fixed_dictionaries(
            {
                "name": maybe(names),
                "fields": maybe(st.just(fields), st.lists(names, max_size=3) | junk),
                "attributes": maybe(st.lists(attribute_tables(fields), min_size=1, max_size=4)),
            },
            optional={
                "display_fields": maybe(st.lists(st.sampled_from(fields), max_size=3)),
                "instructions": maybe(texts),
                "title": maybe(texts),
                "field_labels": junk,
            },
        )
    )
    return _drop_none(table)


def _drop_none(value):
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value if v is not None]
    return value


def toml_value(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "nan"
        if math.isinf(value):
            return "inf" if value > 0 else "-inf"
        return repr(value)
    if isinstance(value, str):
        return _string(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{ " + ", ".join(f"{_string(str(k))} = {toml_value(v)}" for k, v in value.items()) + " }"


def _string(value: str) -> str:
    # a JSON string is a TOML basic string, once DEL is escaped too (TOML forbids it raw)
    return json.dumps(value, ensure_ascii=False).replace("\x7f", "\\u007f")


def toml_task_file(table: dict) -> str:
    """One [[task]] with its attributes as [[task.attributes]] tables (when they are tables)."""
    lines = ["[[task]]"]
    attributes = table.get("attributes")
    for key, value in table.items():
        if key == "attributes" and isinstance(value, list) and all(isinstance(a, dict) for a in value):
            continue
        lines.append(f"{_string(key)} = {toml_value(value)}")
    if isinstance(attributes, list) and all(isinstance(a, dict) for a in attributes):
        for attribute in attributes:
            lines.append("[[task.attributes]]")
            lines += [f"{_string(k)} = {toml_value(v)}" for k, v in attribute.items()]
    return "\n".join(lines) + "\n"

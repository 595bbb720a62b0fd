"""The study's value types: what a store returns and the layers above hold (items, raters, the showings of a
session, the ratings and notes shown beside an item). Plain values, no database: a second store returns the same
(``domain/study_store.py``), and the app, the judges and the statistics name them without importing the store."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True, slots=True)  # slots: 100,000 items in the app, each without a __dict__
class Item:
    key: int
    id: str
    task: str
    system: str | None
    fields: dict[str, str]
    position: int


@dataclass(frozen=True, slots=True)
class ItemHead:
    """An item without its texts: what a session needs to order, count and find its items (``item_heads``);
    the texts are read when the item is shown (``items_of``)."""

    key: int
    id: str
    task: str
    system: str | None
    position: int


@dataclass(frozen=True)
class Rater:
    id: int
    name: str
    kind: str
    config: dict[str, Any] | None
    label: str = ""  # what reports and the app call it (``store/labels.py``): its name, or ``J1 tiny text``


# what ``change_marker`` returns: compared with ==, never looked into
ChangeMarker = tuple[object, ...]


@dataclass(frozen=True)
class RetestShowing:
    """The key of an item's second, blind showing (its first showing's key is the item's key)."""

    item_key: int


ShowingKey = int | RetestShowing


@dataclass
class OtherRating:
    """Another rater's rating of the item on screen (the reveal after a person's own)."""

    rater: str
    kind: str
    value: float | None
    sample: int
    explanation: str | None


@dataclass(frozen=True)
class Voice:
    """One rating in force of one item's question: a person's, or one reading of a judge."""

    item_key: int
    attribute: str
    rater: str  # the rater's label
    kind: str  # 'human' | 'llm' | 'adjudicator'
    presentation: str
    sample: int
    value: float | None
    raw: str | None  # a judge's reply (a person's rating has none)


@dataclass(frozen=True)
class ItemNote:
    """A note in force on an item: a flag, a skip, a comment, a reveal review (its verdict and comment)."""

    rater: str
    kind: str
    attribute: str | None
    text: str
    created_at: str

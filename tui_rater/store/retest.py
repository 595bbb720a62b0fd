"""Test-retest for a solo rater: which items come back, where, and the pairs of ratings they give.

A person rating alone has nobody to agree with but themselves: a share of the items they rated is
shown again later, blind (their first rating is not shown, nor the item marked as rated) and spaced
(never within the last N items they saw, so the second rating is not the memory of the first). The
second rating is stored with ``retest_of`` = the id of the first, and is never "in force" (see
``RATINGS_IN_FORCE``): the report, exports and the agreement pane use the first rating only.
"""

from __future__ import annotations

import heapq
import random
from collections import deque
from dataclasses import dataclass
from datetime import datetime

from tui_rater.store.study import RATINGS_IN_FORCE, Study

# a rating as _rows reads it: (id, item key, attribute, value, retest_of, created_at, retracted)
_Row = tuple[int, int, str, float | None, int | None, str, int]

RETEST_SPACING = 10  # default N: never re-shown within the last 10 items seen
RETEST_NOTE = "retest"  # the text of a skip or flag note made on an item's retest showing


def choose_retests(item_keys: list[int], share: float, rng: random.Random, retested: set[int]) -> set[int]:
    """The items to show again: ``share`` of all the task's items (at least one), drawn with ``rng``;
    items already retested count toward it and are not drawn again."""
    target = max(1, int(share * len(item_keys) + 0.5)) if item_keys else 0
    candidates = [k for k in item_keys if k not in retested]
    rng.shuffle(candidates)
    return set(candidates[: max(0, target - len(retested & set(item_keys)))])


def retest_order(
    order: list[int],
    done: set[int],
    recent: list[int],
    chosen: set[int],
    spacing: int,
    rng: random.Random,
) -> list[tuple[int, bool]]:
    """The session's showings, (item key, is a retest), from ``order`` (the task's items in the
    session's order) with a second showing of each item in ``chosen`` interleaved among the new ones.

    ``done``: items already rated (their retests are spread over the items still to rate);
    ``recent``: the items the person saw last, oldest first (the spacing counts them too).
    A retest comes ``spacing`` + 1 to 2 ``spacing`` + 1 showings after the first (the jitter keeps
    the gaps from being predictable), never while the item is among the last ``spacing`` shown, and
    at most one retest between two new items (interleaved, not a block at the end). A chosen item
    that cannot be spaced (too few showings after it) is left out.
    """
    start = next((i for i, key in enumerate(order) if key not in done), len(order))
    showings = [(key, False) for key in order[:start]]
    ahead = deque(order[start:])
    new_ahead = sum(1 for key in ahead if key not in done)
    # already rated: due somewhere among the showings to come; to be rated: due after their first showing
    due = [(rng.randrange(max(1, new_ahead)), key) for key in sorted(chosen & done)]
    heapq.heapify(due)
    jitter = {key: rng.randint(0, spacing) for key in sorted(chosen - done)}
    window = _Window(recent, spacing)
    t, after_retest = 0, False
    while ahead or due:
        ready = _earliest(due, window, t) if not (after_retest and ahead) else None
        if ready is not None:
            key, retest = ready, True
        elif ahead:
            key, retest = ahead.popleft(), False
            if key in jitter:
                heapq.heappush(due, (t + spacing + 1 + jitter[key], key))
        else:  # nothing new left: the rest come now, still spaced
            spaced = _earliest(due, window, None)
            if spaced is None:
                break  # what is left was shown too recently to come back: left out
            key, retest = spaced, True
        showings.append((key, retest))
        after_retest = retest
        window.add(key)
        t += 1
    return showings


class _Window:
    """The last ``size`` items seen, with O(1) membership."""

    def __init__(self, recent: list[int], size: int):
        self.size, self.items = size, deque(recent[-size:] if size else [])
        self.count: dict[int, int] = {}
        for key in self.items:
            self.count[key] = self.count.get(key, 0) + 1

    def add(self, key: int) -> None:
        if not self.size:
            return
        self.items.append(key)
        self.count[key] = self.count.get(key, 0) + 1
        if len(self.items) > self.size:
            old = self.items.popleft()
            self.count[old] -= 1

    def __contains__(self, key: int) -> bool:
        return self.count.get(key, 0) > 0


def _earliest(due: list[tuple[int, int]], window: _Window, now: int | None) -> int | None:
    """Take from the heap the item due first (by ``now``, if given) that is not among the last ones seen."""
    held, found = [], None
    while due:
        when, key = heapq.heappop(due)
        if key in window:
            held.append((when, key))
            continue  # at most ``spacing`` of these
        if now is None or when <= now:
            found = key
        else:
            held.append((when, key))
        break
    for entry in held:
        heapq.heappush(due, entry)
    return found


# --- what the file says -------------------------------------------------------------------------


def _rows(study: Study, task: str, rater_id: int) -> list[_Row]:
    return study._db.conn.execute(
        "SELECT r.id, r.item_key, r.attribute, r.value, r.retest_of, r.created_at, r.retracted "
        "FROM ratings r JOIN items i ON i.key = r.item_key WHERE r.rater_id = ? AND i.task = ? ORDER BY r.id",
        [rater_id, task],
    ).fetchall()


def retested_items(study: Study, task: str, rater_id: int) -> set[int]:
    """Items this rater has a retest rating of (not undone)."""
    rows = _rows(study, task, rater_id)
    return {item for _id, item, _a, _v, retest_of, _t, retracted in rows if retest_of is not None and not retracted}


def recent_items(study: Study, task: str, rater_id: int, n: int) -> list[int]:
    """The last ``n`` items this rater rated (first or retest showings), oldest first."""
    last: dict[int, int] = {}
    for rating_id, item, *_rest in _rows(study, task, rater_id):
        last[item] = rating_id
    return [item for item, _ in sorted(last.items(), key=lambda kv: kv[1])][-n:] if n else []


@dataclass(frozen=True)
class RetestPair:
    """One question of one item rated twice by the same person."""

    attribute: str
    item_key: int
    first: float
    retest: float
    first_position: int  # 0-based place of the first showing among everything this rater rated
    retest_position: int
    first_time: float  # seconds since the epoch
    retest_time: float


def _seconds(timestamp: str) -> float:
    return datetime.fromisoformat(timestamp).timestamp()


def _has_retest(study: Study, task: str, rater_id: int) -> bool:
    """Whether the rater has a retest rating of the task (``ratings_retest``: only retests are in that index; reading
    every rating of a person who retested nothing was 1.1 s of a 10k report, issue 35)."""
    found = study._db.conn.execute(
        "SELECT 1 FROM ratings r INDEXED BY ratings_retest CROSS JOIN items i ON i.key = r.item_key "
        "WHERE r.retest_of IS NOT NULL AND r.rater_id = ? AND i.task = ? LIMIT 1",
        [rater_id, task],
    ).fetchone()
    return found is not None


def retest_pairs(study: Study, task: str, rater_id: int) -> list[RetestPair]:
    """(first, retest) pairs of this rater: each retest rating in force (the latest of its item and
    question, not undone) with the rating it was linked to (not undone), in the order retested.

    Positions count showings (an item's first showing and its retest showing are two), in the order
    the rater first rated in each; retracted ratings count there too (the item was seen)."""
    if not _has_retest(study, task, rater_id):  # most people: the partial index answers, no rating is read
        return []
    rows = _rows(study, task, rater_id)
    position: dict[tuple[int, bool], int] = {}
    by_id: dict[int, _Row] = {}
    latest_retest: dict[tuple[int, str], _Row] = {}
    for row in rows:
        rating_id, item, attribute, _value, retest_of, _time, retracted = row
        position.setdefault((item, retest_of is not None), len(position))
        by_id[rating_id] = row
        if retest_of is not None and not retracted:
            latest_retest[(item, attribute)] = row
    pairs = []
    for _id, item, attribute, value, retest_of, created_at, _r in sorted(latest_retest.values()):
        first = by_id.get(retest_of) if retest_of is not None else None  # always set: only retests are here
        if first is None or first[6] or first[3] is None or value is None:
            continue  # the first rating was undone since: nothing to compare with
        pairs.append(
            RetestPair(
                attribute,
                item,
                float(first[3]),
                float(value),
                position[(item, False)],
                position[(item, True)],
                _seconds(first[5]),
                _seconds(created_at),
            )
        )
    return pairs


# (item key, attribute, rater, kind, presentation, value)
ValueInForce = tuple[int, str, str, str, str, float]


def values_in_force(study: Study, task: str, annotator: str) -> list[ValueInForce]:
    """(item key, attribute, rater, kind, presentation, value) of the annotator's first ratings and every
    judge's ratings in force with a value: what "you agree with the judge at ..." is computed from."""
    return study._db.conn.execute(
        f"""SELECT r.item_key, r.attribute, ra.label, ra.kind, r.presentation, r.value FROM {RATINGS_IN_FORCE}
            WHERE i.task = ? AND r.value IS NOT NULL AND (ra.kind = 'llm' OR ra.name = ?)
            ORDER BY r.item_key, r.attribute, ra.label, r.presentation, r.sample""",
        [task, annotator],
    ).fetchall()

"""Ratings written into a real study file as the judge worker stores them (with a presentation, a
parse status, details), for report tests that need exact control over what each judge answered."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence

from tui_rater.store.db import utc_now, write
from tui_rater.store.study import Study


def insert(
    study: Study,
    item_key: int,
    attribute: str,
    rater_id: int,
    value: float | None,
    *,
    presentation: str = "",
    sample: int = 0,
    status: str = "ok",
    details: dict | None = None,
) -> None:
    with write(study._db) as conn:
        conn.execute(
            "INSERT INTO ratings (item_key, attribute, rater_id, presentation, sample, value, parse_status, "
            "created_at, details) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                item_key,
                attribute,
                rater_id,
                presentation,
                sample,
                value,
                status,
                utc_now(),
                json.dumps(details) if details else None,
            ],
        )


def vote(values: Sequence[float | None]) -> float | None:
    """The most frequent answer, None on a tie for the most votes (written out here, not imported)."""
    counts = Counter(v for v in values if v is not None).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]

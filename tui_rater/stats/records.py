"""Report records: one number each, naming its table, task, attribute, system, evaluator(s) and statistic.

    {"table": "table1", "task": "story", "attribute": "likability", "system": "human",
     "evaluator": "humans", "evaluator_b": null, "statistic": "alpha_interval",
     "value": 0.08, "n": 200, "p": null, "note": ""}

The JSON and CSV outputs are these records, so they stay stable and self-describing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

HUMANS = "humans"  # the human raters as one evaluator (each an annotator)
ALL = "all"  # every system pooled
SCHEMA = "tui-rater.report/1"


@dataclass(frozen=True)
class Record:
    table: str
    task: str
    attribute: str
    system: str
    evaluator: str
    evaluator_b: str | None
    statistic: str
    value: float | None
    n: int
    p: float | None = None
    note: str = ""


def as_dicts(records: list[Record]) -> list[dict[str, Any]]:
    return [asdict(r) for r in records]

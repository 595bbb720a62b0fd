"""Report records: one number each, naming its table, task, attribute, system, evaluator(s) and statistic.

    {"table": "table1", "task": "story", "attribute": "likability", "system": "human",
     "evaluator": "humans", "evaluator_b": null, "statistic": "alpha_interval",
     "value": 0.08, "n": 200, "p": null, "note": "",
     "ci_low": -0.02, "ci_high": 0.17, "ci": "item bootstrap, 1000 resamples, percentile 95%"}

The JSON and CSV outputs are these records, so they stay stable and self-describing. ``ci_low`` / ``ci_high`` are
the figure's 95 % interval and ``ci`` how it was made (``stats/intervals.py``) or why a figure has none: a count, a
setting, a test statistic, an end of an interval (``stats/interval_notes.py``); ``ci`` is blank only on records
without a figure (``value`` null, the note says why).
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
    ci_low: float | None = None
    ci_high: float | None = None
    ci: str = ""


def as_dicts(records: list[Record]) -> list[dict[str, Any]]:
    return [asdict(r) for r in records]

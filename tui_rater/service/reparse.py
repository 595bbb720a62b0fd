"""Read every stored judge reply again, through the same path the judge used: its mode's ``read``
(domain/modes.py), the method the worker read it with.

Text replies are read with the variant, presentation, structure and
truncation they were produced with; a distribution pass is re-drawn from its stored
probabilities and seed; an implicit score is recomputed from its stored top tokens. With an
unchanged parser nothing changes; after a parser change, only what the parser reads differently.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from tui_rater.domain import protocols
from tui_rater.domain.modes import Reread, Row, mode_of
from tui_rater.store.study import Study


@dataclass
class ReparseResult:
    checked: int = 0
    changed: int = 0
    by_status: dict[str, int] = field(default_factory=dict)  # new status -> count, of the changed ones


def reparse(study: Study) -> ReparseResult:
    result = ReparseResult()
    changes: list[tuple[int, float | None, str, dict[str, Any]]] = []
    rows = study.judgements()
    by_job: dict[int, list[Row]] = defaultdict(list)
    for row in rows:
        by_job[row["job_id"]].append(row)
    for job_rows in by_job.values():
        for row, reading, details in _read_job(study, job_rows):
            result.checked += 1
            if (reading.value, reading.status) != (row["value"], row["parse_status"]):
                changes.append((row["id"], reading.value, reading.status, details))
                result.changed += 1
                result.by_status[reading.status] = result.by_status.get(reading.status, 0) + 1
    if changes:
        study.update_judgements(changes)
    return result


def _read_job(study: Study, rows: list[Row]) -> list[Reread]:
    config: dict[str, Any] = json.loads(rows[0]["config"] or "{}")
    if config.get("mode") is None:  # imported ratings: there is no reply to read
        return []
    mode = mode_of(config["mode"])
    variant = config.get("variant", "plain")
    out: list[Reread] = []
    by_attribute: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_attribute[row["attribute"]].append(row)
    for attribute_name, group in by_attribute.items():
        task = study.task(group[0]["task"])
        attribute = task.attribute(attribute_name)
        protocol = protocols.for_mode(task, attribute, mode.name)
        out += mode.reread(protocol, attribute, variant, config, group)
    return out

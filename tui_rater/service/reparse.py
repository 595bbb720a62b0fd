"""Read every stored judge reply again, through the same protocol path the judge used.

Text replies go through ``protocol.read_reply`` with the variant, presentation, structure and
truncation they were produced with; a distribution pass is re-drawn from its stored
probabilities and seed; an implicit score is recomputed from its stored top tokens. With an
unchanged parser nothing changes; after a parser change, only what the parser reads differently.
"""

from __future__ import annotations

import json
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

from tui_rater.domain import protocols
from tui_rater.domain.decoding import Decoding
from tui_rater.domain.protocols import EvaluationProtocol, Reading
from tui_rater.domain.questions import Attribute
from tui_rater.store.study import Study

# a stored judge rating as ``Study.judgements`` reads it
Row = dict[str, Any]
# (the rating, what it reads as now, its details to store)
Reread = tuple[Row, Reading, dict[str, Any]]


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
    mode = config.get("mode")
    if mode is None:  # imported ratings: there is no reply to read
        return []
    variant = config.get("variant", "plain")
    out: list[Reread] = []
    by_attribute: dict[str, list[Row]] = defaultdict(list)
    for row in rows:
        by_attribute[row["attribute"]].append(row)
    for attribute_name, group in by_attribute.items():
        task = study.task(group[0]["task"])
        attribute = task.attribute(attribute_name)
        protocol = protocols.for_mode(task, attribute, mode)
        if mode == "distribution":
            out += _distribution(protocol, attribute, variant, config, group)
            continue
        for row in group:
            details = json.loads(row["details"] or "{}")
            if mode == "implicit":
                if "top5" not in details:
                    continue
                reading = protocol.read_top_tokens([tuple(t) for t in details["top5"]], attribute)
            else:
                if row["raw"] is None:
                    continue
                structured = details.get("structured", mode == "constrained" and row["raw"].lstrip().startswith("{"))
                reading = protocol.read_reply(
                    row["raw"],
                    attribute,
                    variant,
                    row["presentation"],
                    structured=structured,
                    truncated=details.get("finish_reason") == "length",
                    constrained=mode == "constrained",
                )
            out.append((row, reading, {**details, **reading.details}))
    return out


def _distribution(
    protocol: EvaluationProtocol, attribute: Attribute, variant: str, config: dict[str, Any], group: list[Row]
) -> list[Reread]:
    """Re-draw a pass's samples from the probabilities and seed stored with its sample 0."""
    first = next((row for row in group if row["sample"] == 0), None)
    if first is None:
        return []
    stored = json.loads(first["details"] or "{}")
    raw = stored.get("raw")
    if raw is None and "distribution" in stored and "mass" in stored:
        # 0.1 kept the renormalised distribution and its mass: the raw probabilities are their product
        raw = {label: p * stored["mass"] for label, p in stored["distribution"].items()}
    seed = stored.get("seed")
    if seed is None and "distribution" in stored:
        seed = config.get("seed", 0) + first["item_key"]  # 0.1 seeded a pass with --seed + the item's key
    if raw is None or seed is None:
        return []  # nothing stored to recompute from (never re-read an empty reply)
    reading = protocol.read_distribution(
        raw,
        attribute,
        variant,
        first["presentation"],
        decoding=replace(Decoding.of_record(config), samples=len(group), seed=seed),
        min_mass=config.get("min_mass", 0.5),
        unscored=stored.get("unscored", ()),
        unscored_mass_at_most=stored.get("unscored_mass_at_most", 0.0),
    )
    out: list[Reread] = []
    for row in sorted(group, key=lambda r: r["sample"]):
        sample = reading.samples[row["sample"]] if row["sample"] < len(reading.samples) else None
        if sample is None:
            continue
        details = json.loads(row["details"] or "{}")
        if row["sample"] == 0:
            details.update(reading.details)
        out.append((row, sample, {**details, **sample.details}))
    return out

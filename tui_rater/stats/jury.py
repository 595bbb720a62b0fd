"""A jury's values, computed from its members' ratings in force whenever a report or the live pane reads the study.

Nothing is stored: the report's frame gains the jury's rows (one value per item and question, sample 0) right after
the ratings are read (``Report.__init__``), so every table, the verdict, PPI, convergence and the pane treat the jury
as one more judge, and a member's new ratings reach the jury on the next read. The cost is one pass over the members'
rows (bench/jury.py: 10,000 items x 3 members).

The rules (``tui-rater jury --aggregate``), over the members' one value per item as the report computes it (samples
combined by the protocol, a pair's two orders combined in the item's terms):

- ``mean`` / ``median``: of the members' values (scores only);
- ``vote``: the answer most members gave; a tie for the most votes goes to the answer of the member named first in
  ``--members`` among those tied (the chair's casting vote: deterministic, and the user chooses the order);
- ``distribution``: the members' stored scale distributions (each member's distribution pass, mapped into the item's
  terms by the protocol's ``canonical``) averaged with equal weight, per presentation, then read as the protocol reads
  one judge's distribution: its expected value for scores, its most probable answer for nominal questions (a tie in
  probability goes to the first answer in the scale's order); a pair's two orders are then combined as for one judge
  (``combine_presentations``: orders that disagree are no preference, a tie). Averaging the two orders' distributions
  first would let a position-biased panel's near-even split between A and B be decided by rounding.

Nominal questions always vote (no mean is ever taken of a nominal answer), whatever the rule. The jury's readings
(typed failures, scale mass) are its members' pooled, so a jury of judges that are not agreement-ready is marked so.
A jury has a value of an item only where every member has one: a value from two of three members would be another
jury.
"""

from __future__ import annotations

import numpy as np
import polars as pl

from tui_rater.domain.protocols import EvaluationProtocol, Level
from tui_rater.domain.tasks import Attribute, Task
from tui_rater.stats.records import ALL
from tui_rater.stats.sections.data import ReportData, _across_presentations
from tui_rater.store.juries import Jury, list_juries, member_distributions
from tui_rater.store.study import Study


def rule_of(jury: Jury, protocol: EvaluationProtocol) -> str:
    """The rule a jury applies to one question: its own, except that nominal answers are voted."""
    if protocol.level is Level.NOMINAL and jury.aggregate in ("mean", "median"):
        return "vote"
    return jury.aggregate


def plurality(stack: np.ndarray) -> np.ndarray:
    """members x items (no NaN) -> each item's most frequent answer; ties to the first-named member's answer."""
    if stack.size == 0:
        return np.full(stack.shape[1], np.nan)
    counts = (stack[:, None, :] == stack[None, :, :]).sum(axis=1)  # votes for member i's answer, per item
    first = np.argmax(counts == counts.max(axis=0), axis=0)  # argmax: the first member whose answer leads
    chosen: np.ndarray = stack[first, np.arange(stack.shape[1])]
    return chosen


def with_juries(study: Study, task: Task, frame: pl.DataFrame, readings: pl.DataFrame) -> tuple[pl.DataFrame, ...]:
    """(the frame and the readings with every jury's rows of this task added). Unchanged where there is none."""
    juries = [jury for jury in list_juries(study) if jury.applies_to(task.name)]
    if not juries or frame.is_empty():
        return frame, readings
    frames, read = [frame], [readings]
    for jury in juries:
        rows, jury_readings = _jury_rows(study, task, jury, frame, readings)
        frames.append(rows)
        read.append(jury_readings)
    return pl.concat(frames, how="vertical"), pl.concat(read, how="vertical")


def _jury_rows(
    study: Study, task: Task, jury: Jury, frame: pl.DataFrame, readings: pl.DataFrame
) -> tuple[pl.DataFrame, pl.DataFrame]:
    labels = [member.label for member in jury.members]
    members = frame.filter(pl.col("rater").is_in(labels))
    data = ReportData(study, task, frame=members, readings=readings.clear())
    keys = data.keys(ALL)
    # (the question as text, as the jury's rows below have it: the report's frame has it categorical)
    last = members.group_by("item_key", pl.col("attribute").cast(pl.Utf8)).agg(pl.col("rating_id").max())
    parts = []
    for attribute in task.attributes:
        values = jury_values(study, task, jury, data, attribute)
        present = ~np.isnan(values)
        if not present.any():
            continue
        parts.append(
            pl.DataFrame(
                {
                    "item_key": keys[present],
                    "system": data.systems_of(keys[present]).tolist(),
                    "attribute": attribute.name,
                    "rater": jury.label,
                    "kind": "llm",
                    "presentation": "",
                    "sample": 0,
                    "value": values[present],
                },
                schema_overrides={"item_key": pl.Int64, "sample": pl.Int64, "value": pl.Float64},
            )
        )
    if not parts:
        return frame.clear(), readings.clear()
    rows = pl.concat(parts)
    # the jury's value of an item arrived with its last member rating (the convergence curves' order)
    rows = rows.join(last, on=["item_key", "attribute"], how="left").select(frame.columns).cast(frame.schema)
    # the jury's readings are its members' (relabelled): the one agreement-ready rule (``domain/readiness.py``) then
    # marks a jury built from readings that failed or put little probability on the scale, as it marks a judge
    jury_readings = readings.filter(pl.col("rater").is_in(labels)).with_columns(rater=pl.lit(jury.label))
    return rows, jury_readings.select(readings.columns).cast(readings.schema)


def jury_values(study: Study, task: Task, jury: Jury, data: ReportData, attribute: Attribute) -> np.ndarray:
    """The jury's value of each item of ``data.keys(ALL)`` (NaN where a member has none)."""
    protocol = data.protocol(attribute)
    rule = rule_of(jury, protocol)
    labels = [member.label for member in jury.members]
    width = len(data.keys(ALL))
    if rule == "distribution":
        return _from_distributions(study, task, labels, data, attribute, protocol)
    stack = np.vstack([data.item_values(label, attribute, ALL) for label in labels]) if labels else np.empty((0, 0))
    complete = ~np.isnan(stack).any(axis=0) if width else np.zeros(0, dtype=bool)
    out = np.full(width, np.nan)
    if not complete.any():
        return out
    full = stack[:, complete]
    if rule == "mean":
        out[complete] = full.mean(axis=0)
    elif rule == "median":
        out[complete] = np.median(full, axis=0)
    else:
        out[complete] = plurality(full)
    return out


def _from_distributions(
    study: Study, task: Task, labels: list[str], data: ReportData, attribute: Attribute, protocol: EvaluationProtocol
) -> np.ndarray:
    keys = data.keys(ALL)
    width = len(keys)
    out = np.full(width, np.nan)
    rows = member_distributions(study, task.name, attribute.name, labels)
    if not rows or not width:
        return out
    passes = pl.DataFrame(
        rows,
        schema={"member": pl.Utf8, "item_key": pl.Int64, "presentation": pl.Utf8, "p": pl.Utf8, "variant": pl.Utf8},
        orient="row",
    ).filter(pl.col("item_key").is_in(keys.tolist()))
    # option label -> value in the item's terms, per (variant, presentation): a pair's swapped order and V3's
    # "which is worse" are turned round by the protocol's own canonical(), as for one judge's reading
    mapping: dict[tuple[str, str], dict[str, float]] = {}
    for variant, presentation in passes.select("variant", "presentation").unique().iter_rows():
        options = protocol.options(attribute, variant)
        mapping[(variant, presentation)] = (
            {
                label: protocol.canonical(float(value), attribute, variant, presentation)[0]
                for label, value in zip(options.labels, options.values)
            }
            if options is not None
            else {}
        )
    points = np.array(sorted({v for found in mapping.values() for v in found.values()}), dtype=float)
    if not len(points):
        return out
    index = {float(v): i for i, v in enumerate(points.tolist())}
    shown = sorted(mapping_presentations := {p for _, p in mapping})
    summed = np.zeros((len(shown), len(labels), width, len(points)))
    counted = np.zeros((len(shown), len(labels), width), dtype=int)
    member_of = {label: i for i, label in enumerate(labels)}
    for (variant, presentation), group in passes.group_by("variant", "presentation"):
        to_value = mapping[(str(variant), str(presentation))]
        at = shown.index(str(presentation))
        # the stored distributions decoded column-wise (polars), not one json.loads per pass: bench/jury.py
        struct = pl.Struct([pl.Field(label, pl.Float64) for label in to_value])
        decoded = group["p"].str.json_decode(struct) if to_value else None
        member = np.array([member_of[m] for m in group["member"].to_list()], dtype=int)
        position = np.searchsorted(keys, group["item_key"].to_numpy())
        np.add.at(counted[at], (member, position), 1)
        if decoded is None:
            continue
        for label, value in to_value.items():
            probability = decoded.struct.field(label).fill_null(0.0).to_numpy()
            np.add.at(summed[at], (member, position, np.full(len(member), index[value])), probability)
    # every member read every presentation the protocol shows (a pair in both orders)
    complete = np.all(counted > 0, axis=(0, 1)) & (len(mapping_presentations) >= len(protocol.presentations(attribute)))
    if not complete.any():
        return out
    per_presentation = []
    for at in range(len(shown)):
        # per presentation: the members' distributions (each its passes' mean) averaged with equal weight
        jury = (summed[at][:, complete, :] / counted[at][:, complete, None]).mean(axis=0)
        if protocol.level is Level.NOMINAL:
            read = points[np.argmax(jury, axis=1)]  # a tie in probability: the first answer in the scale's order
        else:
            read = jury @ points / jury.sum(axis=1)
        per_presentation.append(read)
    # the presentations combined as for one judge: a pair's orders that disagree are no preference (a tie)
    out[complete] = _across_presentations(protocol, per_presentation, int(complete.sum()))
    return out
    per_member = summed[:, complete, :] / counted[:, complete, None]
    averaged = per_member.mean(axis=0)  # items x points: the jury's distribution in the item's terms
    if protocol.level is Level.NOMINAL:
        out[complete] = points[np.argmax(averaged, axis=1)]
    else:
        out[complete] = averaged @ points / averaged.sum(axis=1)
    return out

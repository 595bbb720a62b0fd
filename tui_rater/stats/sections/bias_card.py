"""Section ``bias``: each judge's bias card (issue 32 item 4; the figures and their intervals: ``stats/bias.py``).

Per question and judge, each with its 95 % item-bootstrap interval, in the ``bias`` table:

- ``leniency``: mean(judge - people) on the items both scored (scale points; a pair's: preferences, +1 / -1 / 0);
- ``length_slope``: scale points the judge gives per SD of the text's length beyond the people's own score
  (a pair's: its preference per SD of the length difference, first minus second text);
- ``self_preference``: where the user declares the systems of the judge's model family (``report --family``).

A pairwise question's position bias and order consistency stay in the ``position`` table (their records, now
with intervals, are those of ``sections/pairwise.py``); the card prints them with the rest. The length of a
text is its number of words (whitespace-separated): of the compared fields for a pair, else of the task's
last shown field (the text being rated).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import numpy as np

from tui_rater.domain.tasks import Attribute
from tui_rater.stats import bias
from tui_rater.stats.agreement import Stat
from tui_rater.stats.records import ALL, HUMANS
from tui_rater.stats.sections import cells, pairwise
from tui_rater.stats.sections.base import Found, Layout, Section, Table, Who
from tui_rater.stats.sections.data import ReportData
from tui_rater.store.progress_reads import field_text_batches

FIGURES = {  # statistic -> (table, how the card names it)
    "leniency": ("bias", "leniency"),
    "length_slope": ("bias", "length slope"),
    "self_preference": ("bias", "self-preference"),
    "first_position_rate": ("position", "first shown wins"),
    "order_consistency": ("position", "order consistency"),
}


def as_stat(estimate: bias.Estimate, note: str = "") -> Stat:
    """An estimate as the records carry it: its interval, or why it has none, in ``ci``."""
    interval = estimate.interval
    extra = {"ci_low": interval.low, "ci_high": interval.high, "ci": interval.method}
    return Stat(estimate.value, estimate.n, "; ".join(x for x in (estimate.note, note) if x), None, extra)


_CHUNK = 20_000  # items read at a time for their word counts


def word_counts(data: ReportData, fields: Sequence[str]) -> dict[str, np.ndarray]:
    """Per field, the number of words of each item's text (``data.keys(ALL)`` order; NaN where it has none)."""
    cache: dict[str, np.ndarray] = data.extra.setdefault("bias_word_counts", {})
    wanted = [f for f in fields if f not in cache]
    if wanted:
        keys = data.keys(ALL)
        # each field's texts a batch at a time, each dropped once counted: a million items' texts and objects are
        # never held at once (issue 35); Python's split, the count the paper's length bias is measured in
        for field in wanted:
            counts = np.full(len(keys), np.nan)
            for batch in field_text_batches(data.study, data.task.name, field, _CHUNK):
                batch_keys = np.array([key for key, _ in batch], dtype=np.int64)
                words = np.array([np.nan if text is None else float(len(text.split())) for _, text in batch])
                # the batch's items among the rated ones (keys sorted, as the batch)
                at = np.minimum(np.searchsorted(keys, batch_keys), max(len(keys) - 1, 0))
                rated = keys[at] == batch_keys if len(keys) else np.zeros(len(batch), dtype=bool)
                counts[at[rated]] = words[rated]
            cache[field] = counts
    return {f: cache[f] for f in fields}


def _family_sign(data: ReportData, family: tuple[str, ...]) -> np.ndarray:
    """Per pair "X vs Y": +1 where only X is of the family, -1 where only Y is, NaN otherwise."""
    out = np.full(len(data.keys(ALL)), np.nan)
    for position, key in enumerate(data.keys(ALL).tolist()):
        named = pairwise.compared_systems(data.system_of.get(int(key)) or "")
        if named is not None and (named[0] in family) != (named[1] in family):
            out[position] = 1.0 if named[0] in family else -1.0
    return out


def bias_card(data: ReportData, attributes: Sequence[Attribute]) -> None:
    for attribute in attributes:
        compared = data.protocol(attribute).compared_fields(attribute)
        if compared:
            people = pairwise.human_difference(data, attribute)
            words = word_counts(data, compared)
            length = words[compared[0]] - words[compared[1]]
            measure = f"words of {compared[0]} minus words of {compared[1]}"
        else:
            people = data.item_values(HUMANS, attribute, ALL) if data.humans else np.full(len(data.keys(ALL)), np.nan)
            field = data.task.display_fields[-1]
            length = word_counts(data, (field,))[field]
            measure = f"words of {field}"
        for judge in data.judges:
            values = data.item_values(judge, attribute, ALL)
            if not np.any(~np.isnan(values)):
                continue
            judged = pairwise.preference(values) if compared else values
            add = _adder(data, attribute.name, judge)
            add("leniency", bias.mean_difference(judged, people), "judge minus people")
            add("length_slope", bias.length_slope(judged, people, length), f"length: {measure}")
            family = data.settings.family(judge)
            if family:
                named = f"family (--family): {', '.join(family)}"
                if compared:
                    sign = _family_sign(data, family)
                    found = bias.mean_difference(judged * sign, people * sign)
                    add("self_preference", found, f"preference for the family's text beyond the people's; {named}")
                else:
                    in_family = np.isin(data.systems_of(data.keys(ALL)), list(family))
                    found = bias.group_difference(judged, people, in_family)
                    add("self_preference", found, f"leniency on the family's systems minus on others; {named}")


def _adder(data: ReportData, attribute: str, judge: str) -> Callable[[str, bias.Estimate, str], None]:
    def add(statistic: str, estimate: bias.Estimate, note: str) -> None:
        data.add("bias", attribute, data.overall, judge, statistic, as_stat(estimate, note))

    return add


def _lay_out(found: Found, who: Who) -> Table | None:
    fields = ("attribute", "system", "evaluator")
    keys = list(dict.fromkeys([*found.keys("bias", *fields), *found.keys("position", *fields)]))
    rows = []
    for attribute, system, judge in keys:
        for statistic, (table, name) in FIGURES.items():
            record = found.get(table, attribute, system, judge, None, statistic)
            if record is not None:
                shown = cells.interval(record) or ("n/a" if record.value is None else "none")
                rows.append([attribute, who(judge, attribute), name, cells.value(record), shown, str(record.n)])
    return (CARD.title, ["attribute", "judge", "bias", "value", "95% CI", "n"], rows) if rows else None


CARD = Layout(
    "bias",
    "Bias cards: leniency = judge minus people; length slope = points per SD of length beyond the people's "
    "score; self-preference (report --family); position: first-shown wins, same verdict in both orders "
    "(95% item bootstrap)",
    ("bias", "position"),
    _lay_out,
)
SECTION = Section("bias", bias_card, ("bias",), (CARD,))

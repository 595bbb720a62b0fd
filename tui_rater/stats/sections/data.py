"""The data every report section reads: one task's ratings as matrices and per-item scores.

Evaluators: ``humans`` (the human raters as one group, each an annotator) and each LLM judge
configuration (its samples, of each presentation of an item, as its annotators, Chiang & Lee §3.2).
An evaluator's score of an item combines its annotators with the question's protocol
(``protocol.aggregate``): the mean of a Likert or 0-100 question, a vote over nominal answers (so
pairwise V4's five samples are voted, Chen et al. Figure 1).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import polars as pl

from tui_rater.domain import protocols
from tui_rater.domain.protocols import EvaluationProtocol
from tui_rater.domain.tasks import Attribute, Task
from tui_rater.stats import agreement as ag
from tui_rater.stats.item_combine import _across_presentations as _across_presentations
from tui_rater.stats.item_combine import _aggregate_columns as _aggregate_columns
from tui_rater.stats.item_combine import _is_mean as _is_mean
from tui_rater.stats.item_combine import combined_values as combined_values
from tui_rater.stats.rater_fit import MODEL_REFERENCE, consensus_of_people
from tui_rater.stats.records import ALL, HUMANS, Record
from tui_rater.stats.sections.settings import ReportSettings
from tui_rater.store import rating_columns
from tui_rater.store.adjudication import ADJUDICATED, adjudicated_values
from tui_rater.store.study import Study

# the string columns categorical: a few distinct strings each, 4 bytes a row, not a 16-byte view (issue 35: a 100k
# study's 1.6M rows); compared with strings as strings (``pl.col("kind") == "human"``), and cast to text where their
# order or their text is used. A frame given to ``ReportData`` may have them as text: the same numbers
_FRAME_SCHEMA = {
    "item_key": pl.Int64,
    "system": pl.Categorical,
    "attribute": pl.Categorical,
    "rater": pl.Categorical,
    "kind": pl.Categorical,
    "presentation": pl.Categorical,
    "sample": pl.Int64,
    "value": pl.Float64,
    "rating_id": pl.Int64,  # the order ratings arrived in (convergence)
}
_READINGS_SCHEMA = {
    "rater": pl.Utf8,
    "attribute": pl.Utf8,
    "status": pl.Utf8,
    "read": pl.Boolean,  # the reading has a value (ok, or imported with a value)
    "mass": pl.Float64,  # the probability the pass put on the answers it was asked for (domain/readiness.py)
    "mass_on": pl.Utf8,  # ... where: "scale", "constrained" (before the grammar), "yes_no" (the implicit score)
}


def load_all(study: Study, task: str, excluded: Sequence[str] = ()) -> tuple[pl.DataFrame, pl.DataFrame]:
    """(the ratings in force with a value, one row per (item, attribute, rater, presentation, sample), of the
    people and the judges (an adjudicator's decision is never a rater's rating: see ``ReportSettings.reference``);
    every judge reading in force, failed or not, with its parse status and, for a distribution pass,
    its scale mass) -- read as columns (``store/rating_columns.py``: one query, no Python object per rating; the
    rows ``readings.task_rating_batches`` gives, in its order). ``excluded``: annotators left out
    (``--exclude-annotator``)."""
    # the rows with a value and the judges' rows straight from the coded rows in force: the whole frame of the
    # ratings in force, as strings, never held beside them (issue 35: a third of a 100k study's peak memory)
    rated, judged = rating_columns.ratings_and_readings(study, task, excluded)
    frame = rated.select(list(_FRAME_SCHEMA)).cast(_FRAME_SCHEMA)  # type: ignore[arg-type]
    readings = judged.select(
        pl.col("rater"),
        pl.col("attribute"),
        pl.col("parse_status").alias("status"),
        pl.col("value").is_not_null().alias("read"),
        pl.col("mass"),
        pl.col("mass_on"),
    ).cast(_READINGS_SCHEMA)  # type: ignore[arg-type]
    return frame.rechunk(), readings.rechunk()


def load(study: Study, task: str) -> pl.DataFrame:
    """The ratings in force with a value, one row per (item, attribute, rater, presentation, sample)."""
    return load_all(study, task)[0]


def load_readings(study: Study, task: str) -> pl.DataFrame:
    """Every judge reading in force, failed or not: its parse status and, for a distribution pass, its scale mass."""
    return load_all(study, task)[1]


def reference_system(systems: list[str]) -> str | None:
    """What the others are compared with: human-written, or the benign titles, else the first."""
    for name in ("human", "benign"):
        for system in systems:
            if system.lower() == name:
                return system
    return systems[0] if systems else None


class ReportData:
    """One task's ratings, indexed for the sections; the sections append their records here."""

    def __init__(
        self,
        study: Study,
        task: Task,
        settings: ReportSettings | None = None,
        *,
        frame: pl.DataFrame | None = None,
        readings: pl.DataFrame | None = None,
    ) -> None:
        self.study, self.task = study, task
        self.settings = settings or ReportSettings()  # SPA's τ, the alt-test's ε, the humans' reference
        if frame is None or readings is None:
            loaded_frame, loaded_readings = load_all(study, task.name, self.settings.excluded_annotators)
            frame = loaded_frame if frame is None else frame
            readings = loaded_readings if readings is None else readings
        self.frame, self.readings = frame, readings
        self.records: list[Record] = []
        # (each filter over the two columns it reads: a filter of the whole frame copies every column of its rows)
        who = self.frame.select("rater", "kind")
        self.judges: list[str] = sorted(who.filter(pl.col("kind") == "llm")["rater"].unique().to_list())
        self.humans: list[str] = sorted(who.filter(pl.col("kind") == "human")["rater"].unique().to_list())
        # every item's key, sorted, and its system's index in ``systems`` alongside: columns, not a Python int,
        # str and dict entry per item (``item_keys`` / ``system_of`` build those when a section asks for them)
        # (each item once, then its system as text: not the text of every row's system)
        by_key = self.frame.select("item_key", "system").unique(subset="item_key").sort("item_key")
        by_key = by_key.with_columns(pl.col("system").cast(pl.Utf8))
        self.systems: list[str] = sorted(by_key["system"].unique().to_list())
        self._key_array: np.ndarray = by_key["item_key"].to_numpy().astype(np.int64, copy=False)
        code = by_key["system"].replace_strict(self.systems, list(range(len(self.systems))), return_dtype=pl.Int64)
        self._system_code: np.ndarray = code.to_numpy().astype(np.int64, copy=False)
        self._arrays_cache: dict[tuple[str, str], tuple[np.ndarray, ...]] = {}
        self._keys_cache: dict[str, np.ndarray] = {}
        self._values_cache: dict[tuple[str, str, str], np.ndarray] = {}
        # "all systems" where there are several; the one system otherwise
        self.overall = ALL if len(self.systems) > 1 else (self.systems[0] if self.systems else ALL)
        self.extra: dict[str, Any] = {}  # what one section computes for another (judge readiness)
        # the humans' score of an item: their ratings combined, or (``report --reference adjudicated``) the
        # adjudicator's decided value where there is one; never a rater of its own in any statistic
        reference = self.settings.reference
        self.adjudicated = adjudicated_values(study, task.name) if reference == ADJUDICATED else {}
        if reference == MODEL_REFERENCE:  # the consensus the reliability model of the people implies
            self.adjudicated = self._model_reference()

    def _model_reference(self) -> dict[str, dict[int, float]]:
        """Question -> item key -> the consensus of the people's model, for every question the model fits."""
        keys = self.keys(ALL)
        found = {}
        for attribute in self.task.attributes:
            protocol = self.protocol(attribute)
            if "reliability" not in protocol.report_sections or not self.humans or not len(keys):
                continue
            columns = np.vstack([self.rater_values(name, attribute, ALL) for name in self.humans])
            found[attribute.name] = consensus_of_people(
                self.humans, columns, protocol.level, attribute.scale, keys.tolist()
            )
        return found

    # --- who and what --------------------------------------------------------------------

    def protocol(self, attribute: Attribute) -> EvaluationProtocol:
        return protocols.of(attribute)

    def evaluators(self) -> list[str]:
        return ([HUMANS] if self.humans else []) + self.judges

    def systems_and_pooled(self) -> list[str]:
        """Each system, then ``all`` (every system pooled) where there are several."""
        return self.systems + ([ALL] if len(self.systems) > 1 else [])

    @functools.cached_property
    def item_keys(self) -> list[int]:
        """Every item's key, sorted."""
        keys: list[int] = self._key_array.tolist()
        return keys

    @functools.cached_property
    def system_of(self) -> dict[int, str]:
        """Item key -> its system (``systems_of`` for many keys at once)."""
        return dict(zip(self._key_array.tolist(), self.systems_of(self._key_array).tolist()))

    def systems_of(self, keys: np.ndarray) -> np.ndarray:
        """The system of each of these item keys (keys of the task's items), as an object array."""
        position = np.searchsorted(self._key_array, np.asarray(keys, dtype=np.int64))
        names = np.array([*self.systems, ""], dtype=object)  # never [] for no systems: an object array
        return names[self._system_code[position]] if len(position) else np.array([], dtype=object)

    def keys(self, system: str) -> np.ndarray:
        """The item keys of one system (``all``: every item), sorted."""
        if system not in self._keys_cache:
            code = self.systems.index(system) if system in self.systems else -1
            keys = self._key_array if system == ALL else self._key_array[self._system_code == code]
            self._keys_cache[system] = np.array(keys, dtype=np.int64)
        return self._keys_cache[system]

    # --- matrices ------------------------------------------------------------------------

    def _arrays(self, evaluator: str, attribute: str) -> tuple[np.ndarray, ...]:
        """(annotator index, item key, value, annotator names, annotator presentations), cached."""
        key = (evaluator, attribute)
        if key not in self._arrays_cache:
            # the columns read here, then the rows: not a copy of every column of the rows
            needed = self.frame.select("kind", "attribute", "rater", "presentation", "sample", "item_key", "value")
            if evaluator == HUMANS:
                rows = needed.filter((pl.col("kind") == "human") & (pl.col("attribute") == attribute))
                who = rows["rater"].cast(pl.Utf8)  # sorted and ranked as text below
            else:
                rows = needed.filter((pl.col("rater") == evaluator) & (pl.col("attribute") == attribute))
                # a judge's annotators are its samples of each presentation of the item
                who = rows["presentation"].cast(pl.Utf8) + "/" + rows["sample"].cast(pl.Utf8)
            if len(who):
                # np.unique's (names sorted, each row's index among them) in polars: no Python str per rating;
                # UTF-8's byte order, polars' sort, is the code points' order, Python's
                names = who.unique().sort().to_numpy().astype(object, copy=False)
                index = (who.rank("dense") - 1).cast(pl.Int64).to_numpy()
            else:
                names, index = np.array([], dtype=object), np.array([], dtype=int)
            shown = np.array([name.split("/")[0] if evaluator != HUMANS else "" for name in names], dtype=object)
            self._arrays_cache[key] = (index, rows["item_key"].to_numpy(), rows["value"].to_numpy(), names, shown)
        return self._arrays_cache[key]

    def _full_matrix(self, evaluator: str, attribute: str, system: str) -> tuple[np.ndarray, np.ndarray]:
        """(annotators x items with NaN where unrated, each annotator's presentation); every annotator kept."""
        index, item_keys, values, names, shown = self._arrays(evaluator, attribute)
        keys = self.keys(system)
        m = np.full((len(names), len(keys)), np.nan)
        if len(keys) and len(item_keys):
            position = np.clip(np.searchsorted(keys, item_keys), 0, len(keys) - 1)
            inside = keys[position] == item_keys
            m[index[inside], position[inside]] = values[inside]
        return m, shown

    def matrix(self, evaluator: str, attribute: str, system: str) -> np.ndarray:
        """Annotators x items (every item of the system, NaN where unrated)."""
        m, _ = self._full_matrix(evaluator, attribute, system)
        # annotators with no rating of this system's items carry no information
        return m[~np.all(np.isnan(m), axis=1)] if m.size else m

    def ratings(self, evaluator: str, attribute: str, system: str) -> np.ndarray:
        """Every rating (each annotator's) of the system's items, in the matrix's order: Table 1's mean and std are
        over these (an array, not a Python float each: issue 35)."""
        m = self.matrix(evaluator, attribute, system)
        ratings: np.ndarray = m[~np.isnan(m)]
        return ratings

    # --- per-item scores -----------------------------------------------------------------

    def item_values(self, evaluator: str, attribute: Attribute, system: str) -> np.ndarray:
        """The evaluator's score of each item of the system (NaN where it has none), by the protocol.

        A judge's samples are combined within each presentation first; a pair judged in both orders
        then needs both, and orders that disagree are no preference (see ``_across_presentations``).
        """
        key = (evaluator, attribute.name, system)
        if key not in self._values_cache:
            m, shown = self._full_matrix(evaluator, attribute.name, system)
            values = combined_values(self.protocol(attribute), m, shown)
            decided = self.adjudicated.get(attribute.name) if evaluator == HUMANS else None
            if decided:
                values = values.copy()
                for position, item_key in enumerate(self.keys(system).tolist()):
                    if item_key in decided:
                        values[position] = decided[item_key]
            self._values_cache[key] = values
        return self._values_cache[key]

    def presentation_values(self, evaluator: str, attribute: Attribute, system: str) -> dict[str, np.ndarray]:
        """Per presentation of the items ('' as stored; a pair's 'original' / 'swapped' order), the
        evaluator's score of each item: its samples of that presentation combined by the protocol."""
        protocol = self.protocol(attribute)
        m, shown = self._full_matrix(evaluator, attribute.name, system)
        return {
            presentation: _aggregate_columns(protocol, m[shown == presentation])
            for presentation in sorted(set(shown.tolist()))
        }

    def rater_values(self, rater: str, attribute: Attribute, system: str) -> np.ndarray:
        """One rater's score of each item: a judge's combined samples, or one human's own rating."""
        if rater in self.judges:
            return self.item_values(rater, attribute, system)
        index, item_keys, values, names, _ = self._arrays(HUMANS, attribute.name)
        keys = self.keys(system)
        out = np.full(len(keys), np.nan)
        hit = np.nonzero(names == rater)[0]
        if len(hit) and len(keys):
            mine = index == hit[0]
            position = np.clip(np.searchsorted(keys, item_keys[mine]), 0, len(keys) - 1)
            inside = keys[position] == item_keys[mine]
            out[position[inside]] = values[mine][inside]
        return out

    def item_means(self, evaluator: str, attribute: str, system: str) -> np.ndarray:
        """Per-item scores by attribute name (the benchmark's and older callers' spelling)."""
        return self.item_values(evaluator, self.task.attribute(attribute), system)

    # --- records -------------------------------------------------------------------------

    def add(
        self,
        table: str,
        attribute: str,
        system: str,
        evaluator: str,
        statistic: str,
        stat: ag.Stat | None = None,
        *,
        value: float | None = None,
        n: int = 0,
        evaluator_b: str | None = None,
        p: float | None = None,
        note: str = "",
    ) -> None:
        ci_low = ci_high = None
        ci = ""
        if stat is not None:
            value, n, p = stat.value, stat.n, stat.p
            note = "; ".join(part for part in (stat.note, note) if part)
            ci_low, ci_high, ci = stat.extra.get("ci_low"), stat.extra.get("ci_high"), stat.extra.get("ci", "")
        self.records.append(
            Record(
                table,
                self.task.name,
                attribute,
                system,
                evaluator,
                evaluator_b,
                statistic,
                None if value is None or not math.isfinite(value) else float(value),
                int(n),
                p,
                note,
                _finite(ci_low),
                _finite(ci_high),
                ci,
            )
        )


def _finite(value: float | None) -> float | None:
    return None if value is None or not math.isfinite(value) else float(value)

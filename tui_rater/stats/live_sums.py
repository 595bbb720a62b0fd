"""The live pane's running sums (issue 35 item 1): the figures it shows that are sums over items -- how many items
a judge and the humans both rated, how many of them they agree on, the sum of the judge's differences (the bias),
the confusion counts, each evaluator's rating distribution and verdict shares, the number of ratings -- kept per
(question, judge) and updated from the items rated since the last look, in time proportional to those items.

Each item's contribution is computed by the report's own per-item code (``item_combine.combined_values``, what
``ReportData.item_values`` uses: the protocol's aggregate, its presentations) on the item's ratings in force, read as
columns (``live_columns``), so a revised rating, a changed mind or an undo on an item is its old contribution
subtracted and its new one added. A build reads every item's ratings, an update the changed items' (each by its
index). numpy only: the app's thread that keeps the sums imports no scipy, polars or report section (issue 35 item 1:
they were 1-2 s before its first numbers). What is not a sum (α, τ, κ, the alt-test, the confidence sequences, the
gaps) is the slow computation's (``stats/live.py``), merged here with the sums (``merge``) and marked stale until it
catches up.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from tui_rater.domain import protocols
from tui_rater.domain.protocols import Level
from tui_rater.domain.tasks import Attribute, Task
from tui_rater.stats import live_columns
from tui_rater.stats.item_combine import combined_values
from tui_rater.stats.pane_types import NONE, AttributePane, JudgeRow, PaneData
from tui_rater.stats.records import HUMANS
from tui_rater.stats.stat import Stat, to_labels
from tui_rater.store import pane_columns, pane_reads
from tui_rater.store.study import Study


@dataclass
class JudgeSums:
    """One judge against the humans on one question: items both rated, items they agree on (rounded to the scale
    for scores), the sum of (judge − humans) over those items, and the confusion counts (humans × judge)."""

    n: int = 0
    agree: int = 0
    difference: float = 0.0
    confusion: np.ndarray | None = None


@dataclass
class QuestionSums:
    judges: dict[str, JudgeSums] = field(default_factory=dict)
    distributions: dict[str, list[int]] = field(default_factory=dict)  # evaluator -> count per label


@dataclass
class PaneSums:
    """A copy of the sums at one look (handed to the UI thread; the running state stays with its thread)."""

    n_ratings: int
    humans: bool
    judges: list[str]
    questions: dict[str, QuestionSums]
    looked_at: int  # the newest rating id read
    undone: int = 0  # the task's undone ratings seen
    changes: int = 0  # the newest rating change seen (a rating rewritten in place or voided: schema 15)

    @property
    def seen(self) -> tuple[int, int, int]:
        """What the sums have read: compared with what the full computation read (``service/live.py``)."""
        return self.looked_at, self.undone, self.changes


class _Question:
    """One question's per-item values and per-item contributions, as arrays over the task's items."""

    def __init__(self, attribute: Attribute, protocol_level: Level, size: int) -> None:
        self.attribute = attribute
        self.nominal = protocol_level is Level.NOMINAL
        self.points = list(attribute.scale.points)  # the distributions' order (the pane's)
        self.labels = sorted(self.points)  # the confusion's (``agreement.confusion``)
        self.size = size
        self.values: dict[str, np.ndarray] = {}  # evaluator -> its score of each item (NaN: none)
        self.counts: dict[str, np.ndarray] = {}  # evaluator -> items x labels: what its distribution counts
        self.rows: dict[str, np.ndarray] = {}  # evaluator -> its ratings with a value of each item
        self.sums: dict[str, JudgeSums] = {}
        self.totals: dict[str, np.ndarray] = {}  # evaluator -> count per label over every item

    def arrays(self, evaluator: str) -> None:
        if evaluator not in self.values:
            self.values[evaluator] = np.full(self.size, np.nan)
            self.counts[evaluator] = np.zeros((self.size, len(self.points)), dtype=np.int64)
            self.rows[evaluator] = np.zeros(self.size, dtype=np.int64)
            self.totals[evaluator] = np.zeros(len(self.points), dtype=np.int64)

    def judge_sums(self, judge: str) -> JudgeSums:
        if judge not in self.sums:
            k = len(self.labels)
            self.sums[judge] = JudgeSums(confusion=np.zeros((k, k), dtype=np.int64) if k else None)
        return self.sums[judge]

    def add(self, positions: np.ndarray, sign: int) -> None:
        """Add (+1) or subtract (−1) the contributions of the items at ``positions`` to every sum."""
        for evaluator in self.values:
            self.totals[evaluator] += sign * self.counts[evaluator][positions].sum(axis=0)
        human = self.values.get(HUMANS)
        if human is None:
            return
        for judge, llm in self.values.items():
            if judge == HUMANS:
                continue
            h, j = human[positions], llm[positions]
            both = ~np.isnan(h) & ~np.isnan(j)
            h, j = h[both], j[both]
            sums = self.judge_sums(judge)
            sums.n += sign * int(both.sum())
            # the pane's figures (``stats/live.py:_row``): exact agreement on the scale's points for scores, on the
            # answers themselves for nominal ones; the bias is the mean of (judge − humans)
            if self.labels:
                hl, jl = to_labels(h, self.labels), to_labels(j, self.labels)
            else:
                hl, jl = h, j
            sums.agree += sign * int(np.sum((h == j) if self.nominal else (hl == jl)))
            sums.difference += sign * float(np.sum(j - h))
            if sums.confusion is not None and h.size:
                rows, columns = np.searchsorted(self.labels, hl), np.searchsorted(self.labels, jl)
                np.add.at(sums.confusion, (rows, columns), sign)

    def fill(
        self, evaluators: list[str], matrices: dict[str, live_columns.Matrix], positions: np.ndarray | None = None
    ) -> None:
        """The values and counts of the items at ``positions`` (None: every item, a build) from each evaluator's
        matrix over those items; an evaluator with no rating of them left has none there."""
        protocol = protocols.of(self.attribute)
        at = np.arange(self.size) if positions is None else positions
        for evaluator in evaluators:
            self.arrays(evaluator)
        for evaluator in self.values:
            m, shown = matrices.get(evaluator, (np.full((0, len(at)), np.nan), np.array([], dtype=object)))
            self.counts[evaluator][at] = 0
            self.put(evaluator, at, combined_values(protocol, m, shown), m)

    def put(self, evaluator: str, positions: np.ndarray, values: np.ndarray, m: np.ndarray) -> None:
        """One evaluator's values of the items at ``positions`` and what its ratings count (``m``: its annotators x
        those items)."""
        self.values[evaluator][positions] = values
        self.rows[evaluator][positions] = np.sum(~np.isnan(m), axis=0) if m.size else 0
        if not self.points:
            return
        if self.nominal:  # each item's verdict (the annotators' vote), as the pane counts it
            counted = values[None, :]
        elif m.size:  # every rating, rounded to the scale's points
            counted = np.full(m.shape, np.nan)
            present = ~np.isnan(m)
            # each distinct rating rounded once (a study's ratings take a few values; the rounding is per value)
            distinct, index = np.unique(m[present], return_inverse=True)
            counted[present] = to_labels(distinct, self.labels)[index]
        else:
            return
        for j, label in enumerate(self.points):
            self.counts[evaluator][positions, j] = np.sum(counted == label, axis=0)


class LiveSums:
    """The running sums of one task's pane, for one thread: ``build`` reads the study once (vectorised), ``update``
    the items rated since the last look. ``rows_read``: the rating rows the last build or update read."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.position: dict[int, int] = {}
        self.questions: dict[str, _Question] = {}
        self.looked_at = 0
        self.retracted: set[int] = set()
        self.changes_seen = 0  # the newest rating change read (``store/ratings.py``: reparsed, voided)
        self.rows_read = 0
        self.built = False

    def build(self, study: Study) -> None:
        """Every sum from the study as it is now: its ratings read once as arrays of numbers, each question's
        evaluators as matrices over all the task's items (``live_columns``), the values by the report's code."""
        self.looked_at = pane_reads.newest_rating_id(study)
        self.changes_seen = pane_reads.newest_change(study)
        self.retracted = {rating_id for rating_id, _ in pane_reads.retracted_ratings(study, self.task.name)}
        keys = pane_columns.task_item_keys(study, self.task.name)
        self.position = {key: i for i, key in enumerate(keys.tolist())}
        names = [attribute.name for attribute in self.task.attributes]
        evaluators, matrices = live_columns.read_matrices(study, self.task.name, names, keys)
        self.rows_read = sum(int(np.sum(~np.isnan(m))) for question in matrices for m, _ in question.values())
        self.questions = {}
        for attribute, found in zip(self.task.attributes, matrices):
            question = _Question(attribute, protocols.of(attribute).level, len(keys))
            question.fill(evaluators, found)
            question.add(np.arange(len(keys)), 1)
            self.questions[attribute.name] = question
        self.built = True

    def update(self, study: Study) -> bool:
        """Read what changed since the last look and update the sums; False when nothing did. An item new to the
        task (imported since) needs a new build, done here."""
        newest = pane_reads.newest_rating_id(study)
        newest_change = pane_reads.newest_change(study)
        retracted = pane_reads.retracted_ratings(study, self.task.name)
        undone = [key for rating_id, key in retracted if rating_id not in self.retracted]
        if newest == self.looked_at and not undone and newest_change == self.changes_seen:
            self.rows_read = 0
            return False
        # ratings changed with no new id: rewritten by reparse, deleted as a voided batch job's (their items)
        changes = pane_reads.changes_since(study, self.task.name, self.changes_seen)
        after = self.looked_at
        voided = [rating_id for _, rating_id, _, kind in changes if kind == "voided"]
        if voided:  # ratings have no AUTOINCREMENT: a voided rating's id may be the next rating's, read it again
            after = min(after, min(voided) - 1)
        changed = set(pane_reads.items_rated_since(study, self.task.name, after)) | set(undone)
        changed |= {key for _, _, key, _ in changes}
        if any(key not in self.position for key in changed):
            self.build(study)
            return True
        self.looked_at, self.retracted = newest, {rating_id for rating_id, _ in retracted}
        self.changes_seen = max([newest_change, *(change for change, *_ in changes)])
        positions = np.array(sorted(self.position[key] for key in changed), dtype=np.int64)
        # these items' ratings in force as matrices over them, as the build reads every item's: numpy only (the
        # report's frame of them imported polars and the report's sections into the app at the first update)
        keys = np.array(sorted(changed), dtype=np.int64)
        names = [attribute.name for attribute in self.task.attributes]
        evaluators, matrices = live_columns.read_matrices(study, self.task.name, names, keys, only=True)
        self.rows_read = sum(int(np.sum(~np.isnan(m))) for question in matrices for m, _ in question.values())
        for question, found in zip(self.questions.values(), matrices):
            question.add(positions, -1)
            question.fill(evaluators, found, positions)
            question.add(positions, 1)
        return True

    def snapshot(self) -> PaneSums:
        """The sums now, copied."""
        evaluators = {e for q in self.questions.values() for e, rows in q.rows.items() if rows.any()}
        questions = {}
        for name, q in self.questions.items():
            found = QuestionSums()
            for judge, sums in q.sums.items():
                confusion = None if sums.confusion is None else sums.confusion.copy()
                found.judges[judge] = replace(sums, confusion=confusion)
            for evaluator in [HUMANS, *sorted(e for e in q.values if e != HUMANS)]:
                if evaluator in evaluators and evaluator in q.values:
                    found.distributions[evaluator] = [int(c) for c in q.totals[evaluator]]
            questions[name] = found
        n_ratings = sum(int(rows.sum()) for q in self.questions.values() for rows in q.rows.values())
        judges = sorted(e for e in evaluators if e != HUMANS)
        return PaneSums(
            n_ratings, HUMANS in evaluators, judges, questions, self.looked_at, len(self.retracted), self.changes_seen
        )


def _exact(sums: JudgeSums) -> Stat:
    # ``agreement.exact_agreement``'s figure and its note where no item was rated by both
    return Stat(100.0 * (sums.agree / sums.n), sums.n) if sums.n else Stat(None, 0, "no item rated by both")


def _bias(sums: JudgeSums) -> Stat:
    # ``agreement.bias``'s mean; its t interval needs every difference, so it is the slow computation's
    if sums.n < 2:
        return Stat(None, sums.n, "fewer than 2 items rated by both")
    return Stat(sums.difference / sums.n, sums.n)


def _skeleton(task: Task, attribute: Attribute, humans: bool) -> AttributePane:
    """A question's pane before the slow computation has delivered (the sums only)."""
    protocol = protocols.of(attribute)
    nominal = protocol.level is Level.NOMINAL
    labels = attribute.scale.points
    names = [protocol.format_value(attribute, v) for v in labels] if nominal else [f"{v:g}" for v in labels]
    return AttributePane(attribute.name, labels, protocol.level.value, names, humans=humans)


def merge(
    slow: PaneData | None, sums: PaneSums, task: Task, queue: dict[str, int], failures: list[dict[str, Any]]
) -> PaneData:
    """The pane's numbers: the sums as of now over the slow computation's figures (α, τ, κ, the verdicts, the
    system means, the gaps, the readings), which may be older. Where the slow computation read the same ratings,
    the result is the slow computation's, to the figure (a test checks the text shown)."""
    slow_panes = {pane.attribute: pane for pane in slow.attributes} if slow is not None else {}
    panes = []
    for attribute in task.attributes:
        before = slow_panes.get(attribute.name)
        pane = _skeleton(task, attribute, sums.humans) if before is None else replace(before, humans=sums.humans)
        found = sums.questions.get(attribute.name, QuestionSums())
        rows = {row.judge: row for row in pane.rows}
        for judge in sums.judges:
            row = rows.get(judge)
            if row is None:  # a judge the slow computation has not seen yet
                row = JudgeRow(judge, NONE, None if pane.nominal else NONE, NONE, None if pane.nominal else NONE)
            judged = found.judges.get(judge)
            if sums.humans and judged is not None:
                row = replace(row, exact=_exact(judged))
                if pane.nominal:
                    verdicts = found.distributions.get(judge, [])
                    total = sum(verdicts)
                    row.shares = {n: c / total for n, c in zip(pane.label_names, verdicts)} if total else {}
                else:
                    row.bias = _bias(judged)
            elif sums.humans:  # rated no item of this question: as the full computation says
                row = replace(row, exact=Stat(None, 0, "no item rated by both"))
                if not pane.nominal:
                    row.bias = Stat(None, 0, "fewer than 2 items rated by both")
            rows[judge] = row
        pane.rows = [rows[judge] for judge in sorted(rows)]
        distributions = dict(found.distributions)
        for evaluator, counts in pane.distributions.items():  # a jury: its members' values, the slow figures
            distributions.setdefault(evaluator, counts)
        order = [HUMANS, *sorted(e for e in distributions if e != HUMANS)]
        pane.distributions = {e: distributions[e] for e in order if e in distributions}
        compared = sorted((row for row in pane.rows if row.n), key=lambda row: not row.ready)
        if sums.humans and compared and pane.labels:
            judge = compared[0].judge
            judged = found.judges.get(judge)
            if judged is not None and judged.confusion is not None:
                pane.confusion, pane.confusion_judge = judged.confusion.copy(), judge
            if judge != (before.confusion_judge if before is not None else None):
                pane.gaps = []  # the slow computation's were another judge's
        panes.append(pane)
    return PaneData(task.name, sums.n_ratings, panes, queue, failures)

"""Judge readings: how many of a judge's answers could be read, why the others failed, how sure it was.

Per judge and question: its readings (every stored sample, failed or not), the share read as a
value, the count of each typed failure (``refusal``, ``no_number``, ``out_of_range``, ``ambiguous``,
``truncated``, ``low_mass``, ``no_answer_token``), and for distribution-mode passes the mean and
least next-token probability on the scale's options ("mass").

A judge is **agreement-ready** on a question by the one rule of ``domain/readiness.py`` -- at most 10% typed
failures, at most 10% of its passes with less than half of the next-token probability on the answers it was asked
for (the scale's options; a constrained reading's *before* the grammar forced one; "yes" / "no" for the implicit
score) -- the rule ``judge --check`` and a finished run's summary apply too, in the same words.

A judge that is not agreement-ready is marked beside every agreement number it appears in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import partial

import polars as pl

from tui_rater.domain.protocols import FAILURES
from tui_rater.domain.readiness import NOT_READY as NOT_READY  # the words, for the tables' readers
from tui_rater.domain.readiness import ON_SCALE, READY_MIN_MASS, WHERE, Evidence
from tui_rater.domain.readiness import readiness as rule
from tui_rater.domain.tasks import Attribute
from tui_rater.stats.records import ALL, Record
from tui_rater.stats.sections import cells
from tui_rater.stats.sections.base import Found, Layout, Runs, Section, Table, Who, not_ready_note
from tui_rater.stats.sections.data import ReportData
from tui_rater.store import readings as stored


@dataclass(frozen=True)
class JudgeReadings:
    judge: str
    attribute: str
    readings: int
    ok: int
    failures: dict[str, int] = field(default_factory=dict)  # typed failure -> count (zeros included)
    passes: int = 0  # distribution passes with a stored mass
    mass_mean: float | None = None
    mass_min: float | None = None
    low_mass_passes: int = 0  # passes with less than READY_MIN_MASS on the answers
    where: str = ON_SCALE  # where the passes' probability is (domain/readiness.py's WHERE)
    ready: bool = True
    reason: str = ""
    low_mass: bool = False  # not ready because of the probability on the answers (domain/readiness.py)

    @property
    def ok_share(self) -> float | None:
        return self.ok / self.readings if self.readings else None


def judge_readings(readings: pl.DataFrame) -> dict[tuple[str, str], JudgeReadings]:
    """(judge, attribute) -> its readings, from the ratings in force (``load_readings``)."""
    out = {}
    for (judge, attribute), rows in readings.group_by(["rater", "attribute"], maintain_order=True):
        statuses = rows["status"].to_list()
        read = rows["read"].to_list()
        failures = {status: 0 for status in FAILURES}
        for status, has_value in zip(statuses, read):
            if not has_value:  # a typed failure (or a status an older version stored without a value)
                failures[status] = failures.get(status, 0) + 1
        masses = rows["mass"].drop_nulls()
        low = int((masses < READY_MIN_MASS).sum()) if len(masses) else 0
        found = JudgeReadings(
            str(judge),
            str(attribute),
            len(statuses),
            sum(read),
            failures,
            len(masses),
            float(masses.mean()) if len(masses) else None,  # type: ignore[arg-type]
            float(masses.min()) if len(masses) else None,  # type: ignore[arg-type]
            low,
            WHERE.get(next(iter(rows["mass_on"].drop_nulls()), "scale"), ON_SCALE),
        )
        said = rule(evidence(found))
        out[(found.judge, found.attribute)] = JudgeReadings(
            **{**found.__dict__, "ready": said.ready, "reason": said.reason, "low_mass": said.low_mass}
        )
    return out


def evidence(r: JudgeReadings) -> Evidence:
    """A judge's readings of a question as the agreement-ready rule weighs them."""
    failed = {kind: n for kind, n in r.failures.items() if n}
    return Evidence(r.readings, failed, r.passes, r.low_mass_passes, r.mass_mean, r.where)


def readiness(data: ReportData) -> dict[tuple[str, str], JudgeReadings]:
    if "readings" not in data.extra:
        data.extra["readings"] = judge_readings(data.readings)
    found: dict[tuple[str, str], JudgeReadings] = data.extra["readings"]
    return found


def readings(data: ReportData, attributes: Sequence[Attribute]) -> None:
    names = {a.name for a in attributes}
    for (judge, attribute), r in readiness(data).items():
        if attribute not in names:
            continue
        add = partial(data.add, "readings", attribute, ALL, judge)
        add("readings", value=float(r.readings), n=r.readings)
        add("ok_share", value=r.ok_share, n=r.readings)
        for status, count in r.failures.items():
            add(f"failures_{status}", value=float(count), n=r.readings)
        if r.passes:
            add("mass_mean", value=r.mass_mean, n=r.passes, note=_where(r))
            add("mass_min", value=r.mass_min, n=r.passes, note=f"{r.low_mass_passes} passes below {READY_MIN_MASS:g}")
        add("agreement_ready", value=1.0 if r.ready else 0.0, n=r.readings, note=r.reason)
        jumped = implicit_jumps(data).get((judge, attribute))
        if jumped is not None:
            count, least_yes = jumped
            add(
                "implicit_no_outside_top5",
                value=float(count),
                n=r.readings,
                note=implicit_warning(count, r.readings, least_yes),
            )


def _where(r: JudgeReadings) -> str:
    return "next-token probability " + ("on the scale's options" if r.where == ON_SCALE else r.where)


def implicit_warning(count: int, readings: int, least_yes: float) -> str:
    return (
        f'⚠ {count} of {readings} Implicit Scores are 100 only because no "No" token was among the top 5 '
        f"(p(yes) as low as {least_yes:.2f}): the paper's formula max(p(yes), 1 − p(no)) reads the missing "
        '"No" as p(no) = 0 (Chen et al. 2023, Eq. 1); kept as the paper defines it'
    )


def implicit_jumps(data: ReportData) -> dict[tuple[str, str], tuple[int, float]]:
    """(judge, question) -> (how many of its Implicit Scores had no "No" among the top-5 tokens, the least
    p(yes) among them): each of those reads 100 whatever p(yes) was (``ImplicitScore.read_top_tokens``)."""
    if "implicit_jumps" not in data.extra:
        rows = stored.implicit_jumps(data.study, data.task.name)
        data.extra["implicit_jumps"] = {
            (str(judge), str(attribute)): (int(count), float(least)) for judge, attribute, count, least in rows
        }
    found: dict[tuple[str, str], tuple[int, float]] = data.extra["implicit_jumps"]
    return found


def mark_not_ready(data: ReportData) -> None:
    """Every agreement number of a judge that is not agreement-ready says so in its note."""
    not_ready = {key: r for key, r in readiness(data).items() if not r.ready}
    if not not_ready:
        return
    questions = set(data.task.attribute_names)
    marked = []
    for record in data.records:
        hit = None
        if record.table not in ("readings", "judges"):  # the legend names judges; it holds no agreement
            for who in (record.evaluator, record.evaluator_b):
                hit = hit or _lookup(not_ready, who, record.attribute, questions)
        if hit is None:
            marked.append(record)
            continue
        note = not_ready_note(hit.reason)
        marked.append(Record(**{**record.__dict__, "note": "; ".join(x for x in (record.note, note) if x)}))
    data.records = marked


def _lookup(
    not_ready: dict[tuple[str, str], JudgeReadings], judge: str | None, attribute: str, questions: set[str]
) -> JudgeReadings | None:
    """The judge's readings on the record's question; a record over several questions (``*``, an SPA
    comparison) is marked when the judge is not ready on any of them."""
    if judge is None:
        return None
    if attribute in questions:
        return not_ready.get((judge, attribute))
    return next((r for (j, _), r in not_ready.items() if j == judge), None)


def _lay_out(found: Found, who: Who) -> Table | None:
    keys = list(dict.fromkeys((r.attribute, r.evaluator) for r in found.of("readings")))
    if not keys:
        return None
    rows = []
    for attribute, judge in keys:
        mine = {r.statistic: r for r in found.of("readings") if (r.attribute, r.evaluator) == (attribute, judge)}
        failures = ", ".join(
            f"{name.removeprefix('failures_')} {r.value:g}"
            for name, r in mine.items()
            if name.startswith("failures_") and r.value
        )
        ready = mine.get("agreement_ready")
        verdict = "yes" if ready is not None and ready.value == 1 else not_ready_note(ready.note) if ready else "n/a"
        if "implicit_no_outside_top5" in mine:  # the paper's formula, shown as a warning
            verdict += f"; {mine['implicit_no_outside_top5'].note}"
        rows.append(
            [
                judge,
                attribute,
                str(mine["readings"].n) if "readings" in mine else "0",
                cells.value(mine.get("ok_share")),
                failures or "none",
                cells.value(mine.get("mass_mean"), 3) if "mass_mean" in mine else "",
                cells.value(mine.get("mass_min"), 3) if "mass_min" in mine else "",
                verdict,
            ]
        )
    header = [
        "judge",
        "attribute",
        "readings",
        "ok share",
        "typed failures",
        "mass mean",
        "mass min",
        "agreement-ready",
    ]
    return TABLE.title, header, rows


TABLE = Layout("readings", "Judge readings — typed failures, scale mass, agreement-ready", ("readings",), _lay_out)
# every question, whatever its protocol: how its judges' answers could be read
SECTION = Section("readings", readings, ("readings",), (TABLE,), Runs.JUDGED)

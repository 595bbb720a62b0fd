"""The papers' tables from a study's ratings, for the CLI (and the app's export)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import replace
from typing import TypeVar

from tui_rater.domain.errors import UserError
from tui_rater.service.planning import active_sample
from tui_rater.stats.neyman import StratifiedDesign
from tui_rater.stats.provenance import Shaped
from tui_rater.stats.report import Record, Report, ReportSettings, VerdictSettings
from tui_rater.store.readings import excluded_ratings
from tui_rater.store.study import Study

T = TypeVar("T")


def build_reports(
    study: Study, task_names: list[str] | None, settings: ReportSettings | None = None
) -> dict[str, list[Record]]:
    """Records per task: the given tasks (even without ratings), else every task that has ratings.

    ``settings``: SPA's τ, the alt-test's ε, and the humans' score of an item (``reference``: their ratings
    combined, or the adjudicator's decided value where there is one)."""
    reports = {report.task.name: report.records for report in _built(study, task_names, settings or ReportSettings())}
    return _found(study, reports, task_names)


def built_reports(
    study: Study, task_names: list[str] | None, settings: ReportSettings | None = None
) -> dict[str, Report]:
    """Each task's built report: its records and the data they came from (the HTML report draws from both)."""
    reports = {report.task.name: report for report in _built(study, task_names, settings or ReportSettings())}
    return _found(study, reports, task_names)


def what_shaped(study: Study, task_names: list[str], settings: ReportSettings | None = None) -> dict[str, Shaped]:
    """Per task: the humans' reference and what was left out of its statistics (gold items, ratings under another
    sample), and the settings given -- what a report file must say itself (``stats/provenance.py``)."""
    from tui_rater.store.adjudication import ADJUDICATED, adjudicated_values
    from tui_rater.store.team import gold_left_out

    settings = settings or ReportSettings()
    gold = gold_left_out(study)
    out = {}
    for name in task_names:
        adjudicated = None
        if settings.reference == ADJUDICATED:
            adjudicated = sum(len(items) for items in adjudicated_values(study, name).values())
        items, ratings = gold.get(name, (0, 0))
        out[name] = Shaped(
            name,
            settings.reference,
            adjudicated,
            items,
            ratings,
            study.stray_human_samples(name),
            settings.verdict.epsilon_source,
            settings.spa.tau,
        )
    return out


def _built(study: Study, task_names: list[str] | None, settings: ReportSettings) -> Iterator[Report]:
    tasks = [study.task(name) for name in task_names or study.item_task_names()]  # an unknown task: one sentence
    check_families(study, settings.families, [task.name for task in tasks])
    for task in tasks:
        verdict = _with_inclusion(study, task.name, settings.verdict, settings.excluded_annotators)
        report = Report(study, task, replace(settings, verdict=verdict))
        report.build()
        if report.records or task_names:
            yield report


def check_families(study: Study, families: tuple[tuple[str, tuple[str, ...]], ...], task_names: list[str]) -> None:
    """``report --family JUDGE=SYSTEM,...``: a judge or a system the study does not have is one sentence (a typo
    would otherwise leave the bias card without its self-preference, silently)."""
    if not families:
        return
    judges = [rater.name for rater in study.raters("llm")]
    from tui_rater.stats.sections.pairwise import compared_systems

    systems: set[str] = set()
    for name in task_names:
        for head in study.item_heads(name):
            systems.update((head.system,) if head.system else ())
            systems.update(compared_systems(head.system or "") or ())  # a pair "X vs Y" names both
    for judge, named in families:
        if judge not in judges:
            raise UserError(
                f"--family {judge!r}: no judge of that name in {study.path} (its judges: {', '.join(judges) or 'none'})"
            )
        unknown = [system for system in named if system not in systems]
        if unknown:
            raise UserError(f"--family {judge}: no item of the system {unknown[0]!r} in the tasks reported")


def _with_inclusion(
    study: Study, task_name: str, verdict: VerdictSettings, excluded: tuple[str, ...] = ()
) -> VerdictSettings:
    """The inclusion probabilities of the items people rated in an uncertain order (active sampling).

    Each annotator with an uncertain order drew their own sample; an item is in the human-rated set
    when any of them drew it: π = 1 - Π(1 - π_a) over those annotators (independent draws).
    """
    if verdict.inclusion is not None or verdict.design is not None:
        return verdict
    verdict = _with_design(study, task_name, verdict)
    samples = [
        sample
        for rater in study.raters("human")
        if rater.name not in excluded  # their ratings are not read: their draw is no part of the sample
        and (sample := active_sample(study, task_name, rater.name)) is not None
        and sample.rated
    ]
    if not samples:
        return verdict
    if verdict.design is not None:
        raise UserError(
            f"people rated task {task_name!r} both in an uncertain order (active sampling) and from its stratified "
            "draw (assign --allocate): no estimate can weight the two draws together"
        )
    missing: dict[int, float] = {}
    drawn: set[int] = set()
    for sample in samples:
        for key, pi, in_sample in zip(sample.item_keys, sample.probability, sample.drawn):
            missing[key] = missing.get(key, 1.0) * (1.0 - float(pi))
            if in_sample:
                drawn.add(key)
    # only the drawn items (the rated prefixes) are the sample; an item rated out of order is not
    pi_of = {key: 1.0 - left for key, left in missing.items() if key in drawn}
    inclusion = {attribute.name: pi_of for attribute in study.task(task_name).attributes}
    return replace(verdict, inclusion=inclusion)


def _with_design(study: Study, task_name: str, verdict: VerdictSettings) -> VerdictSettings:
    """The task's stored stratified draw, when there is one (``store/allocations.py``, checked as it is read)."""
    from tui_rater.store.allocations import load_allocation

    found = load_allocation(study, task_name)
    if found is None:
        return verdict
    design = StratifiedDesign(
        str(found.settings["by"]), str(found.settings["judge"]), found.stratum_of, found.pilot, found.drawn
    )
    return replace(verdict, design=design)


def _found(study: Study, reports: dict[str, T], task_names: list[str] | None) -> dict[str, T]:
    if not reports:
        raise UserError(f"{study.path} holds no ratings yet")
    return reports


def excluded_annotators(study: Study, names: list[str], task_names: list[str] | None) -> dict[str, dict[str, int]]:
    """Check the annotators a lead leaves out (``report --exclude-annotator``) and count what is left out:
    task -> name -> their ratings in force (gold items aside). A name that is no annotator here is one sentence."""
    people = [rater.name for rater in study.raters("human")]
    for name in names:
        if name not in people:
            raise UserError(
                f"--exclude-annotator {name!r}: no annotator of that name in {study.path} "
                f"(its annotators: {', '.join(people) or 'none yet'})"
            )
    tasks = [study.task(name).name for name in task_names or study.item_task_names()]
    found = {task: {n: count for n, count in excluded_ratings(study, task, names).items() if count} for task in tasks}
    return {task: counts for task, counts in found.items() if counts}

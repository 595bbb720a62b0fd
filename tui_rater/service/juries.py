"""Juries (``tui-rater jury``): make, list and forget a derived judge built from other judges' stored ratings.

A jury is its definition only (``store/juries.py``); its values are computed from the members' ratings in force on
every read of the study (``stats/jury.py``), so a member's new ratings reach it without rebuilding anything.
"""

from __future__ import annotations

from dataclasses import dataclass

from tui_rater.domain.display import safe_text
from tui_rater.domain.errors import UserError
from tui_rater.store.judges import Footprint, Judge, find_judge
from tui_rater.store.juries import (
    AGGREGATES,
    JURY_PREFIX,
    MAX_JURY_NAME,
    Jury,
    create_jury,
    find_jury,
    forget_jury,
    forget_member_and_juries,
    has_distributions,
    is_person,
    juries_of_member,
    jury_ids,
    list_juries,
)
from tui_rater.store.study import Study


@dataclass(frozen=True)
class JuryOptions:
    name: str
    members: tuple[str, ...]  # labels, J-numbers or rater names, in the order that breaks a vote's ties
    aggregate: str
    task: str | None = None


def make_jury(study: Study, options: JuryOptions) -> Jury:
    """Check the options and store the jury; one sentence for each thing a user can get wrong."""
    name = options.name.strip()
    if not name:
        raise UserError("a jury needs a non-empty name")
    if len(name) > MAX_JURY_NAME or any(not ch.isprintable() for ch in name):
        shown = name if len(name) <= 2 * MAX_JURY_NAME else name[: 2 * MAX_JURY_NAME] + "…"  # one line, not 5,000
        raise UserError(
            f"jury name {safe_text(shown, inline=True)!r} ({len(name)} characters) must be at most {MAX_JURY_NAME} "
            "printable characters"
        )
    if name.startswith(JURY_PREFIX):
        raise UserError(f"give the jury's name without the {JURY_PREFIX!r} prefix")
    if options.aggregate not in AGGREGATES:
        raise UserError(f"--aggregate {options.aggregate!r}: choose one of {', '.join(AGGREGATES)}")
    if options.task is not None:
        study.task(options.task)  # an unknown task: one sentence
    wanted = [m.strip() for m in options.members if m.strip()]
    if len(wanted) < 2:
        raise UserError("a jury needs at least 2 members (--members A,B[,C ...])")
    juries = jury_ids(study)
    members: list[tuple[int, str, str]] = []
    for member in wanted:
        if is_person(study, member):
            raise UserError(f"{member!r} is an annotator, not a judge; a jury's members are judges")
        judge = find_judge(study, member)
        if judge.id in juries:
            raise UserError(f"{judge.label!r} is a jury; a jury's members are judges, not other juries")
        if any(judge.id == rid for rid, _, _ in members):
            raise UserError(f"{judge.label!r} is named twice in --members")
        if options.aggregate == "distribution" and not has_distributions(study, judge.id, options.task):
            raise UserError(
                f"--aggregate distribution: judge {judge.label!r} has no stored scale distributions"
                f"{' of ' + options.task if options.task else ''} (it was not run with --mode distribution); "
                "use --aggregate mean, median or vote"
            )
        members.append((judge.id, judge.name, judge.label))
    return create_jury(study, name, members, options.aggregate, options.task)


def juries(study: Study) -> list[Jury]:
    return list_juries(study)


def forget(study: Study, name: str) -> Jury:
    jury = find_jury(study, name)
    forget_jury(study, jury)
    return jury


def dependents(study: Study, member_name: str) -> list[Jury]:
    """The juries a judge is a member of (``judges --forget`` refuses, or with --force forgets them too)."""
    return juries_of_member(study, member_name)


def check_forget_member(study: Study, judge: Judge, force: bool) -> list[Jury]:
    """The juries that go with a judge being forgotten: refused in one sentence unless ``force``."""
    found = juries_of_member(study, judge.name)
    if found and not force:
        names = ", ".join(repr(j.label) for j in found)
        raise UserError(
            f"judge {judge.label!r} is a member of jury {names}: forget the jury first (tui-rater jury --forget "
            "NAME), or add --force to forget it with the judge"
        )
    return found


def forget_member(study: Study, judge: Judge, found: list[Jury]) -> Footprint:
    """Forget the judge and the juries made from it, in one transaction."""
    footprint: Footprint = forget_member_and_juries(study, judge, found)
    return footprint

"""Section ``jury``: does each jury (``tui-rater jury``) do better than its best member?

Per jury and question, with the alt-test's humans (at least 3 on the same items): the jury against each member by a
one-sided paired t-test on the alt-test's per-item advantage scores (``stats/jury_members.py`` says why this test),
each p also Holm-adjusted across the members; and one row against the best member by ω (ties: ρ), whose p is the
largest of the members' p-values -- the jury is called better than its best member only when it beats every
member (the intersection-union test), so choosing the best member after the fact does not flatter the jury.
The jury's own rows in every other table (its agreement, verdict, PPI, convergence) come from its values being one
more judge's (``stats/jury.py``).
"""

from __future__ import annotations

from collections.abc import Sequence

from tui_rater.domain.tasks import Attribute
from tui_rater.stats.jury_members import SIGNIFICANCE, Ratings, compare
from tui_rater.stats.records import ALL
from tui_rater.stats.sections import cells
from tui_rater.stats.sections.base import Found, Layout, Runs, Section, Table, Who
from tui_rater.stats.sections.data import ReportData
from tui_rater.stats.sections.verdict import judge_ratings, level_of, verdict_humans
from tui_rater.store.juries import list_juries


def jury(data: ReportData, attributes: Sequence[Attribute]) -> None:
    juries = [j for j in list_juries(data.study) if j.applies_to(data.task.name)]
    for found in juries:
        for attribute in attributes:
            add = data.add
            jury_ratings = judge_ratings(data, found.label, attribute) if found.label in data.judges else {}
            if not jury_ratings:
                # said, not skipped, where a member rated the question: a jury the user made that no table names
                # reads as a jury that was lost
                silent = [m.label for m in found.members if not _member_ratings(data, m.label, attribute)]
                if len(silent) < len(found.members):
                    why = f"no values from {', '.join(silent)}" if silent else "its members rated different items"
                    note = f"no item has a value from every member ({why})"
                    add("jury", attribute.name, ALL, found.label, "better_than_best_member", note=note)
                continue
            humans, reason = verdict_humans(data, attribute)
            if reason:
                add("jury", attribute.name, ALL, found.label, "better_than_best_member", value=None, note=reason)
                continue
            members = {m.label: judge_ratings(data, m.label, attribute) for m in found.members}
            rows = compare(humans, jury_ratings, members, level_of(data, attribute))
            for row in rows:
                holm = "" if row.holm is None else f"Holm-adjusted p = {row.holm:.3g}"
                add(
                    "jury", attribute.name, ALL, found.label, "advantage_difference", value=row.difference,
                    n=row.items, evaluator_b=row.member, p=row.p, note="; ".join(x for x in (holm, row.note) if x),
                )  # fmt: skip
            best = _best_member(data, attribute.name, [m.label for m in found.members])
            tested = [row.p for row in rows]
            if best is None or any(p is None for p in tested):
                why = "no verdict for its members" if best is None else "a member could not be tested"
                add("jury", attribute.name, ALL, found.label, "better_than_best_member", evaluator_b=best, note=why)
                continue
            p_all = max(p for p in tested if p is not None)
            better = p_all < SIGNIFICANCE
            note = (
                f"best member by ω: {best}; p is the largest of the members' one-sided p-values (the jury must beat "
                "every member, so the choice of the best after the fact does not flatter it)"
            )
            n = next(row.items for row in rows if row.member == best)
            add(
                "jury", attribute.name, ALL, found.label, "better_than_best_member", value=float(better), n=n,
                evaluator_b=best, p=p_all, note=note,
            )  # fmt: skip


def _member_ratings(data: ReportData, label: str, attribute: Attribute) -> Ratings:
    return judge_ratings(data, label, attribute) if label in data.judges else {}


def _best_member(data: ReportData, attribute: str, members: list[str]) -> str | None:
    """The member with the highest ω, then ρ, then the first named; None when no member has a verdict."""

    def figure(member: str, statistic: str) -> float | None:
        found = [
            r.value
            for r in data.records
            if r.table == "verdict" and r.attribute == attribute and r.system == ALL
            and r.evaluator == member and r.statistic == statistic
        ]  # fmt: skip
        return found[0] if found else None

    scored = [(m, figure(m, "winning_rate"), figure(m, "advantage_probability")) for m in members]
    ranked = [(m, w, r if r is not None else -1.0) for m, w, r in scored if w is not None]
    if not ranked:
        return None
    return max(ranked, key=lambda mwr: (mwr[1], mwr[2], -members.index(mwr[0])))[0]


def _lay_out(found: Found, who: Who) -> Table | None:
    rows = []
    for r in found.of("jury"):
        if r.statistic == "advantage_difference":
            against = f"member {who(r.evaluator_b, r.attribute)}"
            shown = f"{cells.value(r, 3)}{cells.stars(r.p)}"
        else:
            against = f"best member {who(r.evaluator_b, r.attribute)}" if r.evaluator_b else "best member"
            shown = "n/a" if r.value is None else ("yes" if r.value else "no")
        p = "" if r.p is None else f"{r.p:.3g}"
        rows.append([r.attribute, who(r.evaluator, r.attribute), against, shown, p, str(r.n), r.note])
    columns = ["attribute", "jury", "against", "Δ advantage / better", "p (one-sided)", "items", "note"]
    return (TABLE.title, columns, rows) if rows else None


TABLE = Layout(
    "jury",
    "Juries against their members — paired t-test on the alt-test's per-item advantage (jury minus member)",
    ("jury",),
    _lay_out,
)
SECTION = Section("jury", jury, ("jury",), (TABLE,), Runs.JUDGED)

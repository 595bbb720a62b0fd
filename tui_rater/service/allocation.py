"""``assign --allocate M``: draw the next M items people rate, in the numbers of a Neyman allocation across strata
(by system, or by the judge's confidence), and ``annotate --order allocated`` serves them.

The pilot -- the items people rated before the draw, a uniform random sample of the items the judge rated (the
assumption ``sample-size`` makes too) -- gives each stratum's SD of the PPI++ rectifier y − λ·f; the allocation
puts the M new ratings where they narrow the stratified interval most (``stats/neyman.py``). Within each stratum the
new items are drawn uniformly at random from those people have not rated.

Why the estimate stays unbiased: given how many pilot items fell in a stratum, they are a uniform sample of it (a
uniform sample of the whole is one within each stratum); the new draw is uniform over the stratum's other items; so
the stratum's rated items -- pilot and new together -- are a uniform random sample of the stratum, whatever their
number, and the stratified estimator Σ_h (N_h / N) θ̂_h, each θ̂_h on the stratum's own items, is unbiased (Cochran
1977, §5.3). Two things break it, and are refused: a pilot that was not uniform (people rated in an uncertain order:
the report weights those by 1/π instead, and the two draws cannot be combined), and strata recomputed after the draw
(the judge's confidence terciles move as it rates more: the labels are stored with the draw, never recomputed).
The allocation itself comes from the pilot's own ratings, so the stratum sizes depend a little on the values seen;
the bias this leaves is of order 1/n, and the slow-tier simulation measures the coverage it leaves
(docs/VERDICT.md §3).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from tui_rater.domain.errors import UserError
from tui_rater.domain.protocols import derive_seed
from tui_rater.domain.tasks import Attribute
from tui_rater.service.reports import _with_inclusion
from tui_rater.stats import neyman
from tui_rater.stats import ppi_recal as pr
from tui_rater.stats.records import ALL, HUMANS
from tui_rater.stats.report import ReportSettings
from tui_rater.stats.sections.calibration import STRATA, questions, strata
from tui_rater.stats.sections.data import ReportData
from tui_rater.store.allocations import load_allocation, save_allocation
from tui_rater.store.study import Study
from tui_rater.store.team import load_team_plan

ALLOCATED = "allocated"


@dataclass(frozen=True)
class AllocateOptions:
    task: str
    new: int  # M: the new human-rated items to draw
    by: str = "system"  # "system" or "confidence"
    judge: str | None = None  # default: the task's only judge
    attribute: str | None = None  # the question whose pilot SDs allocate (default: the task's only one with a mean)
    seed: int = 0
    dry_run: bool = False


@dataclass(frozen=True)
class Drawn:
    strata: list[neyman.StratumAllocation]
    drawn: list[int]  # item keys, in the order people see them
    stratum_of: dict[int, str]
    pilot: set[int]
    settings: dict[str, object]
    lam: float  # the stratified PPI++'s λ the SDs were measured with


def _pick(options: list[str], given: str | None, what: str, flag: str, task: str) -> str:
    """The one named with ``flag``, or the only one there is. ``what``: e.g. "judges with ratings"."""
    if given is not None:
        if given not in options:
            raise UserError(f"{flag} {given!r}: not one of task {task!r}'s {what} ({', '.join(options) or 'none'})")
        return given
    if len(options) != 1:
        listed = f" ({', '.join(options)})" if options else ""
        raise UserError(f"task {task!r} has {len(options) or 'no'} {what}{listed}: name one with {flag}")
    return options[0]


def _refuse_other_draws(study: Study, task: str, data: ReportData, attribute: Attribute) -> None:
    if load_allocation(study, task) is not None:
        raise UserError(
            f"task {task!r} already has a stratified draw: people rate it with `annotate --order allocated`; a "
            "second draw would mix two allocations"
        )
    if data.settings.verdict.inclusion is not None:
        raise UserError(
            "the people rated items drawn by active sampling (--order uncertain), which are no uniform pilot: a "
            "stratified draw cannot be combined with them"
        )
    if load_team_plan(study, task) is not None:
        raise UserError(
            f"task {task!r} has a team plan (assign --annotators) that gives each person their own items; a stratified "
            "draw would be served only in part"
        )


def draw_allocation(study: Study, options: AllocateOptions) -> Drawn:
    """Draw (and, unless ``dry_run``, store) the allocated sample."""
    if options.by not in STRATA:
        raise UserError(f"--strata must be one of {', '.join(STRATA)}, not {options.by!r}")
    task = study.task(options.task)
    verdict = _with_inclusion(study, task.name, ReportSettings().verdict)
    data = ReportData(study, task, replace(ReportSettings(), verdict=verdict))
    rated = [a for a in questions(data, task.attributes) if np.any(~np.isnan(data.item_values(HUMANS, a, ALL)))]
    asked = {a.name: a for a in rated} if data.humans else {}
    if not asked:
        raise UserError(f"no person has rated task {task.name!r} yet: rate a uniform random pilot of a few dozen items")
    name = _pick(list(asked), options.attribute, "questions with a mean that people rated", "--attribute", task.name)
    attribute = asked[name]
    judge = _pick(list(data.judges), options.judge, "judges", "--judge", task.name)
    _refuse_other_draws(study, task.name, data, attribute)
    f = data.item_values(judge, attribute, ALL)
    human = data.item_values(HUMANS, attribute, ALL)
    labels = strata(data, attribute, judge, f, options.by)
    if labels is None:
        why = "one system" if options.by == "system" else "no distribution over the scale (nor 2 or more samples)"
        raise UserError(f"judge {judge!r} cannot stratify task {task.name!r} by {options.by}: {why}")
    judged = ~np.isnan(f)
    found = pr.stratified_ppi(f[judged], human[judged], labels[judged], STRATA[options.by])
    if not found.strata:
        raise UserError(f"the pilot cannot allocate: {found.note}")
    room = sum(s.items - s.rated for s in found.strata)
    if options.new > room:
        raise UserError(f"--allocate {options.new}: only {room} items the judge rated are still unrated by people")
    allocation = neyman.neyman(found.strata, options.new)
    keys = data.keys(ALL)
    stratum_of = {int(k): str(s) for k, s, j in zip(keys, labels, judged) if j}
    pilot = {int(k) for k, y, j in zip(keys, human, judged) if j and not np.isnan(y)}
    rng = np.random.default_rng(derive_seed(options.seed, task.name, ALLOCATED))
    picks: list[tuple[float, int, int]] = []  # (place in the order, stratum's index, item key)
    for index, s in enumerate(allocation):
        unrated = sorted(k for k, name in stratum_of.items() if name == s.name and k not in pilot)
        chosen = rng.permutation(np.array(unrated, dtype=np.int64))[: s.new]
        offset = rng.random()
        # the stratum's j-th draw at (j + U) / m_h: any prefix of the order holds each stratum in about its share
        picks.extend(((j + offset) / s.new, index, int(key)) for j, key in enumerate(chosen))
    drawn = [key for _, _, key in sorted(picks)]
    settings: dict[str, object] = {
        "by": options.by,
        "judge": judge,
        "attribute": attribute.name,
        "seed": options.seed,
        "new": options.new,
        "lam": found.lam,
        "strata": [{"name": s.name, "items": s.items, "rated": s.rated, "sd": s.sd, "new": s.new} for s in allocation],
    }
    lam = found.lam if found.lam is not None else 1.0
    result = Drawn(allocation, drawn, stratum_of, pilot, settings, lam)
    if not options.dry_run:
        save_allocation(study, task.name, settings, stratum_of, pilot, drawn)
    return result


def describe(drawn: Drawn, task: str, dry_run: bool) -> list[str]:
    s = drawn.settings
    lines = [
        f"{'would draw' if dry_run else 'drew'} {s['new']} new items of task {task!r} across {len(drawn.strata)} "
        f"strata by {s['by']} (Neyman allocation from the pilot's {len(drawn.pilot)} rated items, question "
        f"{s['attribute']!r}, judge {s['judge']!r}, λ = {drawn.lam:.2f}, seed {s['seed']}):"
    ]
    for x in drawn.strata:
        lines.append(f"  {x.name}: {x.items} items, pilot {x.rated}, SD of human − λ·judge {x.sd:.3f}, new {x.new}")
    if not dry_run:
        lines.append(
            f"people rate them with `tui-rater annotate --task {task} --order allocated`; the report weights each "
            "stratum by its share of the items (ratings of other items are left out of its stratified estimate)"
        )
    return lines

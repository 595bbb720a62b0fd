"""``tui-rater assign``: a team's plan of who rates which items, and what its design allows.

A fixed plan gives each item to ``per_item`` annotators (and a share of the items, ``overlap``, to
more), the least-loaded first with ties drawn from the stored seed, so loads stay even and pairs of
annotators vary. A dynamic plan stores only K: an item goes to whoever comes next until it has K
raters (``store/team.py``'s leases). In both, each annotator's stream gets gold items at the stated
rate, at places drawn from the seed.

Annotators added later (``--add``) take over items nobody has started from the busiest annotators,
so nobody's finished work moves and loads even out.
"""

from __future__ import annotations

import math
import unicodedata
from dataclasses import dataclass

import numpy as np

from tui_rater.domain import protocols
from tui_rater.domain.errors import UserError
from tui_rater.domain.protocols import derive_seed
from tui_rater.stats import alternative_annotator as at
from tui_rater.store.progress_reads import started_pairs
from tui_rater.store.study import Study
from tui_rater.store.team import (
    LEASE_S,
    Assignment,
    TeamPlan,
    add_assignments,
    assignments,
    complete_pairs,
    gold_keys,
    hand_over,
    lease_problem,
    load_team_plan,
    move_assignment,
    save_team_plan,
    unplanned_keys,
    update_settings,
)
from tui_rater.store.team import unplanned_note as unplanned_note  # for `assign`'s note

MAX_GOLD_RATE = 0.5  # more gold than real items is a test, not a study


@dataclass(frozen=True)
class Design:
    annotators: list[str]
    per_item: int = 1
    overlap_share: float = 0.0  # a share of the items rated by ``overlap_size`` people
    overlap_size: int = 0
    gold_rate: float = 0.0
    seed: int = 0
    dynamic: bool = False
    lease_s: float = LEASE_S

    def settings(self) -> dict[str, object]:
        return {
            "annotators": list(self.annotators),
            "per_item": self.per_item,
            "overlap_share": self.overlap_share,
            "overlap_size": self.overlap_size,
            "gold_rate": self.gold_rate,
            "seed": self.seed,
            "lease_s": self.lease_s,
        }


def parse_overlap(text: str) -> tuple[float, int]:
    """``0.2:3`` -> (0.2, 3): a share of the items, and how many people rate each of them."""
    share, _, size = text.partition(":")
    try:
        value, people = float(share), int(size)
    except ValueError:
        raise UserError(f"--overlap takes SHARE:PEOPLE (e.g. 0.2:3), not {text!r}") from None
    if not 0 < value <= 1:
        raise UserError(f"--overlap: the share of items must be in (0, 1], not {value:g}")
    return value, people


def check_name(study: Study, name: str) -> None:
    if not name.strip() or name != name.strip() or any(unicodedata.category(c).startswith("C") for c in name):
        raise UserError(f"{name!r} is not a usable annotator name (no spaces around it, no control characters)")
    if any(r.name == name for r in study.raters("llm")):
        raise UserError(f"{name!r} is the name of an LLM judge in this study; choose another annotator name")


def check_design(study: Study, task: str, design: Design, items: int) -> None:
    """One sentence for a plan that cannot work; nothing is written before this passes."""
    names = design.annotators
    if len(set(names)) != len(names):
        twice = next(n for n in names if names.count(n) > 1)
        raise UserError(f"annotator {twice!r} is named twice")
    for name in names:
        check_name(study, name)
    if not names and not design.dynamic:
        raise UserError("name the team: --annotators alice,bob,carol (only --dynamic plans may leave it open)")
    if items == 0:
        raise UserError(f"task {task!r} has no items to assign (gold items aside); import some first")
    if design.per_item < 1:
        raise UserError(f"--per-item must be at least 1, not {design.per_item}")
    if names and design.per_item > len(names):
        raise UserError(
            f"--per-item {design.per_item} needs at least {design.per_item} annotators; the plan names {len(names)}"
        )
    if design.overlap_share:
        if design.dynamic:
            raise UserError("--overlap goes with a fixed plan; a --dynamic plan has one K for every item")
        if not design.per_item < design.overlap_size <= len(names):
            raise UserError(
                f"--overlap: the people per shared item must be more than --per-item ({design.per_item}) and at "
                f"most the team ({len(names)}), not {design.overlap_size}"
            )
    if not 0 <= design.gold_rate <= MAX_GOLD_RATE:
        raise UserError(f"--gold-rate must be between 0 and {MAX_GOLD_RATE:g}, not {design.gold_rate:g}")
    if design.gold_rate and not names:
        raise UserError("--gold-rate mixes gold items into each named annotator's stream: name the team (--annotators)")
    if design.gold_rate and not gold_keys(study, task):
        raise UserError(
            f"--gold-rate {design.gold_rate:g}: task {task!r} has no gold items; import items with "
            "gold_<question> columns first"
        )
    problem = lease_problem(design.lease_s)
    if problem is not None:
        raise UserError(f"--lease: {problem}")


def _rng(design: Design, task: str, *what: object) -> np.random.Generator:
    return np.random.default_rng(derive_seed(design.seed, task, "team", *what))


def draw_fixed(
    keys: list[int],
    rater_ids: list[int],
    design: Design,
    task: str,
    *,
    start: dict[int, int] | None = None,
    draw: tuple[object, ...] = ("items",),
) -> list[Assignment]:
    """Each item to the least-loaded annotators (ties drawn at random), a share of them to more. ``start``: the
    loads they already have (a plan extended to new items); ``draw``: which of the seed's streams to draw from."""
    rng = _rng(design, task, *draw)
    shuffled = [keys[i] for i in rng.permutation(len(keys))]
    shared = round(design.overlap_share * len(keys)) if design.overlap_share else 0
    load = {rater: (start or {}).get(rater, 0) for rater in rater_ids}
    found: list[Assignment] = []
    for position, key in enumerate(shuffled):
        people = design.overlap_size if position < shared else design.per_item
        ties = rng.random(len(rater_ids))
        chosen = sorted(range(len(rater_ids)), key=lambda i: (load[rater_ids[i]], ties[i]))[:people]
        for i in chosen:
            load[rater_ids[i]] += 1
            found.append(Assignment(rater_ids[i], key))
    return found


def gold_count(rate: float, regular: float, available: int) -> int:
    """How many gold items make them a share ``rate`` of a stream of ``regular`` items: g / (m + g) = rate."""
    if rate <= 0 or available == 0:
        return 0
    return min(available, max(1, round(rate * regular / (1 - rate))))


def draw_gold(gold: list[int], rater_id: int, name: str, regular: float, design: Design, task: str) -> list[Assignment]:
    count = gold_count(design.gold_rate, regular, len(gold))
    rng = _rng(design, task, "gold", name)
    chosen = [gold[i] for i in rng.permutation(len(gold))[:count]]
    return [Assignment(rater_id, key, gold=True, slot=float(rng.random())) for key in chosen]


def expected_load(design: Design, items: int, team: int) -> float:
    shared = round(design.overlap_share * items) if design.overlap_share else 0
    total = shared * design.overlap_size + (items - shared) * design.per_item
    return total / team if team else 0.0


def shared_per_person(design: Design, keys: list[int], task: str) -> list[int] | None:
    """Each annotator's planned items that another annotator is planned on too (the items the alt-test can
    use, if the judge rates them all): a fixed plan's own draw, a dynamic plan's expected share; None when a
    dynamic plan leaves the team open (who comes decides)."""
    team = len(design.annotators)
    if not team:
        return None
    if design.dynamic:
        return [math.floor(len(keys) * design.per_item / team) if design.per_item >= 2 else 0] * team
    drawn = draw_fixed(keys, list(range(team)), design, task)
    people: dict[int, int] = {}
    for a in drawn:
        people[a.item_key] = people.get(a.item_key, 0) + 1
    shared = [0] * team
    for a in drawn:
        shared[a.rater_id] += people[a.item_key] >= 2
    return shared


def _span(counts: list[int]) -> str:
    return f"{min(counts)}" if min(counts) == max(counts) else f"{min(counts)} to {max(counts)}"


def allows(design: Design, keys: list[int], task: str) -> list[str]:
    """What the plan's design allows: which tables and verdicts the report can give from it. The alt-test's
    forecast applies the report's own rule (``alternative_annotator.has_verdict``) to the planned items."""
    items = len(keys)
    k, shared = design.per_item, round(design.overlap_share * items) if design.overlap_share else 0
    size = design.overlap_size if shared else 0
    lines = []
    by_two = items if k >= 2 else (shared if size >= 2 else 0)
    if by_two:
        lines.append(
            f"agreement between people (Krippendorff's alpha, table 1): yes, on {by_two} items rated by 2 or more"
        )
    else:
        lines.append("agreement between people: no -- every item is rated once (it needs 2 people on the same items)")
    per_person = shared_per_person(design, keys, task)
    rule = at.verdict_rule().replace("humans", "people").replace("human", "person")
    if per_person is None:
        lines.append(f"the alt-test verdict (can a judge replace the people?): only with {rule} (who comes decides)")
    elif at.has_verdict(per_person):
        lines.append(
            f"the alt-test verdict (can a judge replace the people?): yes -- {len(per_person)} people will each have "
            f"{min(per_person)} or more items another person rates too (it needs {rule}), if the judge rates them"
        )
    else:
        enough = sum(at.is_tested(n) for n in per_person)
        lines.append(
            f"the alt-test verdict: no -- it needs {rule}; this plan gives {enough} of {len(per_person)} that many "
            f"(each has {_span(per_person)} items another person rates too): give more items to 2 or more people "
            "(--per-item 2, or a larger --overlap share), or name more people"
            if len(per_person) >= at.MIN_HUMANS
            else f"the alt-test verdict: no -- it needs {rule}; this plan names {len(per_person)}"
        )
    lines.append("judge-versus-people correlations and system scores: yes, on every item rated")
    if design.gold_rate:
        lines.append(
            f"gold items: about {design.gold_rate:.0%} of each stream; scored in `tui-rater progress`, "
            "left out of agreement and verdicts"
        )
    return lines


def describe(design: Design, task: str, keys: list[int], gold: int) -> list[str]:
    items = len(keys)
    if design.dynamic:
        team = ", ".join(design.annotators) if design.annotators else "anyone who opens it"
        head = (
            f"dynamic plan for {task!r}: {items} items, each served to whoever comes next until {design.per_item} "
            f"people rated it (leases of {design.lease_s:g} s); team: {team}; seed {design.seed}"
        )
    else:
        overlap = f", {design.overlap_share:.0%} of them by {design.overlap_size}" if design.overlap_share else ""
        head = (
            f"fixed plan for {task!r}: {items} items, each rated by {design.per_item}{overlap}; "
            f"{len(design.annotators)} annotators ({', '.join(design.annotators)}), about "
            f"{expected_load(design, items, len(design.annotators)):.0f} items each; seed {design.seed}"
        )
    return [head, *(f"  {line}" for line in allows(design, keys, task)), f"  gold items in the task: {gold}"]


def regular_keys(study: Study, task: str) -> tuple[list[int], list[int]]:
    """(the task's items to assign, its gold items), each in import order."""
    gold = gold_keys(study, task)
    keys = [item.key for item in study.items(task)]
    return [k for k in keys if k not in gold], [k for k in keys if k in gold]


def plan_team(study: Study, task: str, design: Design, *, dry_run: bool, replace: bool) -> list[str]:
    """Check, describe and (unless ``dry_run``) store a task's plan. Returns the lines to print."""
    if protocols.one_item_per_annotator(study.task(task)):  # (an unknown task: one sentence)
        raise UserError(f"task {task!r} gives each annotator one packet (`spa setup`); it takes no assign plan")
    keys, gold = regular_keys(study, task)
    existing = load_team_plan(study, task)
    check_design(study, task, design, len(keys))
    if existing is not None and not replace and not dry_run:
        raise UserError(
            f"task {task!r} already has a plan ({existing.mode}, made {existing.created_at}); add people with "
            "--add NAME, give it the items imported since with --extend, or draw a new one with --replace (ratings "
            "are kept)"
        )
    lines = describe(design, task, keys, len(gold))
    if dry_run:
        return [*lines, "dry run: nothing stored"]
    rater_ids = [study.human(name).id for name in design.annotators]
    found = [] if design.dynamic else draw_fixed(keys, rater_ids, design, task)
    load = expected_load(design, len(keys), len(rater_ids))
    for rater_id, name in zip(rater_ids, design.annotators):
        found += draw_gold(gold, rater_id, name, load, design, task)
    mode = "dynamic" if design.dynamic else "fixed"
    save_team_plan(study, task, mode, design.settings(), found, replace=replace)
    return [*lines, f"stored: {len(found)} assignments in {study.path}"]


def design_of(plan: TeamPlan) -> Design:
    s = plan.settings
    return Design(
        annotators=list(s.get("annotators", [])),
        per_item=int(s.get("per_item", 1)),
        overlap_share=float(s.get("overlap_share", 0.0)),
        overlap_size=int(s.get("overlap_size", 0)),
        gold_rate=float(s.get("gold_rate", 0.0)),
        seed=int(s.get("seed", 0)),
        dynamic=plan.mode == "dynamic",
        lease_s=float(s.get("lease_s", LEASE_S)),
    )


def add_annotators(study: Study, task: str, names: list[str]) -> list[str]:
    """New people join a stored plan: in a fixed plan they take over items nobody has started, from the
    busiest annotators (never an item they already have); finished and begun work stays where it is."""
    study.task(task)
    plan = load_team_plan(study, task)
    if plan is None:
        raise UserError(
            f"task {task!r} has no plan yet; make one with `tui-rater assign --task {task} --annotators ...`"
        )
    design = design_of(plan)
    if not design.annotators:
        raise UserError(f"the dynamic plan for {task!r} is open to anyone: {', '.join(names)} can start rating now")
    for name in names:
        check_name(study, name)
        if name in design.annotators:
            raise UserError(f"{name!r} is already in the plan for {task!r}")
    if len(set(names)) != len(names):
        raise UserError("a name is given twice in --add")
    keys, gold = regular_keys(study, task)
    lines = []
    team = [*design.annotators]
    for name in names:
        rater = study.human(name)
        team.append(name)
        moved = 0 if plan.mode == "dynamic" else _take_over(study, task, rater.id, len(team))
        load = moved if plan.mode == "fixed" else expected_load(design, len(keys), len(team))
        add_assignments(study, task, draw_gold(gold, rater.id, name, load, design, task))
        lines.append(
            f"{name} joins the plan for {task!r}"
            + (f": {moved} unstarted items moved to them" if plan.mode == "fixed" else "")
        )
    update_settings(study, task, {**plan.settings, "annotators": team})
    return lines


def _take_over(study: Study, task: str, new_rater: int, team: int) -> int:
    regular = [a for a in assignments(study, task) if not a.gold]
    started = started_pairs(study, task)  # a skip or a flag is work done too
    target = math.floor(len(regular) / team)
    by_rater: dict[int, list[int]] = {}
    for a in regular:
        by_rater.setdefault(a.rater_id, []).append(a.item_key)
    holders: dict[int, set[int]] = {}
    for a in regular:
        holders.setdefault(a.item_key, set()).add(a.rater_id)
    moved = 0
    while moved < target:
        busiest = sorted(by_rater, key=lambda r: -len(by_rater[r]))
        done = True
        for rater in busiest:
            free = [k for k in by_rater[rater] if (rater, k) not in started and new_rater not in holders[k]]
            if free and len(by_rater[rater]) > moved + 1:
                key = free[-1]
                move_assignment(study, task, key, rater, new_rater)
                by_rater[rater].remove(key)
                holders[key] = (holders[key] - {rater}) | {new_rater}
                moved += 1
                done = False
                break
        if done:
            break
    return moved


def extend_plan(study: Study, task: str) -> list[str]:
    """A fixed plan takes in the items imported after it was drawn: each to the plan's K people (its overlap share
    to more), least loaded first, with ties drawn from the plan's seed. Nothing already planned moves."""
    study.task(task)
    plan = load_team_plan(study, task)
    if plan is None:
        raise UserError(
            f"task {task!r} has no plan yet; make one with `tui-rater assign --task {task} --annotators ...`"
        )
    if plan.mode == "dynamic":
        return [f"the dynamic plan for {task!r} serves every item, new ones too: nothing to extend"]
    new = unplanned_keys(study, task)
    if not new:
        return [f"every item of {task!r} is in its plan: nothing to extend"]
    design = design_of(plan)
    team = {name: study.human(name).id for name in design.annotators}
    regular = [a for a in assignments(study, task) if not a.gold]
    start: dict[int, int] = {}
    for a in regular:
        start[a.rater_id] = start.get(a.rater_id, 0) + 1
    found = draw_fixed(new, list(team.values()), design, task, start=start, draw=("extend", len(regular)))
    add_assignments(study, task, found)
    got = {name: sum(a.rater_id == rater for a in found) for name, rater in team.items()}
    return [
        f"{len(new)} new item(s) of {task!r} added to its plan, each rated by {design.per_item}"
        + (f" ({design.overlap_share:.0%} of them by {design.overlap_size})" if design.overlap_share else "")
        + ": "
        + ", ".join(f"{name} +{count}" for name, count in got.items())
    ]


def reassign(study: Study, task: str, name: str) -> list[str]:
    """Take an annotator off a stored plan (a lead acting on a careless mark): in a fixed plan each item they have
    not finished goes to the least-loaded other annotator not already on it (ties drawn from the seed), so every
    item keeps its K people; their unfinished gold items leave their stream. In a dynamic plan their leases go.
    Their ratings stay in the file: ``report --exclude-annotator`` leaves them out of the numbers."""
    study.task(task)
    plan = load_team_plan(study, task)
    if plan is None:
        raise UserError(f"task {task!r} has no plan yet: there is nothing to reassign")
    design = design_of(plan)
    if name not in design.annotators:
        team = ", ".join(design.annotators) or "anyone who opens it"
        raise UserError(f"{name!r} is not in the plan for {task!r} (its annotators: {team})")
    others = [n for n in design.annotators if n != name]
    if not others:
        raise UserError(f"{name!r} is the only annotator in the plan for {task!r}: nobody could take their items")
    rater = study.human(name).id
    settings = {**plan.settings, "annotators": others}
    if plan.mode == "dynamic":
        hand_over(study, task, rater, [], [], settings)
        return [f"{name} is off the dynamic plan for {task!r}: the items they held go to whoever comes next"]
    finished = {key for who, key in complete_pairs(study, task) if who == rater}
    every = assignments(study, task)
    mine = [a for a in every if a.rater_id == rater and a.item_key not in finished]
    ids = {n: study.human(n).id for n in others}
    load = {rater_id: 0 for rater_id in ids.values()}
    holders: dict[int, set[int]] = {}
    for a in every:
        if not a.gold:
            holders.setdefault(a.item_key, set()).add(a.rater_id)
            if a.rater_id in load:
                load[a.rater_id] += 1
    rng = _rng(design, task, "reassign", name)
    moves: list[tuple[int, int]] = []
    stuck: list[int] = []
    for a in mine:
        if a.gold:
            continue
        free = [r for r in ids.values() if r not in holders[a.item_key]]
        if not free:
            stuck.append(a.item_key)
            continue
        ties = rng.random(len(free))
        chosen = min(range(len(free)), key=lambda i: (load[free[i]], ties[i]))
        moves.append((a.item_key, free[chosen]))
        load[free[chosen]] += 1
        holders[a.item_key] = (holders[a.item_key] - {rater}) | {free[chosen]}
    dropped = [a.item_key for a in mine if a.gold] + stuck
    hand_over(study, task, rater, moves, dropped, settings)
    got = {n: sum(to == r for _key, to in moves) for n, r in ids.items()}
    kept = sum(a.rater_id == rater and not a.gold and a.item_key in finished for a in every)
    lines = [
        f"{name} is off the plan for {task!r}: {len(moves)} item(s) they had not finished moved to the others ("
        + ", ".join(f"{n} +{count}" for n, count in got.items())
        + f"); the {kept} they finished stay theirs in the file (leave them out of the numbers with "
        f"`tui-rater report --exclude-annotator {name}`)"
    ]
    if stuck:
        lines.append(
            f"warning: {len(stuck)} item(s) now have one person fewer than the plan's {design.per_item}: every other "
            "annotator already has them (add someone with --add NAME)"
        )
    return lines

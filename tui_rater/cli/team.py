"""Team studies: `assign` (who rates which items), `progress`, `roles` (who may run study-wide actions)."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from tui_rater.cli.common import Subparsers, data, lead_only, make_console, new_table, open_study, say
from tui_rater.domain.errors import UserError

if TYPE_CHECKING:
    from tui_rater.config import Settings


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "assign",
        parents=[common],
        help="plan who rates which items of a task (overlap, gold items, a dynamic mode)",
        description="Store a task's plan: which annotators rate which items. `annotate` then serves each "
        "annotator only their items. Says what the design allows (agreement, the alt-test verdict) first.",
    )
    p.add_argument("--task", required=True, help="the task to plan")
    p.add_argument("--annotators", metavar="A,B,C", help="the team, comma-separated")
    p.add_argument("--per-item", type=int, default=1, metavar="K", help="people per item (default: 1)")
    p.add_argument(
        "--overlap",
        metavar="SHARE:PEOPLE",
        help="also give a share of the items to more people, e.g. 0.2:3 = 20%% of the items rated by 3 "
        "(for the alt-test, which needs 3 people on the same items)",
    )
    p.add_argument(
        "--dynamic",
        action="store_true",
        help="no fixed lists: each item goes to whoever comes next until K people have it (leases that expire)",
    )
    p.add_argument(
        "--lease", type=float, default=600, metavar="SECONDS", help="--dynamic: how long an item is held (default 600)"
    )
    p.add_argument(
        "--gold-rate",
        type=float,
        default=0.0,
        metavar="R",
        help="mix gold items (imported with gold_<question> columns) into each stream as a share R of it, e.g. 0.05",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the draw (stored with the plan)")
    p.add_argument("--add", metavar="A,B", help="add people to the stored plan (nobody's begun work moves)")
    p.add_argument("--replace", action="store_true", help="draw a new plan in place of the stored one (ratings kept)")
    p.add_argument("--dry-run", action="store_true", help="show the plan and what it allows; store nothing")
    lead_only(p, lambda args: "assign annotators" if not args.dry_run else None)
    p.set_defaults(run=cmd_assign)

    p = sub.add_parser(
        "progress",
        parents=[common],
        help="per annotator: done, remaining, time per item, gold accuracy, agreement; marks careless rating",
    )
    p.add_argument("--task", help="one task (default: every task with items)")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(run=cmd_progress)

    p = sub.add_parser(
        "roles",
        parents=[common],
        help="name the study's leads: only they may assign, cancel the judges' queue or adjudicate",
        description="A stated list, not authentication: it keeps study-wide actions from being run by mistake.",
    )
    p.add_argument("--leads", metavar="A,B", help="the leads, comma-separated ('' lets everyone again)")
    lead_only(p, lambda args: "change the leads" if args.leads is not None else None)
    p.set_defaults(run=cmd_roles)


def _names(text: str | None) -> list[str]:
    return [n.strip() for n in (text or "").split(",") if n.strip()] if text else []


def cmd_assign(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.service.team import Design, add_annotators, parse_overlap, plan_team

    study = open_study(args, settings, create=False)  # a lead's, unless --dry-run (`lead_only` above)
    if args.add:
        if args.annotators or args.replace or args.dry_run:
            raise UserError("--add extends the stored plan; give it alone (no --annotators, --replace, --dry-run)")
        for line in add_annotators(study, args.task, _names(args.add)):
            say(line)
        return 0
    share, people = parse_overlap(args.overlap) if args.overlap else (0.0, 0)
    design = Design(
        annotators=_names(args.annotators),
        per_item=args.per_item,
        overlap_share=share,
        overlap_size=people,
        gold_rate=args.gold_rate,
        seed=args.seed,
        dynamic=args.dynamic,
        lease_s=args.lease,
    )
    for line in plan_team(study, args.task, design, dry_run=args.dry_run, replace=args.replace):
        say(line)
    return 0


def cmd_roles(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.store.roles import leads, set_leads

    study = open_study(args, settings, create=False, readonly=args.leads is None)
    if args.leads is None:
        names = leads(study)
        say(f"leads: {', '.join(names)}" if names else "leads: none named (everyone may run study-wide actions)")
        return 0
    names = _names(args.leads)
    for name in names:
        if any(c.isspace() for c in name) or not name.isprintable():
            raise UserError(f"{name!r} is not a usable name (no spaces or control characters)")
    set_leads(study, names)
    say(f"leads: {', '.join(names)}" if names else "leads: none named (everyone may run study-wide actions)")
    return 0


def _pct(x: float | None) -> str:
    return "-" if x is None else f"{x:.0%}"


def _num(x: float | None, digits: int = 2) -> str:
    return "-" if x is None else f"{x:.{digits}f}"


def cmd_progress(args: argparse.Namespace, settings: Settings) -> int:
    from dataclasses import asdict

    from rich import box

    from tui_rater.service.progress import study_progress

    study = open_study(args, settings, readonly=True)
    tasks = study_progress(study, args.task)
    if args.format == "json":
        print(json.dumps([asdict(t) for t in tasks], indent=2, ensure_ascii=False))
        return 0
    console = make_console()
    for t in tasks:
        plan = f"{t.mode} plan" if t.mode else "no plan"
        team = f", team {_pct(t.team_share)} done" if t.team_share is not None else ""
        table = new_table(
            f"{t.task}: {t.items} items + {t.gold_items} gold, {plan}{team}",
            ["who", "of", "done", "left", "skip", "flag", "s/item", "gold", "±ppl", "±jdg", "last"],
        )
        table.box, table.padding = box.SIMPLE_HEAD, (0, 1, 0, 0)  # 80 columns: one space and the divider
        for column in table.columns[1:]:
            column.no_wrap = True
        for row in t.annotators:
            table.add_row(
                *(
                    data(v)
                    for v in (
                        row.annotator,
                        "-" if row.assigned is None else row.assigned,
                        row.done,
                        "-" if row.remaining is None else row.remaining,
                        row.skipped,
                        row.flagged,
                        _num(row.median_seconds, 1),
                        f"{round((row.gold_accuracy or 0) * row.gold_answered)}/{row.gold_answered}"
                        if row.gold_answered
                        else "-",
                        _num(row.gap_people),
                        _num(row.gap_judges),
                        (row.last_activity or "-")[5:16].replace("T", " ") or "-",
                    )
                )
            )
        console.print(table)
        for row in t.annotators:
            for mark in row.marks:
                say(f"  ! {row.annotator}: {mark}")
            if row.retest_gap is not None:
                say(f"  {row.annotator} against themselves (retest): ±{row.retest_gap:.2f} on {row.retested} ratings")
        say("  of: items planned · s/item: median seconds · gold: right / answered")
        say("  ±ppl, ±jdg: mean distance from the others' / the judges' mean (scale points)")
    return 0

"""Team studies: `assign` (who rates which items), `progress`, `roles` (who may run study-wide actions)."""

from __future__ import annotations

import argparse
import json
import shlex
import textwrap
from typing import TYPE_CHECKING

from tui_rater.cli.common import Subparsers, data, lead_only, make_console, new_table, open_study, say, whole
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
        "--lease",
        type=float,
        default=600,
        metavar="SECONDS",
        help="--dynamic: how long an item is held (default 600, at most 86400: a day)",
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
    p.add_argument(
        "--extend",
        action="store_true",
        help="give the stored fixed plan the items imported after it was drawn (K people each; nothing planned moves)",
    )
    p.add_argument(
        "--reassign",
        metavar="NAME",
        help="take NAME off the stored plan: the items they have not finished go to the others (each item keeps "
        "its K people); what they finished stays in the file (leave it out with `report --exclude-annotator`)",
    )
    p.add_argument("--replace", action="store_true", help="draw a new plan in place of the stored one (ratings kept)")
    p.add_argument(
        "--allocate",
        type=whole(1, 10**9),
        metavar="M",
        help="instead of a team plan: draw the next M items people rate, at random within strata in the numbers of "
        "the Neyman allocation from the pilot (the items rated so far, a uniform random sample; `sample-size "
        "--new-items M` shows it); people rate them with `annotate --order allocated`, and the report weights each "
        "stratum by its share of the items",
    )
    p.add_argument(
        "--strata",
        choices=("system", "confidence"),
        default="system",
        help="--allocate: the strata, by system (default) or by the judge's confidence (its largest probability, "
        "cut at its terciles; stored with the draw)",
    )
    p.add_argument("--judge", help="--allocate: the judge whose ratings the strata and the allocation come from")
    p.add_argument("--attribute", help="--allocate: the question whose pilot allocates (default: the only one)")
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


def _names(text: str | None, flag: str = "--annotators") -> list[str]:
    """A comma-separated list of names; an empty one (``a,,b``, ``a, ,b``, a trailing comma, only spaces) or one
    named twice is one sentence: a plan silently a person short would still be stored and served. (Only
    ``--leads ''`` may be empty: it lets everyone again.)"""
    if text is None or (flag == "--leads" and not text.strip()):
        return []
    names = [n.strip() for n in text.split(",")]
    if "" in names:
        raise UserError(
            f"{flag} {text!r} has an empty name (name {names.index('') + 1} of {len(names)}); "
            "give each name once, separated by single commas"
        )
    twice = next((n for n in names if names.count(n) > 1), None)
    if twice is not None:
        raise UserError(f"{flag}: annotator {twice!r} is named twice")
    return names


def cmd_assign(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.service.team import (
        Design,
        add_annotators,
        extend_plan,
        parse_overlap,
        plan_team,
        reassign,
        unplanned_note,
    )

    if args.allocate is not None:
        return _allocate(args, settings)
    if args.judge is not None or args.attribute is not None:
        raise UserError("--judge and --attribute go with --allocate")
    study = open_study(args, settings, create=False)  # a lead's, unless --dry-run (`lead_only` above)
    given = {"--add": args.add, "--extend": args.extend, "--reassign": args.reassign}
    changes = [flag for flag, value in given.items() if value]
    if changes:
        if len(changes) > 1 or args.annotators or args.replace or args.dry_run:
            raise UserError(
                f"{changes[0]} changes the stored plan; give it alone (no --annotators, --replace, --dry-run"
                + (f", {changes[1]}" if len(changes) > 1 else "")
                + ")"
            )
        if args.add:
            lines = add_annotators(study, args.task, _names(args.add, "--add"))
        elif args.extend:
            lines = extend_plan(study, args.task)
        else:
            lines = reassign(study, args.task, args.reassign)
        for line in lines:
            say(line)
        if note := unplanned_note(study, args.task):
            say(f"note: {note}")
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


def _allocate(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.service.allocation import AllocateOptions, describe, draw_allocation

    team = {
        "--annotators": args.annotators,
        "--add": args.add,
        "--extend": args.extend,
        "--reassign": args.reassign,
        "--replace": args.replace,
        "--dynamic": args.dynamic,
        "--overlap": args.overlap,
        "--gold-rate": args.gold_rate,
    }
    mixed = [flag for flag, value in team.items() if value]
    if mixed:
        raise UserError(f"--allocate draws the items to rate next, not a team plan: give it without {mixed[0]}")
    study = open_study(args, settings, create=False, readonly=args.dry_run)
    options = AllocateOptions(
        args.task, args.allocate, args.strata, args.judge, args.attribute, args.seed, args.dry_run
    )
    for line in describe(draw_allocation(study, options), args.task, args.dry_run):
        say(line)
    return 0


def cmd_roles(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.service.roles import leads, set_leads

    study = open_study(args, settings, create=False, readonly=args.leads is None)
    if args.leads is None:
        names = leads(study)
        say(f"leads: {', '.join(names)}" if names else "leads: none named (everyone may run study-wide actions)")
        return 0
    names = _names(args.leads, "--leads")
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
        # a numeric question's distance in scale points; a nominal one's disagreement rate (never a mean of codes)
        numeric = any(row.shared_people or row.shared_judges for row in t.annotators)
        nominal = any(row.shared_people_nominal or row.shared_judges_nominal for row in t.annotators)
        numeric = numeric or not nominal
        apart = numeric and nominal  # both kinds of question: the rates in a table of their own (80 columns)
        table = new_table(
            f"{t.task}: {t.items} items + {t.gold_items} gold, {plan}{team}",
            ["who", "of", "done", "left", "skip", "flag", "s/item", "gold"]
            + (["±ppl", "±jdg"] if numeric else [])
            + (["≠ppl", "≠jdg"] if nominal and not apart else [])
            + ["last"],
        )
        table.box, table.padding = box.SIMPLE_HEAD, (0, 1, 0, 0)  # 80 columns: one space and the divider
        for column in table.columns[1:]:
            column.no_wrap = True
        for row in t.annotators:
            gaps = [_num(row.gap_people), _num(row.gap_judges)] if numeric else []
            rates = [_pct(row.disagreement_people), _pct(row.disagreement_judges)] if nominal and not apart else []
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
                        *gaps,
                        *rates,
                        (row.last_activity or "-")[5:16].replace("T", " ") or "-",
                    )
                )
            )
        console.print(table)
        if apart:
            say(f"{t.task}, its choice and pairwise questions:")
            rates_table = new_table("", ["who", "≠ppl", "≠jdg"])
            rates_table.title, rates_table.box, rates_table.padding = None, box.SIMPLE_HEAD, (0, 1, 0, 0)
            for row in t.annotators:
                rates_table.add_row(
                    *(data(v) for v in (row.annotator, _pct(row.disagreement_people), _pct(row.disagreement_judges)))
                )
            console.print(rates_table)
        if t.unplanned:
            say(f"  ! {t.unplanned} item(s) outside the fixed plan (imported after it): served to nobody")
            say(f"    give them to the team: `tui-rater assign --task {shlex.quote(t.task)} --extend`")
        for row in t.annotators:
            for mark in row.marks:  # at 80 columns: a long mark (the model's figure) goes on indented lines
                for line in textwrap.wrap(f"! {row.annotator}: {mark}", 78, subsequent_indent="    "):
                    say(f"  {line}")
            if row.marks:  # what a lead can do about it, without editing the file
                who = shlex.quote(row.annotator)
                say(f"    leave out: `tui-rater report --exclude-annotator {who}`")
                if t.mode:
                    task = shlex.quote(t.task)
                    say(f"    reassign: `tui-rater assign --task {task} --reassign {who}`")
            if row.retest_gap is not None:
                say(f"  {row.annotator} against themselves (retest): ±{row.retest_gap:.2f} on {row.retested} ratings")
        say("  of: items planned · s/item: median seconds · gold: right / answered")
        if numeric:
            say("  ±ppl, ±jdg: mean distance from the others' / the judges' mean (scale points)")
        if nominal:
            say("  ≠ppl, ≠jdg: disagreement rate, the share of the others' / the judges' answers")
            say("    unlike theirs (choice, pairwise questions: answers have no distance)")
    return 0

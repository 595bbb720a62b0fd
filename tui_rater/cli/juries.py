"""``tui-rater jury``: a derived judge made from other judges' stored ratings (no model calls); list and forget."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from tui_rater.cli.common import Subparsers, data, lead_only, make_console, new_table, open_study, say

if TYPE_CHECKING:
    from tui_rater.config import Settings

RULES = {
    "mean": "the mean of the members' values (nominal questions: a vote)",
    "median": "the median of the members' values (nominal questions: a vote)",
    "vote": "the answer most members gave; a tie goes to the first-named member's answer among those tied",
    "distribution": "the members' scale distributions averaged, read by the protocol (expected value; nominal: "
    "the most probable answer)",
}


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "jury",
        parents=[common],
        help="make a jury: a judge derived from other judges' stored ratings (no model calls); list, forget",
        description="A jury is a judge whose value of an item is its members' values combined by one rule. It stores "
        "no ratings: reports and the live pane compute it from the members' ratings in force each time they read "
        "the study, so it follows the members' new ratings. It has a value of an item only where every member has "
        "one. Reports show it as one more judge, and say whether it does better than its best member. Rules: "
        + "; ".join(f"{k}: {v}" for k, v in RULES.items())
        + ".",
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="the jury's name: what reports call it")
    p.add_argument("--members", metavar="A,B,C", help="its judges (labels, J-numbers or names), comma-separated")
    p.add_argument("--aggregate", choices=tuple(RULES), default="mean", help="how the members' values are combined")
    p.add_argument("--task", help="only this task's items (default: every task its members rated)")
    p.add_argument("--list", action="store_true", help="list the study's juries with their members and rules")
    p.add_argument("--format", choices=("table", "json"), default="table", help="--list: as a table or JSON")
    p.add_argument("--forget", metavar="NAME", help="remove this jury's definition (its members keep their ratings)")
    lead_only(p, lambda args: None if args.list else ("forget a jury" if args.forget else "make a jury"))
    p.set_defaults(run=cmd_jury)


def cmd_jury(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.domain.errors import UserError
    from tui_rater.service import juries

    if args.list:
        return _list(args, settings)
    if args.forget is not None:
        study = open_study(args, settings, create=False)
        gone = juries.forget(study, args.forget)
        say(f"forgot jury {gone.label} (its members keep their ratings)")
        return 0
    if not args.name or not args.members:
        raise UserError("give the jury's NAME and --members A,B[,C ...] (or --list, or --forget NAME)")
    study = open_study(args, settings, create=False)
    options = juries.JuryOptions(args.name, tuple(args.members.split(",")), args.aggregate, args.task)
    jury = juries.make_jury(study, options)
    members = ", ".join(m.label for m in jury.members)
    say(f"jury {jury.label}: {jury.aggregate} of {members}; reports compute it from their ratings as they are then")
    return 0


def _list(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.service import juries

    study = open_study(args, settings, create=False, readonly=True)
    found = juries.juries(study)
    if args.format == "json":
        print(json.dumps({"study": str(study.path), "juries": [j.as_dict() for j in found]}, indent=2))
        return 0
    console = make_console()
    if not found:
        console.print(data(f"{study.path} holds no juries (make one with `tui-rater jury NAME --members A,B,C`)"))
        return 0
    table = new_table(f"Juries of {study.path}", ["jury", "rule", "task", "members", "identity"])
    for jury in found:
        members = ", ".join(f"{m.label} ({m.identity[:12]})" for m in jury.members)
        table.add_row(
            data(jury.label), data(jury.aggregate), data(jury.task or "every task"), data(members),
            data(jury.config_hash[:12]),
        )  # fmt: skip
    console.print(table)
    return 0

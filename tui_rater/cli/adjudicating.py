"""`adjudicate`: the items whose raters disagree, most disagreeing first; the adjudicator decides each."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from tui_rater.cli.common import Subparsers, data, lead_only, make_console, new_table, open_study, say
from tui_rater.domain.errors import UserError

if TYPE_CHECKING:
    from tui_rater.config import Settings
    from tui_rater.domain.tasks import Task
    from tui_rater.service.adjudication import Disagreement


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "adjudicate",
        parents=[common],
        help="decide the items where the raters disagree (a screen, or --list)",
        description="Lists the items where the people (and with --with-judges the judges) disagree beyond --margin "
        "on some question, most disagreeing first: numbers whose range exceeds the margin, any two different "
        "answers to a choice. The screen shows each item with every rating, comment and flag; type the decided "
        "value with the keys of `annotate`. Decisions are stored under 'NAME (adjudicator)', a rater kind of its "
        "own: the ratings stay as they were, and `report --reference adjudicated` compares the judges with them.",
    )
    p.add_argument("--task", required=True, help="the task to adjudicate")
    p.add_argument(
        "--adjudicator",
        "--as",
        dest="adjudicator",
        metavar="NAME",
        help="your name (--as, as the other lead commands take it; default: $TUI_RATER_ANNOTATOR or 'annotator' "
        "in the config)",
    )
    p.add_argument(
        "--margin",
        type=float,
        default=0.0,
        metavar="M",
        help="how far apart numeric ratings may be and still agree (default 0: any difference); choices "
        "disagree on any two different answers",
    )
    p.add_argument("--with-judges", action="store_true", help="count each judge's score of an item as a voice too")
    p.add_argument("--list", action="store_true", help="print the queue instead of opening the screen")
    p.add_argument(
        "--format", choices=("table", "json"), help="print the queue in this format instead of opening the screen"
    )
    # the screen stores decisions: a lead's once the study names its leads (--list and --format only read)
    lead_only(p, lambda args: None if args.list or args.format is not None else "adjudicate")
    p.set_defaults(run=cmd_adjudicate)


def cmd_adjudicate(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.service.adjudication import check_margin, disagreements

    check_margin(args.margin)  # one sentence before the study is opened
    headless = args.list or args.format is not None
    adjudicator = args.adjudicator or settings.annotator
    if not headless and adjudicator:
        from tui_rater.domain.display import check_name
        from tui_rater.service.annotate import MAX_ANNOTATOR_NAME

        check_name(adjudicator, "--adjudicator", MAX_ANNOTATOR_NAME)  # as --annotator: before anything is stored
    study = open_study(args, settings, create=False, readonly=headless)
    task = study.task(args.task)  # an unknown task: one sentence naming the known ones
    if not study.items(task.name):
        raise UserError(f"{study.path} holds no items for task {task.name!r}; import some first")
    queue = disagreements(study, task.name, args.margin, args.with_judges)
    who = "people and judges" if args.with_judges else "people"
    if not queue:
        say(f"no item of task {task.name!r} has {who} disagreeing beyond margin {args.margin:g}: nothing to adjudicate")
        return 0
    if headless:
        if args.format == "json":
            print(json.dumps([d.as_dict(task) for d in queue], indent=1))  # ensure_ascii: escapes stay escaped
            return 0
        _print_table(task, queue, args.margin, who)
        return 0
    if not adjudicator:
        raise UserError(
            "say who adjudicates: --adjudicator NAME (or $TUI_RATER_ANNOTATOR, or 'annotator' in the config)"
        )
    from tui_rater.service.adjudication import open_adjudication
    from tui_rater.ui.adjudicate import AdjudicateApp
    from tui_rater.ui.run import run_app

    adjudication = open_adjudication(study, task.name, adjudicator)
    # run_app: signals, and the decisions still unsaved when the screen closes (as for annotate)
    return run_app(AdjudicateApp(task, adjudication, queue, args.margin, args.with_judges))


def _print_table(task: Task, queue: list[Disagreement], margin: float, who: str) -> None:
    from tui_rater.domain import protocols

    table = new_table(
        f"{task.name}: {len(queue)} items where the {who} disagree beyond margin {margin:g}, most first",
        ["#", "item", "question", "ratings", "spread", "decided"],
    )
    for rank, found in enumerate(queue, start=1):
        for row, split in enumerate(found.splits):
            attribute = task.attribute(split.attribute)
            shown = protocols.of(attribute).format_value
            ratings = " · ".join(f"{rater} {shown(attribute, value)}" for rater, value in split.values)
            decided = found.decided.get(split.attribute)
            table.add_row(
                data(rank if row == 0 else ""),
                data(found.item.id if row == 0 else ""),
                data(split.attribute),
                data(ratings),
                data(f"{split.spread:g}"),
                data("" if decided is None else shown(attribute, decided)),
            )
    make_console().print(table)

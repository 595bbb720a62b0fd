"""Reports: the papers' tables; SPA setup."""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from tui_rater.cli.common import common_flags, make_console, open_study
from tui_rater.domain.errors import UserError


def add_parsers(sub, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "report",
        parents=[common],
        help="the papers' tables from this study's ratings",
        description="The tables each question's protocol calls for: Table 1 (mean/std/alpha/% exact per evaluator "
        "x system, Welch marks), Table 2 (Kendall tau humans vs each judge), rater pairs and Table 6 per writer, "
        "Table 3 (judge runs differing in variant or temperature), Table 12 (per-rater means per system); for "
        "pairwise answers verdict shares, kappa, position bias, Bradley-Terry and Chen et al.'s meta-evaluation; "
        "SPA's Table 1; each judge's readings and whether it is agreement-ready. JSON/CSV: one record per number.",
    )
    p.add_argument("--task", help="only this task (default: every task with ratings)")
    p.add_argument("--format", choices=("table", "markdown", "json", "csv"), default="table")
    p.add_argument(
        "--spa-tau",
        type=float,
        default=1.1,
        help="SPA: exclude annotators with P[X>Y] + P[Y>X] above this (default 1.1)",
    )
    p.add_argument("--no-spa-filter", action="store_true", help="SPA: keep every annotator")
    p.add_argument("--out", type=Path, help="write to this file instead of the terminal")
    p.set_defaults(run=cmd_report)

    p = sub.add_parser(
        "spa",
        parents=[common],
        help="system-level probabilistic assessment (SPA)",
        description="Ethayarajh & Jurafsky (2022) §5.2. `spa setup` draws packets of m prompts that "
        "every system answered; rate them with `annotate --task spa`, judge them with "
        "`judge --task spa`, and see the results in `report --task spa`.",
    )
    spa_sub = p.add_subparsers(dest="spa_command", metavar="SUBCOMMAND")
    q = spa_sub.add_parser(
        "setup", parents=[common_flags(nested=True)], help="create SPA packets from the study's stories"
    )
    q.add_argument("--systems", required=True, help="comma-separated systems (the items' `system` values)")
    q.add_argument("--m", type=int, default=5, help="prompts per packet (default 5; the paper: m >= 4)")
    q.add_argument("--packets", type=int, default=1, help="packets to create, one per annotator (default 1)")
    q.add_argument("--seed", type=int, default=0)
    q.add_argument("--source-task", default="story", help="the task whose prompt + story items to use")
    q.add_argument("--name", default="spa", help="the SPA task's name (default: spa)")
    q.add_argument(
        "--pairs",
        choices=("all", "chain"),
        default="all",
        help="compare every pair of systems, or each with the next in --systems order",
    )
    q.add_argument("--no-likert", action="store_true", help="skip the standard protocol's Likert ratings")
    q.set_defaults(run=cmd_spa_setup)
    p.set_defaults(run=lambda args, settings: (p.print_help(), 2)[1])


def cmd_report(args, settings) -> int:
    from tui_rater.service.reports import build_reports
    from tui_rater.stats import render

    study = open_study(args, settings, create=False)
    tau = None if args.no_spa_filter else args.spa_tau
    reports = build_reports(study, [args.task] if args.task else None, tau)
    if args.format == "table" and not args.out:
        console = make_console()
        for name, records in reports.items():
            console.print(render.to_rich(records, name) if records else f"{name}: no ratings yet")
        return 0
    if args.format == "json":
        text = render.to_json(reports, str(study.path))
    elif args.format == "csv":
        text = render.to_csv(reports)
    elif args.format == "markdown":
        text = "\n".join(render.to_markdown(records, name) for name, records in reports.items())
    else:
        from rich.console import Console

        console = Console(record=True, width=160, file=io.StringIO())
        for name, records in reports.items():
            console.print(render.to_rich(records, name))
        text = console.export_text()
    if args.out:
        try:
            args.out.write_text(text, encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot write {args.out}: {exc.strerror}") from None
        print(f"wrote the report to {args.out}")
    else:
        sys.stdout.write(text + ("" if text.endswith("\n") else "\n"))
    return 0


def cmd_spa_setup(args, settings) -> int:
    from tui_rater.store import spa

    study = open_study(args, settings, create=False)
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    result = spa.setup(
        study,
        systems,
        m=args.m,
        packets=args.packets,
        seed=args.seed,
        source_task=args.source_task,
        name=args.name,
        pairs=args.pairs,
        likert=not args.no_likert,
    )
    writers = ", ".join(f"writer {letter} = {system}" for letter, system in sorted(result["writers"].items()))
    print(
        f"task {result['task']}: {result['packets']} packets of {args.m} prompts ({result['eligible_prompts']} "
        f"prompts answered by every system), {result['questions']} questions each; {writers} (hidden from raters)"
    )
    print(
        f"next: tui-rater annotate --task {result['task']} --annotator NAME   |   "
        f"tui-rater judge --task {result['task']} --model SPEC"
    )
    return 0

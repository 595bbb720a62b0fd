"""Reports: the papers' tables; SPA setup."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from tui_rater.cli.common import (
    RAW_CSV_HELP,
    Subparsers,
    common_flags,
    data,
    formula_note,
    lead_only,
    make_console,
    open_study,
    real,
    say,
    whole,
)
from tui_rater.domain.decoding import MAX_SEED
from tui_rater.domain.display import safe_text
from tui_rater.domain.errors import UserError
from tui_rater.service.report_command import FORMATS

if TYPE_CHECKING:
    from collections.abc import Callable

    from tui_rater.config import Settings
    from tui_rater.service.report_command import ReportRequest

# the kinds of raters of stats/sections/settings.py (EPSILON_FOR_RATERS), named here so that building the
# parser imports no statistics (a test checks they agree)
RATER_KINDS = ("expert", "skilled", "crowd")
# the report's format named by the extension of --out (as `export` takes its format from the file name)
FORMAT_OF_SUFFIX = {
    ".html": "html",
    ".htm": "html",
    ".md": "markdown",
    ".markdown": "markdown",
    ".json": "json",
    ".csv": "csv",
    ".txt": "table",
}


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "report",
        parents=[common],
        help="the papers' tables from this study's ratings",
        description="The tables each question's protocol calls for: Table 1 (mean/std/alpha/% exact per evaluator "
        "x system, Welch marks), Table 2 (Kendall tau humans vs each judge), rater pairs and Table 6 per writer, "
        "Table 3 (judge runs differing in variant or temperature), Table 12 (per-rater means per system); for "
        "pairwise answers verdict shares, kappa, position bias, Bradley-Terry and Chen et al.'s meta-evaluation; "
        "SPA's Table 1; each judge's readings and whether it is agreement-ready; each judge's bias card (leniency, "
        "length slope, position bias, self-preference with --family); whether a judge may replace the "
        "human raters (the alternative annotator test: omega, verdict, rho, at margin --epsilon), bias-corrected "
        "system means with a judge on every item and humans on a sample (prediction-powered inference), and how "
        "both converge as ratings arrive (docs/VERDICT.md). JSON/CSV: one record per number; html: one "
        "self-contained file with the tables and plots.",
    )
    p.add_argument("--task", help="only this task (default: every task with ratings)")
    p.add_argument(
        "--format",
        choices=FORMATS,
        help="default: from the extension of --out (.html/.htm, .md/.markdown, .json, .csv; text tables "
        "otherwise), else table; html: one self-contained file with the tables and plots (works offline)",
    )
    p.add_argument(
        "--spa-tau",
        type=real(0, 2),
        default=1.1,
        help="SPA: exclude annotators with P[X>Y] + P[Y>X] above this (default 1.1)",
    )
    p.add_argument("--no-spa-filter", action="store_true", help="SPA: keep every annotator")
    p.add_argument(
        "--raters",
        choices=RATER_KINDS,
        default="expert",
        help="who the human raters are, for the alt-test's default margin ε (Calderon et al.: expert 0.2, "
        "skilled 0.15, crowd 0.1; default expert)",
    )
    p.add_argument(
        "--epsilon",
        type=float,
        help="the alt-test's cost-benefit margin ε in [0, 1): how much worse than a human the judge may be "
        "and still replace one (default: from --raters)",
    )
    p.add_argument(
        "--reference",
        choices=("humans", "adjudicated", "model"),
        default="humans",
        help="the humans' score of an item that the judges are compared with: their ratings combined (default), or "
        "adjudicated: the value `tui-rater adjudicate` decided, where there is one (the adjudicator is never "
        "counted as a rater); or model: the consensus the reliability model of the people implies (Dawid-Skene, "
        "or the ordinal model for scores; the judges left out of it)",
    )
    p.add_argument(
        "--exclude-annotator",
        action="append",
        default=[],
        metavar="NAME",
        help="leave this annotator's ratings out of every table, verdict and system score (e.g. one `progress` "
        "marks careless); repeat for several; the report files say so",
    )
    p.add_argument(
        "--family",
        action="append",
        default=[],
        metavar="JUDGE=SYSTEM,SYSTEM",
        help="the systems made by the judge's own model family: the bias card then shows the judge's "
        "self-preference (its leniency on them minus on the others); repeat for several judges",
    )
    p.add_argument("--out", type=Path, help="write to this file instead of the terminal")
    p.add_argument("--raw-csv", action="store_true", help=RAW_CSV_HELP)
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
    q.add_argument("--m", type=whole(2, 1000), default=5, help="prompts per packet (default 5; the paper: m >= 4)")
    q.add_argument(
        "--packets",
        type=whole(1, 10**9),
        default=1,
        help="packets to create, one per annotator (default 1, at most 10,000)",
    )
    q.add_argument("--seed", type=whole(0, MAX_SEED), default=0)
    q.add_argument("--source-task", default="story", help="the task whose prompt + story items to use")
    q.add_argument("--name", default="spa", help="the SPA task's name (default: spa)")
    q.add_argument(
        "--pairs",
        choices=("all", "chain"),
        default="all",
        help="compare every pair of systems, or each with the next in --systems order",
    )
    q.add_argument("--no-likert", action="store_true", help="skip the standard protocol's Likert ratings")
    lead_only(q, lambda args: "set up SPA packets")
    q.set_defaults(run=cmd_spa_setup)

    def help_only(args: argparse.Namespace, settings: Settings) -> int:
        p.print_help()
        return 2

    p.set_defaults(run=help_only)


def _request(args: argparse.Namespace) -> ReportRequest:
    """The flags as the use case's one request; a bad value is one sentence before the study is opened."""
    from tui_rater.service.report_command import ReportRequest

    request = ReportRequest(
        task=args.task,
        out=args.out,
        raw_csv=args.raw_csv,
        spa_tau=None if args.no_spa_filter else args.spa_tau,
        epsilon=args.epsilon,
        raters=args.raters,
        reference=args.reference,
        excluded_annotators=tuple(args.exclude_annotator),
        families=families(args.family),
    )
    request.settings()
    return replace(request, format=report_format(args.format, args.out))


def families(given: list[str]) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``--family JUDGE=SYS,SYS`` as (judge, systems) pairs; a malformed or repeated one is one sentence."""
    found: dict[str, tuple[str, ...]] = {}
    for text in given:
        judge, equals, listed = text.partition("=")
        systems = tuple(dict.fromkeys(s.strip() for s in listed.split(",") if s.strip()))
        if not equals or not judge.strip() or not systems:
            raise UserError(f"--family takes JUDGE=SYSTEM,SYSTEM (a judge and its family's systems), not {text!r}")
        if judge.strip() in found:
            raise UserError(f"--family names the judge {judge.strip()!r} twice: list all its systems once")
        found[judge.strip()] = systems
    return tuple(found.items())


def report_format(asked: str | None, out: Path | None) -> str:
    """The report's format: --format, else the extension of --out, else text tables; never both disagreeing."""
    named = FORMAT_OF_SUFFIX.get(out.suffix.lower()) if out is not None else None
    if asked is not None and named is not None and asked != named:
        raise UserError(
            f"--format {asked} contradicts --out {out}, whose extension names {named}: "
            "drop --format or change the file's extension"
        )
    return asked or named or "table"


def cmd_report(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.service.report_command import report

    request = _request(args)
    study = open_study(args, settings, create=False, readonly=True)
    progress = _html_progress(sys.stderr.isatty()) if request.format == "html" else None
    output = report(study, request, notes=lambda text: say(text, err=True), progress=progress)
    if output.text is None:
        console = make_console()
        for shown in output.shown:
            console.print(data(shown) if isinstance(shown, str) else shown)
        return 0
    formula_note(output.neutralised)
    if output.written is not None:
        say(f"wrote the report to {output.written}")
    else:
        # stdout is a terminal, or a pipe that usually ends in one (`| less -R`): literal, no escapes
        text = output.text
        sys.stdout.write(safe_text(text) + ("" if text.endswith("\n") else "\n"))
    return 0


def _html_progress(terminal: bool) -> Callable[[int, int, str], None]:
    """The HTML report's figures as they are drawn, on stderr: one line rewritten in place on a terminal, else
    a plain line at the start and about every tenth of the figures (a log stays short)."""

    def progress(done: int, total: int, what: str) -> None:
        if terminal:
            line = safe_text(f"report: figure {min(done + 1, total)}/{total} {what}", inline=True)[:78]
            end = "\n" if done == total else ""
            sys.stderr.write(f"\r\x1b[K{line if done < total else f'report: {total} figures drawn'}{end}")
            sys.stderr.flush()
            return
        step = max(1, total // 10)
        if done == total or done % step == 0:
            say(f"report: {done}/{total} figures drawn" if done else f"report: drawing {total} figures …", err=True)

    return progress


def cmd_spa_setup(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.service.spa import SpaSetup, set_up_spa

    study = open_study(args, settings, create=False)
    systems = tuple(s.strip() for s in args.systems.split(",") if s.strip())
    request = SpaSetup(
        systems,
        m=args.m,
        packets=args.packets,
        seed=args.seed,
        source_task=args.source_task,
        name=args.name,
        pairs=args.pairs,
        likert=not args.no_likert,
    )
    result = set_up_spa(study, request)
    writers = ", ".join(f"writer {letter} = {system}" for letter, system in sorted(result["writers"].items()))
    say(
        f"task {result['task']}: {result['packets']} packets of {args.m} prompts ({result['eligible_prompts']} "
        f"prompts answered by every system), {result['questions']} questions each; {writers} (hidden from raters)"
    )
    say(
        f"next: tui-rater annotate --task {result['task']} --annotator NAME   |   "
        f"tui-rater judge --task {result['task']} --model SPEC"
    )
    return 0

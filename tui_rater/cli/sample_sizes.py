"""``tui-rater sample-size``: before (or during) a study, how many items people must rate for an interval of a
given half-width on each question, with the judge's help (PPI++ and the distribution-powered estimates) and
without it."""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING

from tui_rater.cli.common import Subparsers, data, make_console, new_table, open_study, real, say, whole

if TYPE_CHECKING:
    from rich.console import Console

    from tui_rater.config import Settings
    from tui_rater.service.sample_size import Need, Planned


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "sample-size",
        parents=[common],
        help="from a pilot: how many items people must rate for a target interval, with the judge (PPI) and without",
        description="Plan a study from a pilot: the people's ratings so far on a few dozen items and a judge's "
        "ratings (or distributions) on every item. For each question and judge, the number of human-rated items "
        "the humans-only mean, PPI++, recalibrated PPI++ and stratified PPI++ (the report's ppi_distribution "
        "estimates) need for an interval (95% by default) of +/- HALF_WIDTH scale points, how many fewer than "
        "humans only, and the range of each number over the 95% interval of the pilot's variance (plan with its "
        "upper end to be "
        "safe). Assumes the items people rate are drawn uniformly at random from those the judge rated "
        "(docs/VERDICT.md).",
    )
    p.add_argument("--task", required=True, help="the task to plan for")
    p.add_argument(
        "--half-width",
        required=True,
        type=real(0, 1e6, low_open=True),
        metavar="H",
        help="the target half-width of the interval of the mean human rating, in scale points (e.g. 0.1)",
    )
    p.add_argument(
        "--confidence",
        type=real(0.5, 0.999),
        default=0.95,
        help="the interval's confidence level (default 0.95)",
    )
    p.add_argument("--attribute", action="append", default=[], help="only this question (repeatable)")
    p.add_argument("--judge", action="append", default=[], help="only this judge (repeatable; its name as reported)")
    p.add_argument(
        "--new-items",
        type=whole(0, 10**9),
        metavar="M",
        help="the stratified methods: allocate M new human-rated items across their strata (Neyman: in proportion "
        "to each stratum's size times the pilot's SD of human - lambda * judge there); default: the number each "
        "method needs for the half-width, less the pilot. `assign --allocate M` draws them",
    )
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(run=cmd_sample_size)


def cmd_sample_size(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.service.sample_size import ASSUMPTIONS, SampleSizeOptions, sample_size

    study = open_study(args, settings, create=False, readonly=True)
    options = SampleSizeOptions(
        args.task, args.half_width, args.confidence, tuple(args.attribute), tuple(args.judge), args.new_items
    )
    rows = sample_size(study, options)
    if args.format == "json":
        found = {
            "task": args.task,
            "half_width": args.half_width,
            "confidence": args.confidence,
            "assumptions": ASSUMPTIONS,
            "plans": [row.as_dict() for row in rows],
        }
        print(json.dumps(found, indent=2))  # ensure_ascii: bidi and C1 control characters from names as \u escapes
        return 0
    _table(args, rows)
    say(f"assumes {ASSUMPTIONS}")
    return 0


def _n(value: int | None, need: Need) -> str:
    if value is not None:
        return str(value)
    return f"> {need.beyond}" if need.beyond is not None else "n/a"


def _fewer(row: Planned) -> str:
    if row.method == "humans only":
        return ""
    shown = "n/a" if row.fewer is None else f"{row.fewer:+d}"
    return shown + ("" if row.fewer_cautious is None else f" ({row.fewer_cautious:+d})")


def _table(args: argparse.Namespace, rows: list[Planned]) -> None:
    console = make_console()
    table = new_table(
        # the level as asked: "{:.0%}" showed 0.975 as 98% and 0.999 as 100%
        f"Human-rated items needed for a {args.confidence * 100:g}% interval of ±{args.half_width:g} "
        f"(task {args.task})",
        [
            "question",
            "judge",
            "method",
            "pilot: rated / items",
            "items to rate [pilot's 95%]",
            "fewer (cautious)",
            "note",
        ],
    )
    for column in table.columns:
        column.overflow = "fold"  # names from data in full, never cut to "…"
    for row in rows:
        need = row.need
        table.add_row(
            data(row.attribute),
            data(row.judge),
            data(row.method),
            f"{row.rated} / {row.items}",
            f"{_n(need.n, need)} [{_n(need.low, need)}, {_n(need.high, need)}]",
            _fewer(row),
            data(need.note),
        )
    console.print(table)
    say(
        "fewer: items fewer than the humans-only mean needs for the same interval; (cautious): the same at the "
        "upper ends of the pilot's 95% ranges"
    )
    for row in rows:
        if row.allocation is not None:
            _allocation_table(console, row)


def _half(value: float | None) -> str:
    return "n/a" if value is None else f"±{value:.3f}"


def _allocation_table(console: Console, row: Planned) -> None:
    found = row.allocation
    assert found is not None
    table = new_table(
        f"Neyman allocation of {found.new} new human-rated items ({found.note}): {row.method}, question "
        f"{row.attribute}, judge {row.judge}",
        ["stratum", "items N_h", "pilot rated", "pilot SD of human − λ·judge", "new", "rated then"],
    )
    for column in table.columns:
        column.overflow = "fold"
    for s in found.strata:
        table.add_row(data(s.name), str(s.items), str(s.rated), f"{s.sd:.3f}", str(s.new), str(s.total))
    console.print(table)
    say(
        f"λ = {found.lam:.2f}; expected half-width with this allocation {_half(found.half_width)}, with the same "
        f"number drawn uniformly {_half(found.half_width_uniform)}"
    )

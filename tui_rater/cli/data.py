"""Data commands: tasks, import, import-ratings, export, info."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tui_rater.cli.common import (
    RAW_CSV_HELP,
    Subparsers,
    data,
    db_exists,
    formula_note,
    lead_only,
    make_console,
    new_table,
    open_study,
    say,
)
from tui_rater.domain.display import safe_text

if TYPE_CHECKING:
    from tui_rater.config import Settings
    from tui_rater.service.data import ImportResult
    from tui_rater.service.study import Study


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("tasks", parents=[common], help="list the tasks, their attributes and scales")
    p.add_argument("--verbose", "-v", action="store_true", help="also print each question verbatim")
    p.set_defaults(run=cmd_tasks)

    p = sub.add_parser(
        "import",
        parents=[common],
        help="import items from CSV, TSV, JSONL or Parquet",
        description="Import items for one task. Columns: id and system (optional) and the task's "
        "fields; see `tui-rater tasks`. Re-importing a file adds nothing twice.",
    )
    p.add_argument("file", type=Path)
    p.add_argument("--task", required=True, help="the task the items are for")
    p.add_argument(
        "--map",
        action="append",
        metavar="NAME=COLUMN",
        default=[],
        help="read the task's NAME from the file's COLUMN (repeatable), e.g. --map story=text",
    )
    p.add_argument("--ignore-extra", action="store_true", help="skip columns the task does not use")
    lead_only(p, lambda args: "import items")
    p.set_defaults(run=cmd_import)

    p = sub.add_parser(
        "import-ratings",
        parents=[common],
        help="import existing ratings (long format)",
        description="Columns: item, rater, attribute, value; optional kind (human|llm), "
        "sample (0, 1, ...), task (when an item id exists in several tasks).",
    )
    p.add_argument("file", type=Path)
    p.add_argument(
        "--kind",
        choices=("human", "llm"),
        default="human",
        help="rater kind for rows without a 'kind' column (default: human)",
    )
    lead_only(p, lambda args: "import ratings")
    p.set_defaults(run=cmd_import_ratings)

    p = sub.add_parser(
        "export",
        parents=[common],
        help="export items, ratings or judgements (format by extension)",
        description="judgements: every judge rating with its whole record (reply, earlier replies, seed, "
        "answered letter, pair order, distribution, scale mass, top-k, parse status, finish reason, judge label).",
    )
    p.add_argument(
        "--what",
        choices=("items", "ratings", "wide", "judgements", "notes"),
        default="ratings",
        help="notes: every skip, flag, comment, reveal review and adjudication, with who and when (a flag taken "
        "back or a comment edited keeps its row, in_force false)",
    )
    p.add_argument("--task", help="only this task")
    p.add_argument("--out", required=True, type=Path, help="the file to write: .csv, .tsv, .jsonl or .parquet")
    p.add_argument("--raw-csv", action="store_true", help=RAW_CSV_HELP)
    p.set_defaults(run=cmd_export)

    p = sub.add_parser("info", parents=[common], help="counts of items, raters, ratings and queued jobs")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=cmd_info)


def cmd_tasks(args: argparse.Namespace, settings: Settings) -> int:
    from rich.table import Table
    from rich.text import Text

    from tui_rater.domain.tasks import TaskRegistry

    if db_exists(args, settings):  # include the custom tasks stored in the study (SPA, TOML tasks)
        registry = open_study(args, settings, create=False, readonly=True).tasks
    else:
        registry = TaskRegistry.with_files([*settings.task_files, *args.task_file])
    table = Table(title="Tasks", show_lines=args.verbose)
    table.add_column("task", style="bold")
    table.add_column("item columns")
    table.add_column("attributes (scale)")
    if args.verbose:
        table.add_column("questions, verbatim")
    for task in registry:
        # one line per attribute: each piece literal, whatever the task file or study holds
        attrs = Text("\n").join(data(f"{a.name} ({a.scale.describe()})") for a in task.attributes)
        row = [data(task.name), data(", ".join(task.fields)), attrs]
        if args.verbose:
            row.append(Text("\n").join(Text(safe_text(a.question)) for a in task.attributes))
        table.add_row(*row)
    make_console().print(table)
    for error in registry.unusable.values():  # listed without them; not exit 0, the listing is not whole
        say(f"tui-rater: error: {error}", err=True)
    return 2 if registry.unusable else 0


def import_items_file(study: Study, path: Path, task_name: str, mapping: list[str], ignore_extra: bool) -> ImportResult:
    from tui_rater.service.data import import_items_file as import_file

    return import_file(study, path, task_name, mapping, ignore_extra)


def cmd_import(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.domain.tasks import TaskRegistry
    from tui_rater.service.data import add_items, read_items

    # Validate the whole file before the study is opened, so a bad file neither changes
    # nor creates it; then read it again as it is written, a batch at a time (memory independent
    # of its length, issue 35). A custom task may live in the study file itself.
    if db_exists(args, settings):
        study = open_study(args, settings, create=False)
        task = study.task(args.task)
    else:
        study, task = None, TaskRegistry.with_files([*settings.task_files, *args.task_file]).get(args.task)
    items = read_items(args.file, task, args.map, args.ignore_extra)
    fresh = study is None
    if study is None:
        study = open_study(args, settings)
    done = add_items(study, task, items, str(args.file), fresh=fresh)  # a failed first import leaves no study
    say(f"{args.file}: {done.added} new items for task {args.task}, {done.skipped} already present -> {study.path}")
    if done.note:
        say(f"note: {done.note}", err=True)
    return 0


def cmd_import_ratings(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.service.data import check_ratings_file, import_ratings_file

    check_ratings_file(args.file)  # the file's encoding and header, before the study is opened
    study = open_study(args, settings, create=False)
    result = import_ratings_file(study, args.file, args.kind)
    say(f"{args.file}: {result.added} new ratings, {result.skipped} already present -> {study.path}")
    return 0


def cmd_export(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.service.data import ExportRequest, check_export_target, export

    check_export_target(args.out)
    study = open_study(args, settings, create=False, readonly=True)
    done = export(study, ExportRequest(args.what, args.out, args.task, args.raw_csv))
    say(f"wrote {done.rows} rows of {args.what} to {args.out}")
    formula_note(done.neutralised)
    return 0


def cmd_info(args: argparse.Namespace, settings: Settings) -> int:
    import json

    study = open_study(args, settings, create=False, readonly=True)
    info = study.info()
    if args.json:
        print(json.dumps(info, indent=2))  # ensure_ascii: control characters are written as \u001b
        return 0
    print_info(info)
    return 0


def print_info(info: dict[str, Any]) -> None:
    console = make_console()
    console.print(data(info["path"], style="bold") + data(f": {info['ratings']} ratings"))
    items = new_table("Items", ["task", "system", "items"])
    for row in info["items"]:
        items.add_row(data(row["task"]), data(row["system"] or "-"), data(row["n"]))
    console.print(items)
    if info["raters"]:
        raters = new_table("Raters", ["rater", "label", "kind", "ratings"])
        for row in info["raters"]:
            label = row["label"] if row["label"] != row["name"] else ""  # a judge's (`tui-rater judges`)
            raters.add_row(data(row["name"]), data(label), data(row["kind"]), data(row["ratings"]))
        console.print(raters)
    jobs = ", ".join(f"{n} {status}" for status, n in info["jobs"].items()) or "none"
    console.print(data(f"Judge jobs: {jobs}"))

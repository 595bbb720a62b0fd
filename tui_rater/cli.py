"""The ``tui-rater`` command: parses flags and calls the layers below.

Headless commands never import Textual (a test checks ``sys.modules``).
"""

from __future__ import annotations

import argparse
import io
import sys
from pathlib import Path

from tui_rater.config import DEFAULT_DB, Settings, load_settings
from tui_rater.errors import UserError

REPO_SAMPLE_DATA = Path(__file__).resolve().parent.parent / "sample_data"

# what `tui-rater demo` imports: (file, task, column mapping, ignore extra columns)
SAMPLE_IMPORTS = (
    ("stories.csv", "story", [], False),
    ("titles.csv", "title-fluency", ["title=attacked"], True),
    ("titles.csv", "title-meaning", [], True),
    ("hanna_items.csv", "hanna", [], False),
)


def _parser() -> argparse.ArgumentParser:
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--db",
        metavar="PATH",
        help=f"the study file (default: ./{DEFAULT_DB}, or $TUI_RATER_DB, or 'db' in the config file)",
    )
    common.add_argument(
        "--task-file",
        action="append",
        metavar="TOML",
        default=[],
        help="load custom tasks from a TOML file (repeatable)",
    )
    common.add_argument(
        "--shared", action="store_true", help="create the study file group-writable (several Unix users on one host)"
    )

    parser = argparse.ArgumentParser(
        prog="tui-rater",
        description="Rate texts with the keyboard while LLM judges rate the same texts; compare them.",
        epilog="Run `tui-rater COMMAND --help` for a command's flags. Data stays in one SQLite file.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {_version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    p = sub.add_parser("demo", parents=[common], help="import the bundled sample data and open the app on it")
    p.add_argument("--annotator", help="your rater name (default: $TUI_RATER_ANNOTATOR, config, or $USER)")
    p.add_argument("--no-app", action="store_true", help="only import and print what the file holds")
    p.set_defaults(run=cmd_demo)

    p = sub.add_parser(
        "annotate",
        parents=[common],
        help="rate items with the keyboard (the annotation app)",
        description="Open the annotation app. Keys: 1-5 rate, up/down question, left/right item, "
        "u undo, s skip, f flag, c comment, g go to, ? help, q quit.",
    )
    p.add_argument("--annotator", help="your rater name (default: $TUI_RATER_ANNOTATOR or 'annotator' in config)")
    p.add_argument("--task", help="the task to rate (default: the study's only task, or 'story')")
    p.add_argument(
        "--order",
        choices=("imported", "random", "grouped"),
        default="imported",
        help="item order: as imported, random (stable per annotator and --seed), grouped by system",
    )
    p.add_argument("--seed", type=int, default=0, help="seed for --order random")
    p.add_argument(
        "--blind", action=argparse.BooleanOptionalAction, default=True, help="hide who wrote each item (default: on)"
    )
    p.add_argument(
        "--reveal",
        action="store_true",
        help="after each item, show the other raters' ratings and record agree/disagree",
    )
    p.add_argument(
        "--prompt-always",
        action="store_true",
        help="show the prompt for every question (default: with relevance only, as in the paper)",
    )
    p.add_argument(
        "--judge",
        action="append",
        default=[],
        metavar="SPEC",
        help="run an LLM judge in the background (a .gguf path or api:<model>; repeatable)",
    )
    p.add_argument("--base-url", help="API judges: the server URL")
    p.set_defaults(run=cmd_annotate)

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
    p.set_defaults(run=cmd_import_ratings)

    p = sub.add_parser("export", parents=[common], help="export items or ratings (format by extension)")
    p.add_argument("--what", choices=("items", "ratings", "wide"), default="ratings")
    p.add_argument("--task", help="only this task")
    p.add_argument("--out", required=True, type=Path, help="the file to write: .csv, .tsv, .jsonl or .parquet")
    p.set_defaults(run=cmd_export)

    p = sub.add_parser("info", parents=[common], help="counts of items, raters, ratings and queued jobs")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=cmd_info)

    p = sub.add_parser(
        "judge",
        parents=[common],
        help="ask an LLM judge to rate the items (headless, resumable)",
        description="Enqueue the judge's missing work and drain the queue with a progress bar. "
        "Safe to interrupt and re-run: finished ratings are kept, the rest resumes.",
    )
    _judge_flags(p)
    p.add_argument("--task", help="only this task (default: every task in the study)")
    p.add_argument("--workers", type=int, default=None, help="parallel workers (default: 1 local, 8 API)")
    p.add_argument("--limit", type=int, help="only the first N items of each task")
    p.set_defaults(run=cmd_judge)

    p = sub.add_parser("queue", parents=[common], help="show the judge queue; cancel or retry jobs")
    p.add_argument("--cancel", action="store_true", help="cancel queued and leased jobs")
    p.add_argument("--retry", action="store_true", help="queue failed and cancelled jobs again")
    p.add_argument("--rater", help="only this judge (its name as `queue` lists it)")
    p.set_defaults(run=cmd_queue)

    p = sub.add_parser(
        "report",
        parents=[common],
        help="the papers' tables from this study's ratings",
        description="Table 1 (mean/std/alpha/% exact per evaluator x system x attribute, Welch marks), "
        "Table 2 (Kendall tau human vs each LLM), rater pairs (Table 6), Table 3 when "
        "judge runs differ in variant or temperature. JSON/CSV: one record per number.",
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
    q = spa_sub.add_parser("setup", parents=[common], help="create SPA packets from the study's stories")
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

    p = sub.add_parser("reparse", parents=[common], help="re-apply the reply parser to stored judge replies")
    p.set_defaults(run=cmd_reparse)

    return parser


def _judge_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("judge")
    g.add_argument(
        "--model",
        required=True,
        metavar="SPEC",
        help="a .gguf file (local llama.cpp) or api:<model> (OpenAI-compatible server)",
    )
    g.add_argument(
        "--mode",
        default="text",
        choices=("text", "constrained", "distribution", "implicit"),
        help="text: free reply + parser (the paper); constrained: reply forced to a valid score; "
        "distribution: the scale tokens' probabilities, N samples drawn from them; "
        "implicit: Chen et al.'s yes/no Implicit Score (story-explicit)",
    )
    g.add_argument(
        "--variant",
        default=None,
        help="plain | persona | explain (Chiang & Lee §3.3.2); v1..v5 for the Chen et al. tasks",
    )
    g.add_argument("--samples", type=int, help="samples per question (default 3, as in the paper)")
    g.add_argument("--temperature", type=float, help="default 1.0")
    g.add_argument("--top-p", type=float, help="nucleus sampling p (default 0.9)")
    g.add_argument("--seed", type=int, default=0, help="base seed; sample k uses seed + k")
    g.add_argument(
        "--conversation",
        action="store_true",
        help="ask all of an item's questions in one chat, in order (the paper's ChatGPT setting)",
    )
    g.add_argument("--max-tokens", type=int, help="reply length limit (default 128)")
    g.add_argument("--max-retries", type=int, help="regenerations of a reply that does not parse (default 3)")
    g.add_argument("--n-ctx", type=int, help="local: context window in tokens (default 4096)")
    g.add_argument("--n-gpu-layers", type=int, help="local: layers to offload to CUDA/Metal (-1 = all)")
    g.add_argument("--chat-template", metavar="FILE", help="local: a Jinja chat template (default: the GGUF's)")
    g.add_argument("--base-url", help="API: the server, e.g. http://127.0.0.1:8080/v1 (default: OpenAI)")
    g.add_argument("--api-key-env", help="API: the environment variable holding the key (default OPENAI_API_KEY)")
    g.add_argument("--timeout", type=float, default=120.0, help="API: seconds to wait for a reply")


def judge_spec(args: argparse.Namespace, settings: Settings, task_names: list[str] | None = None):
    from tui_rater.judge.spec import JudgeSpec

    d = settings.judge
    template = None
    if args.chat_template:
        try:
            template = Path(args.chat_template).read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot read chat template {args.chat_template}: {exc.strerror}") from None
    chen = any(name in ("story-explicit", "story-pairwise") for name in task_names or [])
    variant = args.variant or ("v1" if chen else "plain")
    pick = lambda flag, default: default if flag is None else flag
    samples, temperature = d.samples, d.temperature
    if chen:
        # Chen et al.: greedy decoding for explicit scores and pairwise V1-V3; V5 (explicit) and
        # V4 (pairwise) sample five reasons with top-p and vote / average
        sampled = variant == "v5" or (variant == "v4" and "story-pairwise" in (task_names or []))
        samples, temperature = (5, 1.0) if sampled else (1, 0.0)
    return JudgeSpec(
        model=args.model,
        mode=args.mode,
        variant=variant,
        samples=pick(args.samples, samples),
        temperature=pick(args.temperature, temperature),
        top_p=pick(args.top_p, d.top_p),
        seed=args.seed,
        conversation=args.conversation,
        max_tokens=pick(args.max_tokens, d.max_tokens),
        max_retries=pick(args.max_retries, d.max_retries),
        n_ctx=pick(args.n_ctx, d.n_ctx),
        n_gpu_layers=pick(args.n_gpu_layers, d.n_gpu_layers),
        chat_template=template,
        base_url=args.base_url or d.base_url,
        api_key_env=args.api_key_env or d.api_key_env,
        timeout_s=args.timeout,
    ).validate()


def _version() -> str:
    from tui_rater import __version__

    return __version__


def _settings(args: argparse.Namespace) -> Settings:
    return load_settings()


def _db_path(args: argparse.Namespace, settings: Settings) -> str:
    return args.db or settings.db


_OPENED: list = []  # studies this command opened, closed (and checkpointed) on exit


def _open(args: argparse.Namespace, settings: Settings, create: bool = True):
    from tui_rater.store.study import Study

    task_files = [*settings.task_files, *getattr(args, "task_file", [])]
    study = Study.open(
        _db_path(args, settings), create=create, shared=getattr(args, "shared", False), task_files=task_files
    )
    _OPENED.append(study)
    return study


def _console():
    from rich.console import Console

    return Console(highlight=False)


# --- commands -------------------------------------------------------------------------------


def cmd_tasks(args, settings) -> int:
    from rich.table import Table

    from tui_rater.domain.tasks import TaskRegistry

    if _db_exists(args, settings):  # include the custom tasks stored in the study (SPA, TOML tasks)
        registry = _open(args, settings, create=False).tasks
    else:
        registry = TaskRegistry.with_files([*settings.task_files, *args.task_file])
    table = Table(title="Tasks", show_lines=args.verbose)
    table.add_column("task", style="bold")
    table.add_column("item columns")
    table.add_column("attributes (scale)")
    if args.verbose:
        table.add_column("questions, verbatim")
    for task in registry:
        attrs = "\n".join(f"{a.name} ({a.scale.describe()})" for a in task.attributes)
        row = [task.name, ", ".join(task.fields), attrs]
        if args.verbose:
            row.append("\n".join(a.question for a in task.attributes))
        table.add_row(*row)
    _console().print(table)
    return 0


def _import_items(study, path: Path, task_name: str, mapping: list[str], ignore_extra: bool):
    from tui_rater.store.io import import_items, parse_mapping

    task = study.task(task_name)
    return import_items(study, path, task, parse_mapping(mapping), ignore_extra=ignore_extra)


def cmd_import(args, settings) -> int:
    from tui_rater.domain.tasks import TaskRegistry
    from tui_rater.store.io import parse_mapping, prepare_items

    # Validate the whole file before the study is opened, so a bad file neither changes
    # nor creates it. A custom task may live in the study file itself.
    if _db_exists(args, settings):
        study = _open(args, settings, create=False)
        task = study.task(args.task)
    else:
        study, task = None, TaskRegistry.with_files([*settings.task_files, *args.task_file]).get(args.task)
    items = prepare_items(args.file, task, parse_mapping(args.map), ignore_extra=args.ignore_extra)
    study = study or _open(args, settings)
    added, skipped = study.add_items(task, items, source=str(args.file))
    print(f"{args.file}: {added} new items for task {args.task}, {skipped} already present -> {study.path}")
    return 0


def _db_exists(args, settings) -> bool:
    return Path(_db_path(args, settings)).exists()


def cmd_import_ratings(args, settings) -> int:
    from tui_rater.store.io import import_ratings, read_rows

    read_rows(args.file)
    study = _open(args, settings, create=False)
    result = import_ratings(study, args.file, default_kind=args.kind)
    print(f"{args.file}: {result.added} new ratings, {result.skipped} already present -> {study.path}")
    return 0


def cmd_export(args, settings) -> int:
    from tui_rater.store.io import file_format, items_frame, ratings_frame, wide_frame, write_frame

    file_format(args.out)
    study = _open(args, settings, create=False)
    if args.task:
        study.task(args.task)
    frame = {"items": items_frame, "ratings": ratings_frame, "wide": wide_frame}[args.what](study, args.task)
    write_frame(frame, args.out)
    print(f"wrote {frame.height} rows of {args.what} to {args.out}")
    return 0


def cmd_info(args, settings) -> int:
    import json

    study = _open(args, settings, create=False)
    info = study.info()
    if args.json:
        print(json.dumps(info, indent=2))
        return 0
    print_info(info)
    return 0


def print_info(info: dict) -> None:
    from rich.table import Table

    console = _console()
    console.print(f"[bold]{info['path']}[/bold]: {info['ratings']} ratings")
    items = Table(title="Items", title_justify="left")
    for column in ("task", "system", "items"):
        items.add_column(column)
    for row in info["items"]:
        items.add_row(row["task"], row["system"] or "-", str(row["n"]))
    console.print(items)
    if info["raters"]:
        raters = Table(title="Raters", title_justify="left")
        for column in ("rater", "kind", "ratings"):
            raters.add_column(column)
        for row in info["raters"]:
            raters.add_row(row["name"], row["kind"], str(row["ratings"]))
        console.print(raters)
    jobs = ", ".join(f"{n} {status}" for status, n in info["jobs"].items()) or "none"
    console.print(f"Judge jobs: {jobs}")


def cmd_demo(args, settings) -> int:
    from tui_rater.store.io import import_ratings

    if not REPO_SAMPLE_DATA.is_dir():
        raise UserError(f"the sample data folder {REPO_SAMPLE_DATA} is missing; run from a clone of the repository")
    study = _open(args, settings)
    for filename, task, mapping, ignore_extra in SAMPLE_IMPORTS:
        result = _import_items(study, REPO_SAMPLE_DATA / filename, task, mapping, ignore_extra)
        print(f"{filename} -> {task}: {result.added} new, {result.skipped} already present")
    for filename in ("hanna_human_ratings.csv", "hanna_llm_ratings.csv"):
        result = import_ratings(study, REPO_SAMPLE_DATA / filename)
        print(f"{filename}: {result.added} new ratings, {result.skipped} already present")
    if args.no_app:
        print_info(study.info())
        return 0
    import getpass

    annotator = args.annotator or settings.annotator or getpass.getuser() or "annotator"
    return _run_app(args, settings, study, "story", annotator)


def cmd_annotate(args, settings) -> int:
    study = _open(args, settings, create=False)
    annotator = args.annotator or settings.annotator
    if not annotator:
        raise UserError("say who is rating: --annotator NAME (or $TUI_RATER_ANNOTATOR, or 'annotator' in the config)")
    task = args.task
    if task is None:
        names = study.item_task_names()
        if not names:
            raise UserError(f"{study.path} holds no items; import some first")
        task = names[0] if len(names) == 1 else ("story" if "story" in names else None)
        if task is None:
            raise UserError(f"the study holds several tasks ({', '.join(names)}); choose one with --task")
    return _run_app(args, settings, study, task, annotator)


def _run_app(args, settings, study, task: str, annotator: str) -> int:
    from tui_rater.store.session import AnnotationSession

    session = AnnotationSession.open(
        study, task, annotator, order=getattr(args, "order", "imported"), seed=getattr(args, "seed", 0)
    )
    judges = None
    specs = []
    for model in getattr(args, "judge", []):
        ns = argparse.Namespace(
            **{
                **{
                    k: None
                    for k in (
                        "mode",
                        "variant",
                        "samples",
                        "temperature",
                        "top_p",
                        "max_tokens",
                        "max_retries",
                        "n_ctx",
                        "n_gpu_layers",
                        "chat_template",
                        "api_key_env",
                    )
                },
                "model": model,
                "mode": "text",
                "seed": 0,
                "conversation": False,
                "timeout": 120.0,
                "base_url": getattr(args, "base_url", None),
            }
        )
        specs.append(judge_spec(ns, settings, [task]))
    if specs:
        from tui_rater.judge.runner import JudgeRunner

        judges = JudgeRunner(study, task, specs)
    from tui_rater.ui.app import AppOptions, make_app

    options = AppOptions(
        blind=getattr(args, "blind", True),
        reveal=getattr(args, "reveal", False),
        prompt_always=getattr(args, "prompt_always", False),
        keymap=settings.keys or None,
    )
    from tui_rater.ui.run import run_app

    # signals (SIGHUP, SIGTERM, SIGINT) and the saves still unsaved when the screen closes: see ui/run.py
    return run_app(make_app(session, options, judges))


def cmd_judge(args, settings) -> int:

    from tui_rater.domain.prompts import variants_for
    from tui_rater.judge import queue
    from tui_rater.judge.spec import provenance, rater_name
    from tui_rater.judge.worker import jobs_for, run_judge

    study = _open(args, settings, create=False)
    task_names = [args.task] if args.task else study.item_task_names()
    if not task_names:
        raise UserError(f"{study.path} holds no items; import some first")
    spec = judge_spec(args, settings, task_names)
    for name in task_names:
        task = study.task(name)
        if spec.variant not in variants_for(task):
            raise UserError(
                f"variant {spec.variant!r} does not apply to task {name!r} "
                f"(choose one of: {', '.join(variants_for(task))}); judge one task at a time with --task"
            )
        if spec.conversation and spec.mode == "distribution":
            raise UserError("--conversation works with --mode text or constrained")
    if args.workers is not None and not 1 <= args.workers <= 64:
        raise UserError("--workers must be between 1 and 64")
    workers = args.workers or (8 if spec.is_api else 1)
    if spec.is_api:
        spec.api_key()  # fail now, with one sentence, if there is no key
    config = provenance(spec)
    rater = study.judge(rater_name(spec, config), config)
    added = 0
    for name in task_names:
        task = study.task(name)
        keys = [item.key for item in study.items(name)][: args.limit]
        attributes, samples = jobs_for(task, spec)
        added += queue.enqueue(study, rater.id, keys, attributes, samples)
    total = queue.pending(study, rater.id)
    print(f"judge {rater.name}: {added} new jobs, {total} to run, {workers} worker(s)", file=sys.stderr)
    threads, progress, stop = run_judge(study.path, rater.id, spec, config, workers=workers)
    _watch(threads, progress, stop, total)
    if progress.fatal:
        raise UserError(f"the judge stopped: {progress.fatal.message}")
    left = queue.counts(study, rater.id)
    print(
        f"done: {progress.done} jobs ({progress.parse_failures} replies did not parse; "
        f"{progress.cached} answered from the store), failed: {left['failed']}, "
        f"still queued: {left['queued'] + left['leased']}"
    )
    return 1 if left["failed"] else 0


def _watch(threads, progress, stop, total: int) -> None:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

    columns = (
        TextColumn("[bold]judging"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]:.2f} jobs/s"),
        TimeRemainingColumn(),
        TextColumn("failed {task.fields[failed]}  retrying {task.fields[retried]}"),
    )
    try:
        with Progress(*columns, transient=False) as bar:
            task = bar.add_task("judge", total=total, rate=0.0, failed=0, retried=0)
            while any(t.is_alive() for t in threads):
                for t in threads:
                    t.join(timeout=0.2)
                elapsed = max(1e-9, __import__("time").monotonic() - progress.started)
                bar.update(
                    task,
                    completed=progress.done + progress.failed,
                    rate=progress.done / elapsed,
                    failed=progress.failed,
                    retried=progress.retried,
                )
            bar.update(task, completed=progress.done + progress.failed)
    except KeyboardInterrupt:
        stop.set()
        for t in threads:
            t.join(timeout=30)
        raise


def cmd_queue(args, settings) -> int:
    from rich.table import Table

    from tui_rater.judge import queue

    study = _open(args, settings, create=False)
    rater_id = None
    if args.rater:
        matches = [r for r in study.raters("llm") if r.name == args.rater]
        if not matches:
            raise UserError(f"no judge named {args.rater!r} in {study.path}")
        rater_id = matches[0].id
    if args.cancel:
        print(f"cancelled {queue.cancel(study, rater_id)} jobs")
    if args.retry:
        print(f"queued {queue.retry(study, rater_id)} jobs again")
    table = Table(title="Judge queue", title_justify="left")
    for column in ("judge", "queued", "leased", "done", "failed", "cancelled"):
        table.add_column(column)
    for rater in study.raters("llm"):
        if rater_id is not None and rater.id != rater_id:
            continue
        c = queue.counts(study, rater.id)
        if sum(c.values()):
            table.add_row(rater.name, *(str(c[k]) for k in ("queued", "leased", "done", "failed", "cancelled")))
    console = _console()
    console.print(table)
    failed = queue.failures(study)
    if failed:
        errors = Table(title="Recent failures", title_justify="left")
        for column in ("item", "attribute", "sample", "attempts", "error"):
            errors.add_column(column)
        for f in failed:
            errors.add_row(
                f"{f['task']}/{f['item']}",
                f["attribute"],
                str(f["sample"]),
                str(f["attempts"]),
                f"{f['error_kind']}: {f['last_error']}",
            )
        console.print(errors)
    return 0


def cmd_report(args, settings) -> int:
    from tui_rater.stats import render
    from tui_rater.stats.report import build_report

    study = _open(args, settings, create=False)
    names = [args.task] if args.task else study.item_task_names()
    for name in names:
        study.task(name)
    tau = None if args.no_spa_filter else args.spa_tau
    reports = {name: build_report(study, name, spa_tau=tau) for name in names}
    reports = {name: records for name, records in reports.items() if records or args.task}
    if not reports:
        raise UserError(f"{study.path} holds no ratings yet")
    if args.format == "table" and not args.out:
        console = _console()
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

    study = _open(args, settings, create=False)
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


def cmd_reparse(args, settings) -> int:
    from tui_rater.judge.worker import parse_reply
    from tui_rater.store.db import write

    study = _open(args, settings, create=False)
    rows = list(
        study.db.query(
            "SELECT r.id, r.attribute, r.raw, r.value, r.parse_status, i.task FROM ratings r "
            "JOIN items i ON i.key = r.item_key JOIN raters ra ON ra.id = r.rater_id "
            "WHERE ra.kind = 'llm' AND r.raw IS NOT NULL"
        )
    )
    changed = 0
    with write(study.db) as conn:
        for row in rows:
            attribute = study.task(row["task"]).attribute(row["attribute"])
            result = parse_reply(row["raw"], attribute, structured=row["raw"].lstrip().startswith("{"))
            status = "ok" if result.ok else result.failure
            if (result.value, status) != (row["value"], row["parse_status"]):
                conn.execute(
                    "UPDATE ratings SET value = ?, parse_status = ? WHERE id = ?", [result.value, status, row["id"]]
                )
                changed += 1
    print(f"re-parsed {len(rows)} stored replies: {changed} changed")
    return 0


# --- entry point ----------------------------------------------------------------------------


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        settings = _settings(args)
        for warning in settings.warnings:
            print(f"tui-rater: warning: {warning}", file=sys.stderr)
        return args.run(args, settings)
    except UserError as exc:
        print(f"tui-rater: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except BrokenPipeError:  # `tui-rater info | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("tui-rater: interrupted; everything acknowledged so far is saved", file=sys.stderr)
        return 130
    finally:
        while _OPENED:
            _OPENED.pop().close()


if __name__ == "__main__":
    sys.exit(main())

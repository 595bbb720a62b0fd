"""The annotation app: `annotate`, and `demo` on the bundled sample data."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

from tui_rater.cli.common import Subparsers, check_key_variable, db_path, lead_only, open_study, say, whole
from tui_rater.cli.data import import_items_file, print_info
from tui_rater.domain.decoding import MAX_SEED
from tui_rater.domain.errors import UserError

if TYPE_CHECKING:
    from tui_rater.config import Settings
    from tui_rater.service.judging import JudgeOptions
    from tui_rater.service.study import Study

REPO_SAMPLE_DATA = Path(__file__).resolve().parent.parent.parent / "sample_data"

# the demo opens where the comparison is alive: HANNA's three humans and a real LLM's ratings of the same stories,
# so the agreement pane (a) has numbers on the first screen (the stories have no judge ratings until one is run)
DEMO_TASK = "hanna"

# what `tui-rater demo` imports: (file, task, column mapping, ignore extra columns)
SAMPLE_IMPORTS: tuple[tuple[str, str, list[str], bool], ...] = (
    ("stories.csv", "story", [], False),
    ("titles.csv", "title-fluency", ["title=attacked"], True),
    ("titles.csv", "title-meaning", [], True),
    ("hanna_items.csv", "hanna", [], False),
)


def add_parsers(sub: Subparsers, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser(
        "demo",
        parents=[common],
        help=f"import the bundled sample data and open the app on {DEMO_TASK} (humans and an LLM already rated it)",
    )
    p.add_argument("--annotator", help="your rater name (default: $TUI_RATER_ANNOTATOR, config, or $USER)")
    p.add_argument("--no-app", action="store_true", help="only import and print what the file holds")
    lead_only(p, lambda args: "import the sample data")
    p.set_defaults(run=cmd_demo)

    p = sub.add_parser(
        "annotate",
        parents=[common],
        help="rate items with the keyboard (the annotation app)",
        description="Open the annotation app. Keys: 1-5 rate, up/down question, left/right item, "
        "u undo, s skip, f flag, c comment, g go to, ? help, q quit. With a team plan (`tui-rater assign`) "
        "it serves only your items.",
    )
    p.add_argument("--annotator", help="your rater name (default: $TUI_RATER_ANNOTATOR or 'annotator' in config)")
    p.add_argument("--task", help="the task to rate (default: the study's only task, or 'story')")
    p.add_argument(
        "--order",
        choices=("imported", "random", "grouped", "uncertain", "allocated"),
        default="imported",
        help="item order: as imported, random (stable per annotator and --seed), grouped by system, or "
        "uncertain: the items a judge is least sure of first, drawn at random with a probability that grows "
        "with its uncertainty (active sampling), so your ratings go where they change the answer and "
        "system scores estimated from them stay unbiased; never a plain most-uncertain-first list, which "
        "biases those estimates. For the agreement and the verdict on uncertain items; use random for a "
        "plain random sample; or allocated: only the items of the task's stratified draw (`assign --allocate`), "
        "in its order",
    )
    p.add_argument(
        "--uncertain-judge",
        metavar="NAME",
        help="--order uncertain: the judge whose uncertainty orders the items (default: the task's only judge)",
    )
    p.add_argument(
        "--seed", type=whole(0, MAX_SEED), default=0, help="seed for --order random / uncertain and --retest"
    )
    p.add_argument(
        "--retest",
        type=float,
        metavar="P",
        help="test-retest: show a share P (0 < P <= 1) of the items again later, blind (your first rating "
        "hidden) and spaced, mixed among new ones; the second rating is stored linked to the first, which "
        "stays the rating in force. Shows how well you agree with yourself (the agreement pane, key a)",
    )
    p.add_argument(
        "--retest-spacing",
        type=whole(0, 100_000),
        default=10,
        metavar="N",
        help="--retest: an item never comes back within the last N items you saw (default: 10)",
    )
    p.add_argument(
        "--replan",
        action="store_true",
        help="draw a new --order uncertain / --retest plan instead of continuing the stored one",
    )
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
    p.add_argument(
        "--base-url",
        action="append",
        default=[],
        metavar="URL",
        help="the server of each API --judge (api:<model>), in the same order; one per API judge (replicas of "
        "its model: their URLs in one value, separated by spaces)",
    )
    p.add_argument(
        "--api-key-env",
        action="append",
        default=[],
        metavar="NAME",
        help="the variable holding each API judge's key, in the same order (default: $OPENAI_API_KEY, which is "
        "sent to api.openai.com only)",
    )
    p.add_argument(
        "--judge-name",
        action="append",
        default=[],
        metavar="NAME",
        help="a name for each --judge, in the same order (as `judge --judge-name`); give none or one per --judge",
    )
    p.set_defaults(run=cmd_annotate)


def cmd_demo(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.service.data import import_ratings_file

    if not REPO_SAMPLE_DATA.is_dir():
        raise UserError(f"the sample data folder {REPO_SAMPLE_DATA} is missing; run from a clone of the repository")
    study = open_study(args, settings)
    for filename, task, mapping, ignore_extra in SAMPLE_IMPORTS:
        result = import_items_file(study, REPO_SAMPLE_DATA / filename, task, mapping, ignore_extra)
        say(f"{filename} -> {task}: {result.added} new, {result.skipped} already present")
    for filename in ("hanna_human_ratings.csv", "hanna_llm_ratings.csv"):
        result = import_ratings_file(study, REPO_SAMPLE_DATA / filename)
        say(f"{filename}: {result.added} new ratings, {result.skipped} already present")
    if args.no_app:
        print_info(study.info())
        return 0
    import getpass

    annotator = args.annotator or settings.annotator or getpass.getuser() or "annotator"
    say(f"opening task {DEMO_TASK}: stories rated by 3 people and an LLM (key a: how they agree)")
    return _run_app(args, settings, study, DEMO_TASK, annotator)


def cmd_annotate(args: argparse.Namespace, settings: Settings) -> int:
    from tui_rater.ui.parent import die_with_parent

    die_with_parent()  # an app `serve` started ends with it (and saves first)
    study = open_study(args, settings, create=False)
    annotator = args.annotator or settings.annotator
    if not annotator:
        raise UserError("say who is rating: --annotator NAME (or $TUI_RATER_ANNOTATOR, or 'annotator' in the config)")
    from tui_rater.service.annotate import pick_task

    task = pick_task(study, args.task)
    return _run_app(args, settings, study, task, annotator)


def _run_app(args: argparse.Namespace, settings: Settings, study: Study, task: str, annotator: str) -> int:
    from tui_rater.service import annotate as use

    request = use.AnnotateRequest(
        task=task,
        annotator=annotator,
        order=getattr(args, "order", "imported"),
        seed=getattr(args, "seed", 0),
        retest=getattr(args, "retest", None),
        spacing=getattr(args, "retest_spacing", 10),
        replan=getattr(args, "replan", False),
        reveal=getattr(args, "reveal", False),
        uncertain_judge=getattr(args, "uncertain_judge", None),
    )
    use.check_request(request)
    names, judges = getattr(args, "judge_name", []), getattr(args, "judge", [])
    if names and len(names) != len(judges):
        raise UserError(f"give one --judge-name per --judge ({len(judges)}), or none; {len(names)} given")
    if judges:  # checked before anything is stored (one sentence), started by the app
        request = replace(request, judges=_judge_options(args))
    annotation = use.open_annotation(study, request, settings.judge)
    from tui_rater.ui.app import AppOptions, make_app

    options = AppOptions(
        blind=getattr(args, "blind", True),
        reveal=request.reveal,
        prompt_always=getattr(args, "prompt_always", False),
        keymap=settings.keys or None,
        judge_specs=annotation.judge_specs,
    )
    from tui_rater.ui.run import run_app

    # signals (SIGHUP, SIGTERM, SIGINT) and the saves still unsaved when the screen closes: see ui/run.py
    code = run_app(make_app(annotation.session, options))
    if code == 0:  # quit with everything saved: what to do next, as commands to paste
        for line in next_steps(db_path(args, settings), task, annotator):
            say(line)  # (the file, task and annotator names are data: printed literally)
    return code


def _judge_options(args: argparse.Namespace) -> tuple[JudgeOptions, ...]:
    """The --judge flags (each with its own server and key variable, in order) as the judges' options."""
    from tui_rater.service.judging import JudgeOptions

    names = getattr(args, "judge_name", []) or [None] * len(args.judge)
    servers = _per_api_judge(args.judge, "--base-url", getattr(args, "base_url", []))
    variables = _per_api_judge(args.judge, "--api-key-env", getattr(args, "api_key_env", []))
    for variable in variables:
        check_key_variable(variable)
    return tuple(
        JudgeOptions(
            m,
            base_url=url.split()[0] if url and url.split() else None,
            replicas=tuple(url.split()[1:]) if url else (),  # a URL holds no space: replicas listed
            api_key_env=variable,
            judge_name=name,
        )
        for m, name, url, variable in zip(args.judge, names, servers, variables)
    )


def next_steps(db: str, task: str, annotator: str) -> list[str]:
    """What to do after rating, as exact commands for this study file and task (printed on quitting)."""
    from tui_rater.service.annotate import FIRST_JUDGE

    where = ["--db", db, "--task", task]
    return [
        "",
        "Next steps (copy and paste):",
        "  the papers' tables, and whether a judge may replace the human raters:",
        *_command(["report", *where]),
        "  add an LLM judge (a small real one, fetched once; or a .gguf or api:NAME):",
        *_command(["judge", *where, "--model", FIRST_JUDGE, "--mode", "constrained", "--limit", "20"]),
        "  rate on (it continues at your first unrated item):",
        *_command(["annotate", *where, "--annotator", annotator]),
    ]


def _command(words: list[str], width: int = 78) -> list[str]:
    """The command quoted for the shell, broken with backslashes to fit 80 columns (a line the terminal wraps
    pastes as it reads; a continued one pastes whole); a flag stays on the line of its value."""
    import shlex

    pieces: list[str] = []
    for word in map(shlex.quote, words):
        fits = len(pieces[-1]) + 1 + len(word) <= width - 8 if pieces else False
        if pieces and pieces[-1].startswith("--") and " " not in pieces[-1] and not word.startswith("--") and fits:
            pieces[-1] += " " + word
        else:
            pieces.append(word)
    lines, line = [], "    " + program()
    for piece in pieces:
        if len(line) + 1 + len(piece) > width - 2:
            lines.append(line + " \\")
            line = " " * max(2, min(6, width - 2 - len(piece))) + piece  # a long word (a model id) indents less
        else:
            line += " " + piece
    return [*lines, line]


def program() -> str:
    """How to run tui-rater again from here: ``tui-rater`` when that is on the PATH (or when run as ``python -m``),
    else the path it was started by (the README's ``.venv/bin/tui-rater``)."""
    import shlex
    import shutil
    import sys

    started = Path(sys.argv[0])
    if started.name != "tui-rater":
        return "tui-rater"
    found = shutil.which("tui-rater")
    if found and Path(found).resolve() == started.resolve():
        return "tui-rater"
    return shlex.quote(sys.argv[0])


def _per_api_judge(judges: list[str], flag: str, values: list[str]) -> list[str | None]:
    """A per-judge flag's values matched to the API judges (api:<model>) in order: each judge gets its
    own server and key, never another judge's (a key goes only where the user sent it)."""
    from tui_rater.service.judging import takes_server

    api = [takes_server(spec) for spec in judges]
    if values and len(values) != sum(api):
        raise UserError(
            f"give one {flag} per API judge ({sum(api)}), in the order of their --judge, or none; {len(values)} given"
        )
    given = iter(values)
    return [next(given, None) if served else None for served in api]

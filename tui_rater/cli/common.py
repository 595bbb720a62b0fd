"""What every command shares: the study file, the console, the judge flags."""

from __future__ import annotations

import argparse
import contextlib
import io
import math
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import fields
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

from tui_rater.config import DEFAULT_DB, JUDGE_LIMITS, Settings, load_settings
from tui_rater.domain.decoding import Decoding, default_of, flag_name
from tui_rater.domain.display import safe_text
from tui_rater.domain.errors import UserError
from tui_rater.domain.mode_names import MODE_NAMES

if TYPE_CHECKING:
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    from tui_rater.service.judging import JudgeOptions, JudgeReadiness
    from tui_rater.service.study import Study


# what ``add_subparsers`` returns, as each command module's ``add_parsers`` takes it (not subscriptable at run time)
Subparsers: TypeAlias = "argparse._SubParsersAction[argparse.ArgumentParser]"


class RegisteredModes:
    """``--mode``'s choices (here, not in domain/: it imports domain/modes.py lazily, which imports mode_names):
    the registered modes (a mode module may add one, domain/modes.register), read without
    importing the modes until a value is checked. Listing them (the usage line, --help) shows the registered ones
    once domain/modes.py is loaded, else the built-in names; checking a given value loads it (the run needs it)."""

    def _names(self) -> tuple[str, ...]:
        modes = sys.modules.get("tui_rater.domain.modes")
        return tuple(modes.MODES) if modes is not None else MODE_NAMES

    def __iter__(self) -> Iterator[str]:
        return iter(self._names())

    def __len__(self) -> int:
        return len(self._names())

    def __contains__(self, name: object) -> bool:
        from tui_rater.domain.modes import MODES  # a --mode was given: the run imports the modes anyway

        return name in MODES


def version() -> str:
    from tui_rater import __version__

    return __version__


def settings_for(args: argparse.Namespace) -> Settings:
    return load_settings()


def db_path(args: argparse.Namespace, settings: Settings) -> str:
    return args.db or settings.db


def common_flags(nested: bool = False) -> argparse.ArgumentParser:
    """The flags every command takes. ``nested``: for a sub-subcommand (``spa setup``), whose
    defaults must not overwrite what was given before it (``tui-rater spa --db X setup``)."""
    unset: dict[str, Any] = {"default": argparse.SUPPRESS} if nested else {}
    listed: dict[str, Any] = unset if nested else {"default": []}
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--db",
        metavar="PATH",
        help=f"the study file (default: ./{DEFAULT_DB}, or $TUI_RATER_DB, or 'db' in the config file)",
        **unset,
    )
    common.add_argument(
        "--task-file",
        action="append",
        metavar="TOML",
        help="load custom tasks from a TOML file (repeatable)",
        **listed,
    )
    common.add_argument(
        "--shared",
        action="store_true",
        help="create the study file group-writable (several Unix users on one host)",
        **unset,
    )
    return common


_OPENED: list[Study] = []  # studies this command opened, closed (and checkpointed) on exit

AS_HELP = "who runs this (default: $TUI_RATER_ANNOTATOR, 'annotator' in the config, or $USER)"


def lead_only(p: argparse.ArgumentParser, action: Callable[[argparse.Namespace], str | None]) -> None:
    """Marks a command, or some of its flags, as a study-wide action: with leads named (`tui-rater roles`), only a
    lead may run it. ``action(args)`` names what is refused (\"cancel the judges' queue\"), or None when these
    flags change only the runner's own work or nothing. The rule is checked in one place, ``open_study``, before
    the command can change anything; `tests/cli/test_roles.py` lists every command as a lead's or not."""
    if not any(a.dest == "as_name" or "--as" in a.option_strings for a in p._actions):  # adjudicate's --as names it
        p.add_argument("--as", dest="as_name", metavar="NAME", help=AS_HELP)
    p.set_defaults(lead_action=action)


def identity(args: argparse.Namespace, settings: Settings) -> str | None:
    """Who runs a study-wide action: --as, else the name the command takes (--adjudicator, --annotator), else
    the configured annotator name, else $USER."""
    import getpass

    for given in (
        getattr(args, "as_name", None),
        getattr(args, "adjudicator", None),
        getattr(args, "annotator", None),
        settings.annotator,
    ):
        if given:
            return str(given)
    try:
        return getpass.getuser()
    except (KeyError, OSError):
        return os.environ.get("USER")


def open_study(args: argparse.Namespace, settings: Settings, create: bool = True, readonly: bool = False) -> Study:
    """The study file. ``readonly``: the command only reads it (info, report, export, tasks, queue), so
    it works on a file or folder the user may not write to. A study-wide action (``lead_only``) run by someone
    who is not one of the study's leads is refused when it is opened, before anything is written."""
    from tui_rater.service.study import open_study as open_file

    rule = getattr(args, "lead_action", None)
    action = rule(args) if rule is not None else None
    study = open_file(
        db_path(args, settings),
        create=create,
        shared=getattr(args, "shared", False),
        task_files=[*settings.task_files, *getattr(args, "task_file", [])],
        readonly=readonly,
        who=identity(args, settings) if action is not None else None,
        action=action,
    )
    _OPENED.append(study)
    return study


def db_exists(args: argparse.Namespace, settings: Settings) -> bool:
    return Path(db_path(args, settings)).exists()


def make_console(**options: Any) -> Console:
    """A Rich console that interprets nothing: no markup, no emoji codes, no highlighting.

    Whatever came from data is also passed through ``safe_text`` (see ``data``, ``say``): the
    console keeps Rich from reading ``[/]`` as markup, the sanitiser keeps escapes off the terminal.
    """
    from rich.console import Console

    return Console(highlight=False, markup=False, emoji=False, **options)


def data(value: object, style: str = "") -> Text:
    """A value from data (a name, an id, a reply, an error body) as a literal one-line Rich text."""
    from rich.text import Text

    return Text(safe_text(value, inline=True), style=style)


def new_table(title: str, columns: list[str]) -> Table:
    """A Rich table whose title and headers are literal text (they may hold task or rater names)."""
    from rich.table import Table

    table = Table(title=data(title), title_justify="left")
    for column in columns:
        table.add_column(data(column))
    return table


def keep_messages_on_stderr() -> None:
    """Point Python's ``sys.stderr`` at a copy of fd 2. While a model loads, fd 2 itself points at /dev/null
    (``judge/engine/native.quiet_stderr``: llama.cpp prints its load log there whatever its log callback says), and a
    message printed meanwhile went with it: Ctrl-C's "stopping: ..." while a worker loaded the model, then exit 130
    without a word. Only the process's own stderr is replaced (not a test's capture, nor the app's screen)."""
    original = sys.__stderr__
    if original is None or sys.stderr is not original:
        return
    try:
        if original.fileno() != 2:
            return
        copy = os.dup(2)
    except (OSError, ValueError, io.UnsupportedOperation):
        return
    sys.stderr = open(copy, "w", buffering=1, encoding=original.encoding, errors=original.errors)


def say(message: str, *, err: bool = False) -> None:
    """Print a one-line message that may quote data (file names, task names): literally, on one line. One write of
    the line and its end (``print`` makes two, and stderr to a pipe is written through: a reader that stops at the
    process's end, as textual-serve's did, could get the line without its newline)."""
    (sys.stderr if err else sys.stdout).write(safe_text(message, inline=True) + "\n")


def whole(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number in [low, high] (``--limit -1`` or a 23-digit seed is refused)."""

    def convert(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
        if not low <= value <= high:
            raise argparse.ArgumentTypeError(f"{value} is out of range: give a whole number from {low} to {high}")
        return value

    return convert


def real(low: float, high: float, *, low_open: bool = False) -> Callable[[str], float]:
    """An argparse type: a finite number in [low, high] (``(low, high]`` with ``low_open``); nan and inf refused."""

    def convert(text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if not math.isfinite(value):
            raise argparse.ArgumentTypeError(f"{text} is not a finite number")
        if value < low or value > high or (low_open and value == low):
            opening = "(" if low_open else "["
            raise argparse.ArgumentTypeError(f"{value:g} is out of range: give a number in {opening}{low:g}, {high:g}]")
        return value

    return convert


RAW_CSV_HELP = (
    "CSV/TSV: write cells that start like a spreadsheet formula (=, +, -, @) as they are; by default they get "
    "a leading ' so a spreadsheet shows them as text instead of running them (OWASP's CSV injection rule)"
)


def formula_note(neutralised: int) -> None:
    if neutralised:
        say(
            f"note: {neutralised} CSV cell(s) that a spreadsheet would run as a formula were written with a "
            "leading ' (--raw-csv writes them as they are)",
            err=True,
        )


def judge_flags(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("judge")
    g.add_argument(
        "--model",
        required=True,
        metavar="SPEC",
        help="a .gguf file (local llama.cpp), hf:OWNER/REPO/FILE.gguf (downloaded once from the Hugging Face Hub "
        "into its cache, with a progress bar), api:<model> (OpenAI-compatible server), or <name>:<model> for a "
        "backend an installed package registers (CONTRIBUTING.md, 'Add a backend')",
    )
    g.add_argument(
        "--mode",
        default="text",
        choices=RegisteredModes(),
        help="text: free reply + parser (the paper); constrained: reply forced to a valid score; "
        "distribution: the scale tokens' probabilities, N samples drawn from them; "
        "implicit: Chen et al.'s yes/no Implicit Score (story-explicit)",
    )
    g.add_argument(
        "--variant",
        default=None,
        help="plain | persona | explain (Chiang & Lee §3.3.2); v1..v5 for the Chen et al. tasks",
    )
    decoding_flags(g)
    g.add_argument(
        "--conversation",
        action="store_true",
        help="ask all of an item's questions in one chat, in order (the paper's ChatGPT setting)",
    )
    g.add_argument(
        "--max-retries",
        type=whole(*JUDGE_LIMITS["max_retries"]),
        help="regenerations of a reply that does not parse (default 3)",
    )
    g.add_argument(
        "--min-mass",
        type=real(0, 1),
        help="distribution: below this next-token probability on the scale's options a pass is stored as "
        "low_mass, not as a rating (default 0.5)",
    )
    g.add_argument("--n-ctx", type=int, help="local: context window in tokens (default 4096)")
    g.add_argument(
        "--n-gpu-layers",
        type=whole(*JUDGE_LIMITS["n_gpu_layers"]),
        help="local: layers to offload to CUDA/Metal (-1 = all)",
    )
    g.add_argument(
        "--threads",
        dest="n_threads",
        type=whole(1, JUDGE_LIMITS["n_threads"][1]),
        help="local: CPU threads llama.cpp computes with (default: every core; fewer can be faster on a busy "
        "machine); the readings are the same with any number",
    )
    g.add_argument("--chat-template", metavar="FILE", help="local: a Jinja chat template (default: the GGUF's)")
    g.add_argument(
        "--base-url",
        action="append",
        help="API: the server, e.g. http://127.0.0.1:8080/v1 (default: OpenAI); repeat it for replicas of the "
        "same model: jobs spread over them, one that fails is left alone while the others go on",
    )
    g.add_argument("--api-key-env", help="API: the environment variable holding the key (default OPENAI_API_KEY)")
    g.add_argument(
        "--timeout", type=real(0, 86_400, low_open=True), default=120.0, help="API: seconds to wait for a reply"
    )
    g.add_argument(
        "--judge-name",
        metavar="NAME",
        help="your name for this judge configuration (its label in reports: J<n> NAME); part of its identity, "
        "so the same model and URL under another name is another judge (e.g. two differently set up servers)",
    )
    g.add_argument(
        "--backend-option",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting of a backend an installed package registers (repeatable; over the config file's "
        "[judge.options.BACKEND]; the built-ins' settings are the flags above); one that changes its replies makes "
        "it another judge",
    )


def decoding_flags(group: argparse._ArgumentGroup, decoding: type[Decoding] = Decoding) -> None:
    """One flag per field of ``Decoding``: its name, type, range, help and default are the field's (config keys are
    derived from the same fields). Not given: None, so the protocol's or the config file's default applies."""
    for knob in fields(decoding):
        default, meta = default_of(knob), knob.metadata
        kind = (
            whole(int(meta["low"]), int(meta["high"]))
            if isinstance(default, int)
            else real(meta["low"], meta["high"], low_open=meta["low_open"])
        )
        group.add_argument(flag_name(knob), dest=knob.name, type=kind, help=f"{meta['doc']} (default {default})")


def decoding_given(args: argparse.Namespace, decoding: type[Decoding] = Decoding) -> dict[str, Any]:
    """The decoding flags the user gave, by field name."""
    return {knob.name: getattr(args, knob.name) for knob in fields(decoding) if getattr(args, knob.name) is not None}


def check_key_variable(name: str | None) -> None:
    """``--api-key-env NAME`` names where the key is: $NAME unset (a typo) is one sentence, never no key at all
    (a keyless server answered as if it had been sent; one that wants a key asked to name the variable)."""
    import os

    if name is not None and not os.environ.get(name):
        raise UserError(f"no API key: ${name}, named by --api-key-env, is not set (or empty)")


def judge_options(args: argparse.Namespace) -> JudgeOptions:
    """The judge flags as the service's options (None: the protocol's or the config file's default)."""
    from tui_rater.service.judging import JudgeOptions

    template = None
    if args.chat_template:
        try:
            template = Path(args.chat_template).read_text(encoding="utf-8")
        except OSError as exc:
            raise UserError(f"cannot read chat template {args.chat_template}: {exc.strerror}") from None
        except UnicodeDecodeError:
            raise UserError(f"chat template {args.chat_template} is not valid UTF-8") from None
    check_key_variable(args.api_key_env)
    return JudgeOptions(
        model=args.model,
        mode=args.mode,
        variant=args.variant,
        decoding=decoding_given(args),
        conversation=args.conversation,
        max_retries=args.max_retries,
        min_mass=args.min_mass,
        n_ctx=args.n_ctx,
        n_gpu_layers=args.n_gpu_layers,
        n_threads=args.n_threads,
        chat_template=template,
        base_url=args.base_url[0] if args.base_url else None,
        replicas=tuple(args.base_url[1:]) if args.base_url else (),
        api_key_env=args.api_key_env,
        timeout_s=args.timeout,
        judge_name=args.judge_name,
        backend_options=tuple(args.backend_option),
    )


def close_all() -> None:
    while _OPENED:
        study = _OPENED.pop()
        with contextlib.suppress(Exception):  # a failed close (disk full at the checkpoint) loses nothing committed
            study.close()


def say_readiness(ready: JudgeReadiness, advise: bool = True) -> None:
    """Whether the judge is agreement-ready, per question where not, and what would help (``advise``): the check's
    and the report's words (stdout when ready; a warning on stderr when not, the run's exit status unchanged)."""
    if not ready.not_ready:
        if summary := ready.summary():
            say(summary)
        return
    say(f"tui-rater: warning: {ready.summary()}", err=True)
    for line in ready.reasons():
        say(f"  {line}", err=True)
    if advise:
        say(f"tui-rater: what would help: {ready.advice()}", err=True)

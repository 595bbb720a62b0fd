"""The ``tui-rater`` command: parses flags and calls the layers below (through ``tui_rater.service``).

One module per group of commands; headless commands never import Textual (a test checks
``sys.modules``).
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any, NoReturn

from tui_rater.cli import (
    adjudicating,
    annotating,
    certifying,
    data,
    judges,
    judging,
    juries,
    reporting,
    sample_sizes,
    serving,
    team,
)
from tui_rater.cli.common import close_all, common_flags, keep_messages_on_stderr, say, settings_for, version
from tui_rater.cli.failures import failure_sentence
from tui_rater.domain.errors import UserError


class _Parser(argparse.ArgumentParser):
    """A bad flag is one sentence (and where to look), not the whole usage block, and exit status 2.

    No abbreviated flags: ``import-ratings --task X`` silently became ``--task-file X``.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        say(f"tui-rater: error: {message} (see `{self.prog} --help`)", err=True)
        sys.exit(2)


def _parser() -> argparse.ArgumentParser:
    common = common_flags()
    parser = _Parser(
        prog="tui-rater",
        description="Rate texts with the keyboard while LLM judges rate the same texts; compare them.",
        epilog="Run `tui-rater COMMAND --help` for a command's flags. Data stays in one SQLite file.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    for group in (
        annotating,
        adjudicating,
        data,
        judging,
        judges,
        juries,
        reporting,
        sample_sizes,
        certifying,
        serving,
        team,
    ):
        group.add_parsers(sub, common)
    return parser


def _not_utf8(argv: list[str]) -> str | None:
    """The first argument that is not valid UTF-8 (Python carries its bytes as lone surrogates)."""
    for arg in argv:
        if any("\udc80" <= c <= "\udcff" for c in arg):
            return arg.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
    return None


def main(argv: list[str] | None = None) -> int:
    keep_messages_on_stderr()
    parser = _parser()
    bad = _not_utf8(sys.argv[1:] if argv is None else argv)
    if bad is not None:  # a file name, model path or name that cannot be stored or shown as text
        say(f"tui-rater: error: the argument {bad!r} is not valid UTF-8; rename it or give it in UTF-8", err=True)
        return 2
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        settings = settings_for(args)
        for warning in settings.warnings:
            say(f"tui-rater: warning: {warning}", err=True)
        code: int = args.run(args, settings)
        return code
    except UserError as exc:
        # messages quote file names and file contents: printed literally, on one line
        say(f"tui-rater: error: {exc}", err=True)
        return exc.exit_code
    except BrokenPipeError:  # `tui-rater info | head`
        sys.stderr.close()
        return 0
    except KeyboardInterrupt:
        print("tui-rater: interrupted; everything acknowledged so far is saved", file=sys.stderr)
        return 130
    except Exception as exc:  # never a traceback and never exit 0 (STYLE.md: crashes never exit 0)
        if os.environ.get("TUI_RATER_DEBUG"):
            raise
        sentence, code = failure_sentence(exc)
        say(f"tui-rater: error: {sentence}", err=True)
        return code
    finally:
        close_all()

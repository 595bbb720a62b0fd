"""The ``tui-rater`` command: parses flags and calls the layers below (through ``tui_rater.service``).

One module per group of commands; headless commands never import Textual (a test checks
``sys.modules``).
"""

from __future__ import annotations

import argparse
import os
import sys

from tui_rater.cli import annotating, data, judges, judging, reporting, serving
from tui_rater.cli.common import close_all, common_flags, say, settings_for, version
from tui_rater.cli.failures import failure_sentence
from tui_rater.domain.errors import UserError


def _parser() -> argparse.ArgumentParser:
    common = common_flags()
    parser = argparse.ArgumentParser(
        prog="tui-rater",
        description="Rate texts with the keyboard while LLM judges rate the same texts; compare them.",
        epilog="Run `tui-rater COMMAND --help` for a command's flags. Data stays in one SQLite file.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {version()}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    for group in (annotating, data, judging, judges, reporting, serving):
        group.add_parsers(sub, common)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not getattr(args, "run", None):
        parser.print_help()
        return 2
    try:
        settings = settings_for(args)
        for warning in settings.warnings:
            say(f"tui-rater: warning: {warning}", err=True)
        return args.run(args, settings)
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

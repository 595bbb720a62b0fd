"""``tui-rater judge … --check``: the pre-flight check, printed (service/preflight.py does the work)."""

from __future__ import annotations

import json

from tui_rater.cli.common import data, make_console, new_table
from tui_rater.service.preflight import Preflight, PromptCheck

PROMPT_LINES = 40  # a long story is cut on screen (--format json has it whole)


def show(result: Preflight, fmt: str = "text") -> None:
    if fmt == "json":
        print(json.dumps(result.as_dict(), indent=1, ensure_ascii=False))
        return
    console = make_console()
    console.print(
        data(
            f"judge check: {result.judge} · mode {result.mode} · chat template: {result.template}"
            + (f" · --n-ctx {result.n_ctx:,}" if result.n_ctx else "")
        )
    )
    shown: set[str] = set()
    for check in result.checks:
        if check.task not in shown:  # each task's first prompt, whole, as the model reads it
            shown.add(check.task)
            _prompt(console, check)
    table = new_table(
        "the first items' questions",
        ["item", "question", "tokens", "BOS", "scale → tokens", "mass on the scale", "top next tokens"],
    )
    for check in result.checks:
        table.add_row(
            data(check.item),
            data(check.attribute + ("" if check.presentation == "original" else f" ({check.presentation})")),
            data("server" if check.tokens is None else f"{check.tokens:,}"),
            data("-" if check.bos is None else str(check.bos)),
            data(_mapping(check)),
            data(_mass(check)),
            data(", ".join(f"{text!r} {p:.2f}" for text, p in check.top[:3]) or "-"),
        )
    console.print(table)
    console.print(data(f"verdict: {result.verdict} — {result.reason}", style="bold"))


def _prompt(console, check: PromptCheck) -> None:
    from rich.text import Text

    from tui_rater.domain.display import safe_text

    lines = safe_text(check.prompt).splitlines()
    cut = len(lines) - PROMPT_LINES
    console.print(data(f"── prompt: {check.task} · {check.item} · {check.attribute} ──"))
    console.print(Text("\n".join(lines[:PROMPT_LINES])))
    if cut > 0:
        console.print(data(f"… {cut} more lines (--format json shows them all)"))
    console.print(data("── end of prompt ──"))


def _mapping(check: PromptCheck) -> str:
    if check.error:
        return f"error: {check.error}"
    found = [f"{label}→{'|'.join(repr(p) for p in pieces)}" for label, pieces in check.option_tokens.items()]
    found += [f"{label}→none" for label in check.missing_options]
    return " ".join(found) or "-"


def _mass(check: PromptCheck) -> str:
    if check.mass is None:
        return "-"
    return ("≥ " if check.mass_is_lower_bound else "") + f"{check.mass:.4f}"

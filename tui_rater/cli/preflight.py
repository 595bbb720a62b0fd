"""``tui-rater judge … --check``: the pre-flight check, printed (service/preflight.py does the work)."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from tui_rater.cli.common import data, make_console
from tui_rater.domain.preflight import PromptCheck
from tui_rater.domain.readiness import AGREEMENT_READY, NOT_READY
from tui_rater.service.preflight import Preflight

if TYPE_CHECKING:
    from rich.console import Console


PROMPT_LINES = 40  # a long story is cut on screen (--format json has it whole)


def show(result: Preflight, fmt: str = "text") -> None:
    """One line per question (long lines wrap in the terminal; nothing is squeezed into columns at 80
    characters), each task's first prompt whole, then the verdict on one line of its own."""
    if fmt == "json":
        print(json.dumps(result.as_dict(), indent=1))  # ensure_ascii: control and bidi characters as \u escapes
        return
    console = make_console(soft_wrap=True)
    context = f" · --n-ctx {result.n_ctx:,}" if result.n_ctx else ""
    console.print(data(f"judge check: {result.judge} · mode {result.mode} · chat template: {result.template}{context}"))
    shown: set[str] = set()
    for check in result.checks:
        if check.task not in shown:  # each task's first prompt, whole, as the model reads it
            shown.add(check.task)
            _prompt(console, check)
    for check in result.checks:
        console.print(data(_line(check)))
    for mode in result.modes:  # one line per mode: would its readings be agreement-ready, and why (the report's rule)
        console.print(data(f"mode {mode.mode}: {AGREEMENT_READY if mode.ready else NOT_READY} — {mode.reason}"))
    verdict = {"ready": AGREEMENT_READY, "not ready": NOT_READY}.get(result.verdict, result.verdict)
    console.print(data(f"verdict: {verdict} — {result.reason}", style="bold"))
    if result.recommended and result.recommended != result.mode:
        console.print(data(f"recommended: --mode {result.recommended}"))


def _line(check: PromptCheck) -> str:
    shown_order = check.presentation not in ("", "original")  # a pair's swapped order is its own prompt
    question = check.attribute + (f" ({check.presentation})" if shown_order else "")
    parts = [f"{check.item} {question}:"]
    parts.append(
        "tokens counted by the server" if check.tokens is None else f"{check.tokens:,} tokens, BOS {check.bos}"
    )
    if check.error:
        return " ".join(parts) + f" · error: {check.error}"
    if check.option_tokens or check.missing_options:
        parts.append(f"· scale → tokens {_mapping(check)}")
    if check.mass is not None:
        parts.append(f"· mass on the scale {_mass(check)}")
    if check.top:
        parts.append("· top next tokens " + ", ".join(f"{text!r} {p:.2f}" for text, p in check.top[:3]))
    if check.reply is not None:
        cut = " (cut by --max-tokens)" if check.finish_reason == "length" else ""
        parts.append(f"· text reply {_short(check.reply)!r} → {check.reply_status}{cut}")
    return " ".join(parts)


def _short(text: str, width: int = 40) -> str:
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 1] + "…"


def _prompt(console: Console, check: PromptCheck) -> None:
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
    found = [f"{label}→{'|'.join(pieces)}" for label, pieces in check.option_tokens.items()]
    found += [f"{label}→none" for label in check.missing_options]
    return " ".join(found) or "-"


def _mass(check: PromptCheck) -> str:
    if check.mass is None:
        return "-"
    return ("≥ " if check.mass_is_lower_bound else "") + f"{check.mass:.4f}"

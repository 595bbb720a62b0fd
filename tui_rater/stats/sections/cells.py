"""How a number shows in a printed table's cell (the layouts of ``sections/``): no statistics here."""

from __future__ import annotations

from tui_rater.stats.records import ALL, Record
from tui_rater.stats.sections.base import Found


def value(record: Record | None, digits: int = 2, suffix: str = "") -> str:
    return "n/a" if record is None or record.value is None else f"{record.value:.{digits}f}{suffix}"


def stars(p: float | None) -> str:
    if p is None:
        return ""
    return "***" if p < 0.001 else "**" if p < 0.01 else "*" if p < 0.05 else ""


def spa_stars(p: float | None) -> str:
    # the SPA paper marks Holm-corrected significance at alpha = .10 (*), .05 (**), .01 (***)
    if p is None:
        return ""
    return "***" if p < 0.01 else "**" if p < 0.05 else "*" if p < 0.10 else ""


def systems(found: Found, table: str) -> list[str]:
    """The systems of a table, the pooled one (``all``) last."""
    return sorted({r.system for r in found.of(table)}, key=lambda s: (s == ALL, s))


def column(system: str) -> str:
    return "all (pooled)" if system == ALL else system


def interval(record: Record | None, digits: int = 2) -> str:
    """A figure's 95 % interval as ``[low, high]``; blank where it has none (the JSON says why)."""
    if record is None or record.ci_low is None or record.ci_high is None:
        return ""
    return f"[{record.ci_low:.{digits}f}, {record.ci_high:.{digits}f}]"


SKEW_MARK = "†"
SKEW_LEGEND = "† skewed labels: AC well above α, whose chance agreement grows with the skew"


def gwet_value(record: Record | None) -> str:
    """AC1 / AC2 with a mark where skewed labels make it disagree with α (``gwet.with_skew_note``)."""
    return value(record) + (SKEW_MARK if record is not None and "skewed" in record.note else "")

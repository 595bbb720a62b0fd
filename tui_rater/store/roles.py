"""Who may run a study's study-wide actions (assign, cancel the judges' queue, adjudicate).

A stated list, not authentication: anyone who can write the file can change it. Its point is to keep
an annotator from planning, cancelling or adjudicating by mistake. With no list every name may.
Identity is the ``--annotator`` / ``--as`` name, else ``$TUI_RATER_ANNOTATOR`` or ``$USER``.
"""

from __future__ import annotations

from tui_rater.domain.errors import UserError
from tui_rater.store.db import utc_now, write
from tui_rater.store.study import Study
from tui_rater.store.team import has_team_tables


def leads(study: Study) -> list[str]:
    if not has_team_tables(study):
        return []
    return [name for (name,) in study._db.conn.execute("SELECT name FROM leads ORDER BY name")]


def set_leads(study: Study, names: list[str]) -> None:
    """Replace the list of leads (an empty list lets everyone again)."""
    now = utc_now()
    with write(study._db) as conn:
        conn.execute("DELETE FROM leads")
        conn.executemany("INSERT INTO leads (name, created_at) VALUES (?, ?)", [(name, now) for name in names])


def require_lead(study: Study, name: str | None, action: str, name_flag: str = "--as") -> None:
    """One sentence (exit 2) when the study names its leads and ``name`` is not one of them; ``name_flag`` is
    the flag that names the user of the command at hand (the app's: ``--annotator``), so the advice works."""
    names = leads(study)
    if not names or name in names:
        return
    who = repr(name) if name else "someone unnamed"
    raise UserError(
        f"only the study's leads ({', '.join(names)}) may {action}; {who} is not one "
        f"(name yourself with {name_flag} NAME, or a lead can change the list with `tui-rater roles --leads`)"
    )

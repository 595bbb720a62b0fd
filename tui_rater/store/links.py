"""Personal browser links for ``tui-rater serve``: one unguessable token per annotator, stored hashed.

The token is in the link's URL (``/a/<token>``) and names who rates. The study keeps only its SHA-256,
so a copy of the study file gives nobody a working link; the link itself is shown once, when it is
made. A lost link cannot be recovered, only replaced (``new_link`` again: the old one stops working).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from tui_rater.domain.errors import UserError
from tui_rater.store.db import utc_now, write
from tui_rater.store.study import Study
from tui_rater.store.team import check_member, load_team_plan

TOKEN_BYTES = 32  # 256 bits from the OS's CSPRNG (secrets), 43 URL-safe characters


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Link:
    annotator: str
    created_at: str
    token: str | None = None  # only when just made: the study holds no token


def stored_links(study: Study) -> dict[str, Link]:
    """annotator -> their link (without its token, which is not stored)."""
    rows = study._db.conn.execute("SELECT annotator, created_at FROM web_links ORDER BY annotator").fetchall()
    return {annotator: Link(annotator, created_at) for annotator, created_at in rows}


def new_link(study: Study, annotator: str) -> Link:
    """A new token for ``annotator``, replacing their old link (which stops working); only its hash is stored."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    now = utc_now()
    with write(study._db) as conn:
        conn.execute(
            "INSERT INTO web_links (annotator, token_sha256, created_at) VALUES (?, ?, ?) "
            "ON CONFLICT (annotator) DO UPDATE SET token_sha256 = excluded.token_sha256, "
            "created_at = excluded.created_at",
            [annotator, token_hash(token), now],
        )
    return Link(annotator, now, token)


class LinkBook:
    """What a running ``serve`` asks on every request: whose link a token is, read from the study *now*.

    Never a copy made at start: a link replaced by ``serve --new-links`` in another process stops opening at
    once, and a plan changed by ``assign`` meanwhile decides who may rate (issue 36). One indexed read each."""

    def __init__(self, study: Study, task: str, annotators: list[str]) -> None:
        self.study, self.task = study, task
        self.annotators = set(annotators)  # the names `serve` was started for: the others' links do not open

    def annotator(self, token: str) -> str | None:
        """The annotator whose current link holds ``token`` (None: no such link, replaced, or not served here)."""
        if not token:
            return None
        row = self.study._db.conn.execute(
            "SELECT annotator FROM web_links WHERE token_sha256 = ?", [token_hash(token)]
        ).fetchone()
        return row[0] if row is not None and row[0] in self.annotators else None

    def refusal(self, annotator: str) -> str | None:
        """Why ``annotator`` cannot rate this task now (a team plan that does not name them), or None."""
        plan = load_team_plan(self.study, self.task)
        if plan is None:
            return None
        try:
            check_member(plan, annotator)
        except UserError as exc:
            return str(exc)
        return None

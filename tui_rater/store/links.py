"""Personal browser links for ``tui-rater serve``: one unguessable token per annotator, stored hashed.

The token is in the link's URL (``/a/<token>``) and names who rates. The study keeps only its SHA-256,
so a copy of the study file gives nobody a working link; the link itself is shown once, when it is
made. A lost link cannot be recovered, only replaced (``new_link`` again: the old one stops working).
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass

from tui_rater.store.db import utc_now, write
from tui_rater.store.study import Study

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
    rows = study.db.conn.execute("SELECT annotator, created_at FROM web_links ORDER BY annotator").fetchall()
    return {annotator: Link(annotator, created_at) for annotator, created_at in rows}


def new_link(study: Study, annotator: str) -> Link:
    """A new token for ``annotator``, replacing their old link (which stops working); only its hash is stored."""
    token = secrets.token_urlsafe(TOKEN_BYTES)
    now = utc_now()
    with write(study.db) as conn:
        conn.execute(
            "INSERT INTO web_links (annotator, token_sha256, created_at) VALUES (?, ?, ?) "
            "ON CONFLICT (annotator) DO UPDATE SET token_sha256 = excluded.token_sha256, "
            "created_at = excluded.created_at",
            [annotator, token_hash(token), now],
        )
    return Link(annotator, now, token)


def annotators_by_hash(study: Study, annotators: list[str]) -> dict[str, str]:
    """token SHA-256 -> annotator, for the links of ``annotators`` (the others' links do not open)."""
    rows = study.db.conn.execute("SELECT token_sha256, annotator FROM web_links").fetchall()
    wanted = set(annotators)
    return {digest: annotator for digest, annotator in rows if annotator in wanted}

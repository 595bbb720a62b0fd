"""Where a judge's replies came from: the model file it loaded, or the server it asked and the model id and
``system_fingerprint`` that server reported (two servers behind one model name differ there).

A judge's identity is its configuration (``spec.provenance``); what answers behind an API model name and
URL can still change (another build, another quantisation, another server on the same port). The
server's own words are recorded once per judge and source (``store.judges``), counted per job, and a
change is a new row beside the old one -- never merged into it.
"""

from __future__ import annotations

from tui_rater.judge.backends.base import Backend
from tui_rater.judge.spec import JudgeSpec
from tui_rater.store import judges
from tui_rater.store.study import Study


def seen(spec: JudgeSpec, backend: Backend) -> list[tuple[str, str, str]]:
    """(source, served model, fingerprint) of the replies since the last call; nothing for an API job
    answered from the store alone. A judge with several endpoints names each endpoint that answered."""
    return backend.take_sources()


def note(study: Study, rater_id: int, spec: JudgeSpec, backend: Backend | None) -> None:
    """Count one job against each source that answered it."""
    if backend is None:
        return
    found = seen(spec, backend)
    if found:
        judges.record_sources(study, rater_id, found)


def note_server(study: Study, rater_id: int, spec: JudgeSpec, backend: Backend) -> None:
    """Record what an API judge's servers say about the model behind its alias (once per run and worker; each
    server is asked once per run)."""
    for url, facts in backend.describe_servers():
        judges.record_server(study, rater_id, url, facts)

"""`tui-rater verify` handed things that are not certificate files (issue 34, a hostile user's attempts)."""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.support import run_cli_process


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="FIFOs are POSIX")
def test_verify_refuses_a_fifo_in_one_sentence_instead_of_waiting_forever(tmp_path):
    fifo = tmp_path / "cert.json"
    os.mkfifo(fifo)
    try:
        # nobody ever writes to the FIFO: a read of it never returns, so the 60 s only separate "refused" from "hung"
        done = run_cli_process("verify", fifo, "--db", tmp_path / "study.db", timeout=60)
    except subprocess.TimeoutExpired:
        pytest.fail("verify blocked reading a FIFO named as the certificate")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "is not a regular file" in done.stderr
    assert not (tmp_path / "study.db").exists()


def test_verify_refuses_a_directory_in_one_sentence(tmp_path):
    folder = tmp_path / "cert.json"
    folder.mkdir()
    done = run_cli_process("verify", folder, "--db", tmp_path / "study.db")
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stderr.strip().count("\n") == 0 and "is not a regular file" in done.stderr


def _human_study(folder):
    """A study of 32 stories rated by two people (no judge): enough for certify's tables and numbers."""
    import random

    from tui_rater.store.study import Study

    db = folder / "study.db"
    study = Study.open(db)
    task = study.task("story")
    study.add_items(task, [{"id": f"s{i}", "system": "a", "prompt": "p", "story": f"S {i}"} for i in range(32)])
    rng = random.Random(1)
    for name in ("ann", "bob"):
        person = study.human(name)
        for item in study.items("story"):
            for attribute in task.attributes:
                study.add_rating(item.key, attribute.name, person.id, float(rng.randint(1, 5)))
    study.close()
    return db


def test_verify_names_claims_certify_never_writes_instead_of_saying_matches(tmp_path):
    import json

    db = _human_study(tmp_path)
    cert = tmp_path / "c.json"
    assert run_cli_process("certify", "--db", db, "--out", cert).returncode == 0
    found = json.loads(cert.read_text())
    found["approved_by"] = "the ethics board"  # a claim nothing recomputes
    found["settings"]["alpha"] = 0.001
    cert.write_text(json.dumps(found))
    done = run_cli_process("verify", cert, "--db", db)
    assert done.returncode == 1, done.stdout + done.stderr
    lines = [line for line in done.stdout.splitlines() if line.startswith("differs:")]
    assert lines == [
        "differs: 'approved_by': in the certificate, not made by this method (not checkable)",
        "differs: 'settings.alpha': in the certificate, not computed from the study",
    ]


def test_verify_prints_the_canonical_sha256_certify_printed(tmp_path):
    """A certificate is unsigned: the reader checks it against a published identity, which verify must show."""
    import re

    db = _human_study(tmp_path)
    cert = tmp_path / "c.json"
    made = run_cli_process("certify", "--db", db, "--out", cert)
    printed = re.search(r"canonical SHA-256 ([0-9a-f]{64})", made.stdout)
    assert printed, made.stdout
    done = run_cli_process("verify", cert, "--db", db)
    assert done.returncode == 0, done.stdout + done.stderr
    assert printed.group(1) in done.stdout

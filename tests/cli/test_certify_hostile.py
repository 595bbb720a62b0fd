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

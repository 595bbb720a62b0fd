"""The model's SHA-256 is computed once and remembered by (path, size, mtime, inode) in the user's cache."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

from tests.support import ROOT
from tui_rater.judge.spec import (
    LARGE_MODEL_BYTES,
    SHA_CACHE_FILE,
    JudgeSpec,
    cache_dir,
    cached_sha256,
    file_sha256,
    load_note,
)


def _hash_in_new_process(path) -> str:
    code = "import sys; from tui_rater.judge.spec import file_sha256; print(file_sha256(sys.argv[1]))"
    done = subprocess.run(
        [sys.executable, "-c", code, str(path)], capture_output=True, text=True, cwd=ROOT, timeout=60, check=True
    )
    return done.stdout.strip()


def _rewrite_keeping_stamp(path, data: bytes) -> None:
    """New content of the same size, same inode, same mtime: what the cache cannot see."""
    st = os.stat(path)
    with open(path, "r+b") as handle:
        handle.write(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_a_second_start_reads_the_hash_from_the_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("TUI_RATER_CACHE_DIR", str(tmp_path / "cache"))
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + bytes(range(256)) * 64)
    first = file_sha256(model)
    assert first == hashlib.sha256(model.read_bytes()).hexdigest()
    entry = json.loads((cache_dir() / SHA_CACHE_FILE).read_text())["files"][str(model.resolve())]
    assert entry["sha256"] == first and entry["size"] == model.stat().st_size

    # same size, inode and mtime: a new process answers from the cache without reading the file (the stale
    # digest proves it); then a changed mtime makes it hash the file again
    _rewrite_keeping_stamp(model, b"GGUF-changed")
    assert _hash_in_new_process(model) == first
    os.utime(model, ns=(model.stat().st_atime_ns, model.stat().st_mtime_ns + 1_000_000_000))
    second = _hash_in_new_process(model)
    assert second == hashlib.sha256(model.read_bytes()).hexdigest() != first


def test_a_replaced_file_is_hashed_again(tmp_path, monkeypatch):
    """A new file at the same path (another inode), even of the same size and mtime, is not taken for the old."""
    monkeypatch.setenv("TUI_RATER_CACHE_DIR", str(tmp_path / "cache"))
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + b"a" * 100)
    first = file_sha256(model)
    st = model.stat()
    replacement = tmp_path / "new.gguf"
    replacement.write_bytes(b"GGUF" + b"b" * 100)
    os.utime(replacement, ns=(st.st_atime_ns, st.st_mtime_ns))
    os.replace(replacement, model)
    assert file_sha256(model) == hashlib.sha256(b"GGUF" + b"b" * 100).hexdigest() != first


def test_a_broken_or_unwritable_cache_only_costs_a_hash(tmp_path, monkeypatch):
    model = tmp_path / "m.gguf"
    model.write_bytes(b"GGUF" + b"x" * 1000)
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    broken = tmp_path / "broken"
    broken.mkdir()
    (broken / SHA_CACHE_FILE).write_text("{ not json")
    monkeypatch.setenv("TUI_RATER_CACHE_DIR", str(broken))
    assert file_sha256(model) == digest
    assert json.loads((broken / SHA_CACHE_FILE).read_text())["files"]  # rewritten, whole
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    monkeypatch.setenv("TUI_RATER_CACHE_DIR", str(blocked / "cache"))  # cannot be created
    assert file_sha256(model) == digest


def test_the_load_note_names_the_checksum_only_until_it_is_cached(tmp_path, monkeypatch):
    """Before the wait on a large model the judge says what it waits for: a hash the cache holds is not redone."""
    monkeypatch.setenv("TUI_RATER_CACHE_DIR", str(tmp_path / "cache"))
    model = tmp_path / "big.gguf"
    with open(model, "wb") as handle:  # sparse: 1 GiB on paper, nothing on disk
        handle.write(b"GGUF")
        handle.truncate(LARGE_MODEL_BYTES)
    spec = JudgeSpec(str(model))
    assert "its checksum" in load_note(spec) and cached_sha256(model) is None
    digest = file_sha256(model)
    assert cached_sha256(model) == digest
    note = load_note(spec)
    assert note.startswith("loading model big.gguf (1.1 GB)") and "checksum" not in note
    assert load_note(JudgeSpec(str(tmp_path / "small.gguf"))) is None  # no file: nothing to say

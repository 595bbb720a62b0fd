"""`tui-rater import` reads, checks and writes an items file a batch at a time (issue 35 item 3): its peak memory does
not grow with the file's length, and a bad row past the first batch still leaves the study exactly as it was."""

from __future__ import annotations

import contextlib
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

from tests.support import run_cli_process

STORY = ("The lighthouse keeper counted the ships that never came and wrote each name in the sand. " * 16)[:1500]


def _items(path: Path, n: int, *, last: str | None = None) -> Path:
    with path.open("w", encoding="utf-8") as handle:
        handle.write("id,system,prompt,story\n")
        for i in range(n):
            handle.write(f"s{i},{'gpt2' if i % 2 else 'human'},Prompt {i % 9},Story {i}. {STORY}\n")
        if last is not None:
            handle.write(last)
    return path


def _peak_rss_mb(*args: object) -> float:
    """The real CLI in a child process (as ``run_cli_process`` starts it); its own peak RSS, from ``wait4``."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "tui_rater.cli", *map(str, args)], stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    _pid, status, usage = os.wait4(proc.pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, proc.stderr.read() if proc.stderr else ""
    return usage.ru_maxrss / 1024  # kB on Linux


def test_import_peak_memory_does_not_grow_with_the_file(tmp_path):
    """8 times the items (64 MB more of file) cost less than half of those megabytes more at the peak; reading the
    file whole held about 8 bytes per byte of file (381 MB at 100k stories: bench/RESULTS.md section 11)."""
    n = 6000  # past one batch (5,000 rows) and one piece (4 MB), so the small file already fills both
    small, large = _items(tmp_path / "small.csv", n), _items(tmp_path / "large.csv", 8 * n)
    grown_file = (large.stat().st_size - small.stat().st_size) / 2**20
    peaks = [_peak_rss_mb("import", f, "--task", "story", "--db", tmp_path / f"{f.stem}.db") for f in (small, large)]
    assert peaks[1] - peaks[0] < 0.5 * grown_file, (peaks, grown_file)
    with contextlib.closing(sqlite3.connect(tmp_path / "large.db")) as conn:
        stored = conn.execute("SELECT count(*), min(position), max(position) FROM items").fetchone()
    assert stored == (8 * n, 0, 8 * n - 1)


def _items_stored(db: Path) -> list[tuple[object, ...]]:
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return conn.execute("SELECT key, id, task, system, fields, position, content_hash FROM items").fetchall()


def test_a_parquet_file_is_read_a_batch_at_a_time(tmp_path):
    """A Parquet file is compressed (these, to a few hundred kB) but its rows decoded are as large as the CSV's.
    Read whole, 8 times the items grew the peak by 81 MB where the CSV import grew by 20; read a slice per batch,
    it grows as the CSV import does, and stores the same items."""
    n = 6000
    csv_files = [_items(tmp_path / f"{name}.csv", count) for name, count in (("small", n), ("large", 8 * n))]
    grown_rows = (csv_files[1].stat().st_size - csv_files[0].stat().st_size) / 2**20
    # written by another process: a child's peak RSS counts what this one held when it was started
    convert = (
        "import sys, polars as pl\n"
        "for name in sys.argv[1:]:\n"
        "    frame = pl.read_csv(name, infer_schema=False)\n"
        "    frame.write_parquet(name.removesuffix('.csv') + '.parquet', row_group_size=10_000)\n"
    )
    subprocess.run([sys.executable, "-c", convert, *map(str, csv_files)], check=True)
    peaks: dict[str, list[float]] = {"csv": [], "parquet": []}
    for kind, files in peaks.items():
        for csv_file in csv_files:
            source = csv_file.with_suffix(f".{kind}")
            files.append(
                _peak_rss_mb("import", source, "--task", "story", "--db", tmp_path / f"{kind}-{source.stem}.db")
            )
    grown = {kind: large - small for kind, (small, large) in peaks.items()}
    assert grown["parquet"] < grown["csv"] + 0.25 * grown_rows, (peaks, grown_rows)
    assert _items_stored(tmp_path / "parquet-large.db") == _items_stored(tmp_path / "csv-large.db")
    assert len(_items_stored(tmp_path / "parquet-large.db")) == 8 * n


def _dump(db: Path) -> list[str]:
    """Every table's every row (SQLite's own dump)."""
    with contextlib.closing(sqlite3.connect(db)) as conn:
        return list(conn.iterdump())


def test_a_bad_row_past_the_first_batch_leaves_the_study_as_it_was(tmp_path):
    db = tmp_path / "study.db"
    first = _items(tmp_path / "first.csv", 30)
    assert run_cli_process("import", first, "--task", "story", "--db", db).returncode == 0
    before = _dump(db)
    n = 12_000  # past two batches of 5,000 rows and two pieces of 4 MB: the first ones were written
    cases = {
        "empty story": (f"s{n},gpt2,P,\n", f"row {n + 1}, column 'story': the value is missing"),
        "duplicate id": ("s7,gpt2,P,Another story.\n", f"row {n + 1}: duplicate id 's7', first seen in row 8"),
        # only found as the study is written: the rows before it were in the transaction, rolled back
        "stored with another text": (
            "s3,gpt2,P,Not the story stored as s3.\n",
            f"row {n + 1}: item id 's3' is already in the study with a different text or system (nothing was imported)",
        ),
    }
    for name, (last, sentence) in cases.items():
        items = _items(tmp_path / "many.csv", n, last=last)
        if name == "stored with another text":  # s0..s29 are stored: only the new s3 row of another text clashes
            text = items.read_text(encoding="utf-8").replace("\ns3,", "\nt3,", 1)
            items.write_text(text, encoding="utf-8")
        done = run_cli_process("import", items, "--task", "story", "--db", db)
        assert done.returncode != 0, name
        assert done.stderr.strip() == f"tui-rater: error: {items}, {sentence}", name
        assert done.stdout == ""
        assert _dump(db) == before, name
    # a first import that fails leaves no study behind
    fresh = tmp_path / "fresh.db"
    bad = _items(tmp_path / "bad.csv", n, last="x,gpt2,P,\n")
    done = run_cli_process("import", bad, "--task", "story", "--db", fresh)
    assert done.returncode != 0 and "the value is missing" in done.stderr
    assert not fresh.exists()

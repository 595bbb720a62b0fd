"""Nothing the screen calls saved is ever lost: the real app in tmux, a second process holding the
study file's write lock (``BEGIN IMMEDIATE``), SIGKILL, SIGHUP, SIGTERM, ``q`` in the same burst as
the keys, and a full disk.

Each test prints one line of counts; docs/RELIABILITY.md has the table.
"""

from __future__ import annotations

import os
import random
import signal
import sqlite3
import statistics
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.ui.tmux import (
    LockHolder,
    TmuxApp,
    all_ratings,
    annotate_command,
    flat,
    needs_tmux,
    ratings_in_force,
    read_screen,
    wait_for,
)

pytestmark = [pytest.mark.terminal, needs_tmux]

ATTRIBUTES = ("grammaticality", "cohesiveness", "likability", "relevance")  # the story task, in order
ITEMS = 6


def story_study(folder: Path) -> Path:
    items = folder / "stories.csv"
    rows = [f"s{i},human,Prompt {i},Story {i}. The dragon counted stitches by the fire." for i in range(ITEMS)]
    items.write_text("id,system,prompt,story\n" + "\n".join(rows) + "\n")
    db = folder / "study.db"
    subprocess.run(
        [sys.executable, "-m", "tui_rater.cli", "import", str(items), "--task", "story", "--db", str(db)],
        check=True,
        capture_output=True,
    )
    return db


def start(db: Path, annotator: str, tmp_path: Path, *extra: str) -> TmuxApp:
    app = TmuxApp(annotate_command(db, annotator, "story", *extra), tmp_path)
    app.wait_text("item 1/6", "q quit")
    return app


def typed_ratings(keys: str) -> list[tuple[str, str, float]]:
    """What a run of digit keys rates on a fresh story session: one question after another, in order."""
    return [(f"s{k // 4}", ATTRIBUTES[k % 4], float(key)) for k, key in enumerate(keys)]


def shows_typed(n: int):
    """The screen after n ratings were typed: on item n // 4, with n % 4 of its questions answered."""

    def check(screen: str) -> bool:
        shown = read_screen(screen)
        return (
            shown is not None
            and shown.item == n // 4
            and sum(v != "·" for v in shown.answers.values()) == n % 4
            and len(shown.answers) == 4
        )

    return check


def check_screen_against_file(screen: str, in_force: dict, complete_in_file: int) -> int:
    """Every rating the screen shows as saved is in the file; returns how many it showed as saved."""
    shown = read_screen(screen)
    assert shown is not None, screen
    for attribute, value in shown.saved().items():
        assert in_force.get((f"s{shown.item}", attribute)) == value, (attribute, value, screen)
    assert shown.rated <= complete_in_file, screen
    current_complete = all((f"s{shown.item}", a) in in_force for a in ATTRIBUTES)
    return 4 * shown.rated + (0 if current_complete else len(shown.saved()))


def all_saved(screen: str) -> bool:
    shown = read_screen(screen)
    return shown is not None and not shown.unsaved() and "saving" not in screen


def complete_items(in_force: dict) -> int:
    return sum(all((f"s{i}", a) in in_force for a in ATTRIBUTES) for i in range(ITEMS))


# --- (a) SIGKILL -------------------------------------------------------------------------------------

KILL_RUNS = 6


def test_sigkill_while_locked_loses_nothing_shown_as_saved(tmp_path):
    """Keys typed while another process holds the write lock; in half the runs the lock is released a
    random moment before the kill. Every screen read before the kill is checked against the file."""
    db = story_study(tmp_path)
    rng = random.Random(11)
    typed_total = shown_saved_total = screens_checked = 0
    latencies = []  # key sent -> the screen shows it, while the file is locked
    for run in range(KILL_RUNS):
        annotator = f"kill-{run}"
        app = start(db, annotator, tmp_path)
        screens = []
        try:
            keys = "".join(rng.choice("12345") for _ in range(rng.randint(1, 3)))  # saved before the lock
            for n in range(len(keys)):
                app.keys(keys[n])
                screens.append(app.wait_screen(shows_typed(n + 1)))
            app.wait_screen(all_saved)
            with LockHolder(db) as lock:
                for _ in range(rng.randint(3, 8)):
                    keys += rng.choice("12345")
                    sent = time.monotonic()
                    app.keys(keys[-1])
                    screens.append(app.wait_screen(shows_typed(len(keys))))
                    latencies.append(time.monotonic() - sent)
                screens.append(app.wait_text("locked by another process"))
                shown = read_screen(screens[-1])
                assert shown is not None and shown.rated <= len(keys) // 4
                if run % 2:
                    lock.release()
                    time.sleep(rng.uniform(0.0, 0.08))  # the kill lands while the saves are under way
                screens.append(app.screen())
                app.kill(signal.SIGKILL)
                assert app.wait_exit(5) is not None
        finally:
            app.close()
        in_force = ratings_in_force(db, annotator)
        for screen in screens:
            shown_saved = check_screen_against_file(screen, in_force, complete_items(in_force))
        screens_checked += len(screens)
        typed_total += len(keys)
        shown_saved_total += shown_saved  # as the last screen before the kill showed
        # what the file holds is a prefix of what was typed, never anything else
        stored = [(i, a, v) for i, a, v, _ in all_ratings(db, annotator)]
        assert stored == typed_ratings(keys)[: len(stored)]
    print(
        f"\nSIGKILL while locked: {KILL_RUNS} runs, {typed_total} ratings typed, {screens_checked} screens read, "
        f"{shown_saved_total} ratings shown as saved at the kill, 0 of them lost; key to screen while locked: "
        f"median {statistics.median(latencies) * 1000:.0f} ms, max {max(latencies) * 1000:.0f} ms (polled every 20 ms)"
    )
    assert max(latencies) < 2.0  # the screen never waits on the lock (LOCK_WAIT_S is 0.25 s)


# --- (b) SIGHUP and SIGTERM ----------------------------------------------------------------------------

HANGUP_RUNS = 2


@pytest.mark.parametrize("how", ["SIGHUP", "SIGTERM"])
def test_hangup_while_locked_saves_every_rating(tmp_path, how):
    """The terminal goes away (or SIGTERM comes) while the file is locked: the process stays until the
    lock is released, saves every rating typed, then exits."""
    db = story_study(tmp_path)
    keys = "12345123"
    waits = []
    for run in range(HANGUP_RUNS):
        annotator = f"{how.lower()}-{run}"
        app = start(db, annotator, tmp_path)
        try:
            with LockHolder(db) as lock:
                app.keys(keys)
                app.wait_text("locked by another process", "8 ratings")
                if how == "SIGHUP":
                    app.hang_up()
                    time.sleep(1.0)
                else:
                    app.kill(signal.SIGTERM)
                    # the screen closes, then the process says (still locked) that it saves before exiting
                    saying = lambda app=app: "saving 8 ratings before exiting" in app.printed()
                    assert wait_for(saying, 20), app.printed()
                assert app.running(), "exited while ratings were unsaved"
                assert ratings_in_force(db, annotator) == {}
                released = lock.release()
            assert app.wait_exit(20) is not None, "still running 20 s after the lock was gone"
            waits.append(time.monotonic() - released)
            if how == "SIGTERM":
                assert app.wait_status() == 128 + signal.SIGTERM
                assert "saved." in app.printed()
        finally:
            app.close()
        assert [(i, a, v) for i, a, v, _ in all_ratings(db, annotator)] == typed_ratings(keys)
    print(
        f"\n{how} while locked: {HANGUP_RUNS} runs, {HANGUP_RUNS * len(keys)} ratings typed, 0 lost; "
        f"exit {max(waits):.2f} s at most after the lock was released"
    )


def test_ctrl_c_while_saving_after_sigterm_says_what_is_lost(tmp_path):
    db = story_study(tmp_path)
    app = start(db, "impatient", tmp_path)
    try:
        with LockHolder(db):
            app.keys("1234")
            app.wait_text("locked by another process", "4 ratings")
            app.kill(signal.SIGTERM)
            app.wait_text("tui-rater: saving 4 ratings before exiting (waiting for the study file")
            app.kill(signal.SIGINT)
            assert app.wait_status() == 1
            assert "tui-rater: interrupted: 4 ratings not saved" in app.printed()
    finally:
        app.close()
    assert all_ratings(db, "impatient") == []


# --- (c) q in the same burst as the keys ------------------------------------------------------------------

QUIT_RUNS = 3


@pytest.mark.parametrize("locked", [False, True], ids=["no-other-writer", "lock-held-2s"])
def test_quit_in_the_same_burst_saves_all_and_exits(tmp_path, locked):
    db = story_study(tmp_path)
    quit_times = []
    for run in range(QUIT_RUNS):
        annotator = f"burst-{int(locked)}-{run}"
        app = start(db, annotator, tmp_path)
        try:
            if locked:
                with LockHolder(db) as lock:
                    app.keys("12345123q")
                    screen = app.wait_text("saving 8 ratings before quitting")
                    app.wait_text("waiting for the study file (locked by another process)")
                    assert read_screen(screen).rated == 0 and app.running()
                    time.sleep(2.0)
                    assert app.running() and ratings_in_force(db, annotator) == {}
                    began = lock.release()
            else:
                began = time.monotonic()
                app.keys("12345123q")
            assert app.wait_exit(20) is not None, "quit did not complete"
            quit_times.append(time.monotonic() - began)
            assert app.wait_status() == 0
        finally:
            app.close()
        assert [(i, a, v) for i, a, v, _ in all_ratings(db, annotator)] == typed_ratings("12345123")
    since = "the lock was released" if locked else "the burst was sent"
    print(
        f"\nq in the burst ({'lock held 2 s' if locked else 'no other writer'}): {QUIT_RUNS} runs, "
        f"{QUIT_RUNS * 8} ratings typed, 0 lost; exit after {since}: median {statistics.median(quit_times):.2f} s, "
        f"max {max(quit_times):.2f} s"
    )
    assert max(quit_times) < 5.0  # far from the 10 s timeouts of the old shutdown


def lock_is_held(db: Path) -> bool:
    conn = sqlite3.connect(db, timeout=0, isolation_level=None)
    try:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("ROLLBACK")
        return False
    except sqlite3.OperationalError:
        return True
    finally:
        conn.close()


@pytest.mark.parametrize("how", ["q", "SIGHUP"])
def test_while_a_colleague_imports_57600_ratings(tmp_path, how):
    """The issue's case: a colleague's `tui-rater import-ratings` (57,600 rows, one transaction of some
    seconds) while the annotator types 8 ratings and quits (or the SSH connection drops)."""
    db = story_study(tmp_path)
    ratings = tmp_path / "colleagues.csv"
    rows = [f"s{i},colleague-{r},{a},{(r + i) % 5 + 1}" for r in range(2400) for i in range(ITEMS) for a in ATTRIBUTES]
    ratings.write_text("item,rater,attribute,value\n" + "\n".join(rows) + "\n")
    app = start(db, "annotator", tmp_path)
    try:
        cmd = [sys.executable, "-m", "tui_rater.cli", "import-ratings", str(ratings), "--db", str(db)]
        colleague = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert wait_for(lambda: lock_is_held(db), 60, every=0.005), "the import never took the lock"
        app.keys("12345123" + ("q" if how == "q" else ""))
        screen = app.wait_text("saving 8 ratings before quitting" if how == "q" else "8 ratings")
        saw_lock = "locked by another process" in flat(screen) or wait_for(
            lambda: "locked by another process" in flat(app.screen()), 1.0
        )
        if how == "SIGHUP":
            app.hang_up()
        _out, err = colleague.communicate(timeout=120)
        imported = time.monotonic()
        assert colleague.returncode == 0, err
        assert app.wait_exit(20) is not None  # a deadlock would never end; 10 s exceeded only under heavy load
        after_import = time.monotonic() - imported
    finally:
        app.close()
    assert [(i, a, v) for i, a, v, _ in all_ratings(db, "annotator")] == typed_ratings("12345123")
    conn = sqlite3.connect(db)
    assert conn.execute("SELECT count(*) FROM ratings").fetchone()[0] == 57_600 + 8
    print(
        f"\n{how} during a 57,600-row import: 8 ratings typed, 0 lost; the screen said the file was locked: "
        f"{'yes' if saw_lock else 'no'}; exit {after_import:.2f} s after the import ended"
    )


def test_quit_anyway_says_how_many_are_lost(tmp_path):
    """A second q offers to quit without the unsaved ratings only after saying how many they are."""
    db = story_study(tmp_path)
    app = start(db, "quitter", tmp_path)
    try:
        with LockHolder(db):
            app.keys("123q")
            app.wait_text("saving 3 ratings before quitting")
            app.keys("q")
            app.wait_text("Quit now and lose 3 ratings not saved yet?")
            app.keys("x")  # any other key: keep waiting
            app.wait_text("saving 3 ratings before quitting")
            app.keys("q")
            app.wait_text("lose 3 ratings")
            app.keys("y")
            assert app.wait_status() == 1
            assert "quit without saving 3 ratings, as asked" in app.printed()
    finally:
        app.close()
    assert all_ratings(db, "quitter") == []


def test_a_continue_signal_after_the_hangup_never_restarts_the_screen(tmp_path):
    """The kernel follows SIGHUP with SIGCONT. Textual's driver answers SIGCONT by restarting the
    screen (a new input thread the interpreter waits for): the process then never exited."""
    db = story_study(tmp_path)
    app = start(db, "continued", tmp_path)
    try:
        with LockHolder(db) as lock:
            app.keys("12345123")
            app.wait_text("locked by another process", "8 ratings")
            app.hang_up()
            time.sleep(1.0)
            app.kill(signal.SIGCONT)  # again, while it saves off screen
            time.sleep(0.5)
            assert app.running(), "exited while ratings were unsaved"
            lock.release()
        assert app.wait_exit(20) is not None, "still running 20 s after the lock was gone"
    finally:
        app.close()
    assert [(i, a, v) for i, a, v, _ in all_ratings(db, "continued")] == typed_ratings("12345123")


# --- undo and notes through the same path -----------------------------------------------------------------


def test_undo_and_notes_while_locked_survive_a_hangup(tmp_path):
    db = story_study(tmp_path)
    app = start(db, "noter", tmp_path)
    try:
        with LockHolder(db) as lock:
            app.keys("4325")  # item 1
            app.wait_screen(shows_typed(4))
            app.keys("1")  # item 2, grammaticality ...
            app.wait_text("[1…] grammaticality")
            app.keys("u")  # ... taken back
            app.wait_text("[·…] grammaticality")
            app.keys("f")
            app.wait_text("flagged…")
            app.keys("s")  # skip item 2
            app.wait_text("item 3/6")
            app.keys("c")
            app.wait_text("Comment on this item")
            app.keys("too long")
            app.key("Enter")
            app.wait_screen(lambda s: "Comment on this item" not in s and "locked by another process" in flat(s))
            assert read_screen(app.screen()).rated == 0
            app.hang_up()
            time.sleep(0.5)
            assert app.running()
            lock.release()
        assert app.wait_exit(20) is not None  # a deadlock would never end; 10 s exceeded only under heavy load
    finally:
        app.close()
    assert all_ratings(db, "noter") == [
        ("s0", "grammaticality", 4.0, 0),
        ("s0", "cohesiveness", 3.0, 0),
        ("s0", "likability", 2.0, 0),
        ("s0", "relevance", 5.0, 0),
        ("s1", "grammaticality", 1.0, 1),  # undone
    ]
    import sqlite3

    conn = sqlite3.connect(db)
    notes = conn.execute(
        "SELECT i.id, n.kind, n.text FROM notes n JOIN items i ON i.key = n.item_key ORDER BY n.id"
    ).fetchall()
    assert notes == [("s1", "flag", None), ("s1", "skip", None), ("s2", "comment", "too long")]


# --- (d) disk full -------------------------------------------------------------------------------------------


@pytest.fixture
def small_disk(tmp_path):
    """A 4 MB tmpfs (this needs root, or CAP_SYS_ADMIN): a disk that fills for real."""
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=4m", "tmpfs", str(mount_point)], capture_output=True, text=True
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here ({done.stderr.strip() or 'mount failed'}): needs root")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", "-l", str(mount_point)], capture_output=True)


def fill(folder: Path) -> Path:
    filler = folder / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        while True:
            os.write(fd, b"\0" * 65536)
    except OSError:
        pass
    try:
        while True:
            os.write(fd, b"\0" * 512)
    except OSError:
        pass
    finally:
        os.close(fd)
    return filler


def test_disk_full_shows_unsaved_until_saved(small_disk, tmp_path):
    db = story_study(small_disk)
    app = start(db, "full", tmp_path)
    # A colleague's read transaction, held throughout: each save is copied into the file at once (a checkpoint,
    # so that a renamed study keeps it) and the log then starts again from its beginning, where a full disk
    # leaves room. While another connection reads, the log cannot start again: it must grow, as in a busy team.
    reader = sqlite3.connect(db, isolation_level=None)
    reader.execute("BEGIN")
    reader.execute("SELECT count(*) FROM ratings").fetchall()
    try:
        app.keys("43")  # saved while there is room
        app.wait_text("[4] grammaticality", "[3] cohesiveness")
        filler = fill(small_disk)
        app.keys("25")
        app.wait_screen(shows_typed(4))  # on to item 2 at once
        app.keys("1")
        screen = app.wait_text("NOT SAVED: database or disk is full", "[1!]")
        assert read_screen(screen).rated == 0 and "(+1 saving!)" in flat(screen)
        time.sleep(2.0)  # it keeps failing, and keeps saying so
        screen = app.wait_text("NOT SAVED")
        assert read_screen(screen).rated == 0 and "3 ratings not saved yet" in flat(screen)
        assert ratings_in_force(db, "full") == {("s0", "grammaticality"): 4.0, ("s0", "cohesiveness"): 3.0}
        filler.unlink()  # room again: the next try saves them all, and the error goes
        screen = app.wait_screen(lambda s: "NOT SAVED" not in s and "[1] grammaticality" in s, timeout=15)
        assert read_screen(screen).rated == 1 and all_saved(screen)
        reader.close()
        app.keys("q")
        assert app.wait_status() == 0
    finally:
        reader.close()
        app.close()
    assert [(i, a, v) for i, a, v, _ in all_ratings(db, "full")] == typed_ratings("43251")
    print("\ndisk full: 1 run, 5 ratings typed, 3 shown as not saved while the disk was full, 0 lost")

"""The real app in a real terminal: tmux runs it, send-keys types, capture-pane reads the screen.

Each ``TmuxApp`` has a tmux server of its own (``-L``), so tests never touch anyone's sessions
and closing it (kill-server) hangs up the app's terminal exactly as a dropped SSH connection does.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import sqlite3
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

needs_tmux = pytest.mark.skipif(shutil.which("tmux") is None, reason="tmux is not installed")

ROOT = Path(__file__).resolve().parents[2]

# How long a wait for something that must happen (a screen, a row, an exit) gives it by default: it proves only that
# it happens, never how fast (a test that proves a speed measures it, from the event). Start-up is mostly imports:
# a `judge` run with nothing to do took over 60 s under 6 busy loops on 2 cores; waiting longer costs nothing when
# the thing comes.
WAIT_S = 60.0


def wait_for(predicate, timeout: float = WAIT_S, every: float = 0.02) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(every)
    return bool(predicate())


def _environment() -> dict[str, str]:
    """The tmux server's (and so the app's) environment: Python's view of it, less COLUMNS and LINES. GNU
    readline, imported by pytest, exports COLUMNS=80 LINES=24 into the C environment only: a child started
    without ``env=`` inherits them, and Textual then drew 80 columns in a 120-column window."""
    return {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}


def annotate_command(db: Path, annotator: str, task: str, *extra: str) -> list[str]:
    cli = [sys.executable, "-m", "tui_rater.cli"]
    return [*cli, "annotate", "--db", str(db), "--annotator", annotator, "--task", task, *extra]


class TmuxApp:
    """``command`` runs in a shell that records its exit status in ``status_file``."""

    def __init__(
        self,
        command: list[str],
        tmp_path: Path,
        size: tuple[int, int] = (80, 24),
        env: str = "",
        conf: str = "",
    ):
        """``conf``: tmux configuration lines for the server, in force before the app starts."""
        self.socket = f"tui-rater-test-{os.getpid()}-{time.monotonic_ns()}"
        self.status_file = tmp_path / f"exit-{self.socket}"
        line = f"{env} {shlex.join(command)}; echo $? > {shlex.quote(str(self.status_file))}"
        config = tmp_path / f"tmux-{self.socket}.conf"
        config.write_text(conf + "\n")
        self._tmux(
            "-f", str(config), "new-session", "-d", "-s", "app", "-x", str(size[0]), "-y", str(size[1]), line.strip()
        )
        self._tmux("set-option", "-t", "app", "remain-on-exit", "on")  # what it prints on exit stays readable
        shell = int(self._tmux("display", "-p", "-t", "app", "#{pane_pid}").strip())
        assert wait_for(lambda: bool(_children(shell)), 10), "the app did not start"
        self.pid = _children(shell)[0]

    def _tmux(self, *args: str) -> str:
        command = ["tmux", "-L", self.socket, *args]
        return subprocess.run(command, capture_output=True, text=True, timeout=10, env=_environment()).stdout

    def screen(self) -> str:
        return self._tmux("capture-pane", "-p", "-t", "app")

    def printed(self) -> str:
        """The screen and what scrolled off it: what the process printed once the app had closed."""
        return flat(self.transcript())

    def transcript(self) -> str:
        """``printed``, line by line as the terminal shows them (commands to paste, with their line breaks)."""
        return self._tmux("capture-pane", "-p", "-S", "-200", "-t", "app")

    def wait_screen(self, predicate, timeout: float = WAIT_S) -> str:
        """The first screen for which ``predicate(screen)`` holds; fails with the last one seen."""
        seen = ""

        def check() -> bool:
            nonlocal seen
            seen = self.screen()
            return predicate(seen)

        assert wait_for(check, timeout), f"screen never matched; last seen:\n{seen}"
        return seen

    def wait_text(self, *phrases: str, timeout: float = WAIT_S) -> str:
        """The first screen showing every phrase (lines wrapped by the terminal are joined first)."""
        return self.wait_screen(lambda screen: all(p in flat(screen) for p in phrases), timeout)

    def keys(self, text: str) -> None:
        """Type ``text`` as one burst (one write to the terminal)."""
        self._tmux("send-keys", "-t", "app", "-l", text)

    def key(self, *names: str) -> None:
        """Press named keys ("PageDown", "Enter"); several at once are one burst."""
        self._tmux("send-keys", "-t", "app", *names)

    def running(self) -> bool:
        return _alive(self.pid)

    def exit_status(self) -> int | None:
        try:
            return int(self.status_file.read_text())
        except (OSError, ValueError):
            return None

    def wait_exit(self, timeout: float) -> float | None:
        """Seconds until the app's process ended, or None if it still runs after ``timeout``."""
        began = time.monotonic()
        if wait_for(lambda: not self.running(), timeout, every=0.01):
            return time.monotonic() - began
        return None

    def wait_status(self, timeout: float = 30.0) -> int | None:
        """The exit status the shell recorded (None: none within ``timeout``, e.g. the shell got SIGHUP)."""
        wait_for(lambda: self.exit_status() is not None, timeout)
        return self.exit_status()

    def hang_up(self) -> None:
        """Close the terminal: the kernel sends the app SIGHUP (an SSH connection dropping)."""
        self._tmux("kill-server")

    def kill(self, sig: int = signal.SIGKILL) -> None:
        os.kill(self.pid, sig)

    def close(self) -> None:
        self._tmux("kill-server")
        if _alive(self.pid):
            os.kill(self.pid, signal.SIGKILL)


def flat(screen: str) -> str:
    """The screen's words on one line: a sentence the terminal wrapped reads whole again."""
    return " ".join(screen.split())


def _children(pid: int) -> list[int]:
    try:
        return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    except OSError:
        return []


def _alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return not re.search(r"^State:\s+[ZX]", status, re.M)  # a zombie has exited


class LockHolder:
    """Another process holding the study file's write lock (``BEGIN IMMEDIATE``) until ``release``."""

    def __init__(self, db: Path):
        script = ROOT / "tests" / "reliability" / "lock_holder.py"
        self.proc = subprocess.Popen(
            [sys.executable, str(script), str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None and self.proc.stdout.readline().strip() == "LOCKED"
        self.released_at: float | None = None

    def release(self) -> float:
        if self.released_at is None:
            assert self.proc.stdin is not None and self.proc.stdout is not None
            self.proc.stdin.write("\n")
            self.proc.stdin.close()
            assert self.proc.stdout.readline().strip() == "RELEASED"
            self.released_at = time.monotonic()
            self.proc.wait(10)
        return self.released_at

    def __enter__(self) -> LockHolder:
        return self

    def __exit__(self, *exc) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()


# --- reading the screen --------------------------------------------------------------------------

STATUS = re.compile(r"item (\d+)/(\d+) .*? (\d+)/(\d+) rated")
QUESTION = re.compile(r"^\s*(?:▶ )?\[([^\]]*)\] ([a-z_]+): ", re.M)


@dataclass(frozen=True)
class Shown:
    item: int  # 0-based position on screen
    rated: int  # the "N/M rated" count
    answers: dict[str, str]  # attribute -> what its brackets hold: "4" (saved), "4…" / "4!" (not yet), "·"

    def saved(self) -> dict[str, float]:
        """The answers the screen shows as saved: a plain number."""
        return {a: float(v) for a, v in self.answers.items() if re.fullmatch(r"\d+(\.\d+)?", v)}

    def unsaved(self) -> dict[str, str]:
        return {a: v for a, v in self.answers.items() if v.endswith(("…", "!"))}


def read_screen(screen: str) -> Shown | None:
    status = STATUS.search(screen)
    if status is None:
        return None
    return Shown(int(status.group(1)) - 1, int(status.group(3)), dict((m[1], m[0]) for m in QUESTION.findall(screen)))


# --- what the file holds --------------------------------------------------------------------------


def ratings_in_force(db: Path, annotator: str) -> dict[tuple[str, str], float]:
    """(item id, attribute) -> value of the annotator's ratings in force (latest, not retracted, sample 0: a
    person's rating under another sample is never in force)."""
    conn = sqlite3.connect(db, timeout=30)
    try:
        rows = conn.execute(
            "SELECT i.id, r.attribute, r.value FROM ratings r JOIN items i ON i.key = r.item_key "
            "JOIN raters ra ON ra.id = r.rater_id WHERE ra.name = ? AND r.retracted = 0 AND r.sample = 0 ORDER BY r.id",
            [annotator],
        ).fetchall()
    finally:
        conn.close()
    return {(item, attribute): value for item, attribute, value in rows}


def all_ratings(db: Path, annotator: str) -> list[tuple[str, str, float, int]]:
    conn = sqlite3.connect(db, timeout=30)
    try:
        return conn.execute(
            "SELECT i.id, r.attribute, r.value, r.retracted FROM ratings r JOIN items i ON i.key = r.item_key "
            "JOIN raters ra ON ra.id = r.rater_id WHERE ra.name = ? ORDER BY r.id",
            [annotator],
        ).fetchall()
    finally:
        conn.close()

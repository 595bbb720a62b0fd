"""`tui-rater serve` as a real process for the tests: its links, its log, the app processes it starts."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

LINK = re.compile(r"^  (\S+): (http://\S+/a/(\S+))$")


def children(pid: int) -> list[int]:
    """The processes whose parent is ``pid`` (Linux /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
            found.append(int(entry))
    return found


class ServeProcess:
    """``tui-rater serve --port 0`` (a free loopback port) with its output collected line by line."""

    def __init__(self, db: Path, *args: str, timeout: float = 60.0):
        command = [sys.executable, "-m", "tui_rater.cli", "serve", "--db", str(db), "--port", "0", *args]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, bufsize=1)
        self.lines: list[str] = []
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        if not self.wait_line(lambda line: line.startswith("Ctrl-C stops the server"), timeout):
            self.stop()
            raise AssertionError(f"serve did not start:\n{self.output()}")
        self.base = re.search(r" on (http://\S+)$", self.lines[0]).group(1)

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))

    def output(self) -> str:
        return "\n".join(self.lines)

    def wait_line(self, predicate, timeout: float = 60.0, count: int = 1) -> bool:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if sum(1 for line in list(self.lines) if predicate(line)) >= count:
                return True
            if self.process.poll() is not None and not self._reader.is_alive():
                break
            time.sleep(0.05)
        return sum(1 for line in list(self.lines) if predicate(line)) >= count

    def links(self) -> dict[str, str]:
        """annotator -> link, as printed (only for the links made by this start)."""
        return {m.group(1): m.group(2) for line in self.lines if (m := LINK.match(line))}

    def stop(self, timeout: float = 60.0) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self._reader.join(5)
        return code

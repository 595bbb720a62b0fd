"""Textual's terminal driver, made safe for a terminal that goes away.

When an SSH connection drops, the kernel sends the app SIGHUP and then SIGCONT, and every later
write to the terminal fails (EIO). Two things in Textual's POSIX driver then keep the process
from ever exiting (seen under load: the app still running 20 s after its last rating was saved):

- its SIGCONT handler restarts "application mode" (new input and output threads, the input
  thread not a daemon) even though the app is closing, so the interpreter waits on that thread;
- its output thread dies on the first failed write, and the UI thread then blocks for good on
  the full queue of screen updates nobody writes.

So: once the app is closing (a stop signal came, or the screen was unmounted) SIGCONT no longer
restarts anything, and output to a terminal that is gone is dropped instead of raising.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import IO, Any

from textual.driver import Driver


class TerminalOutput:
    """The terminal's output stream; writes after the terminal has gone are dropped."""

    def __init__(self, stream: IO[str]):
        self._stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self._stream.write(text)
            except OSError:  # EIO after a hang-up, EPIPE: nobody reads any more
                self.gone = True
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self._stream.flush()
            except OSError:
                self.gone = True

    def __getattr__(self, name: str) -> Any:  # fileno, isatty, encoding, ...
        return getattr(self._stream, name)


def hangup_safe(driver_class: type[Driver], closing: Callable[[], bool]) -> type[Driver]:
    """``driver_class`` with the two changes above, where it is Textual's POSIX driver
    (other drivers are returned as they are). ``closing()`` says the app is on its way out."""
    try:
        from textual.drivers.linux_driver import LinuxDriver
    except ImportError:  # pragma: no cover - Windows
        return driver_class
    if not issubclass(driver_class, LinuxDriver):
        return driver_class

    class HangupSafeDriver(driver_class):  # type: ignore[valid-type,misc]
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            # (Textual's driver assigns _file without an annotation: mypy cannot tell its type)
            if self._file is not None:  # type: ignore[has-type]
                self._file = TerminalOutput(self._file)  # type: ignore[has-type]

        def _sigcont_application(self, *args: Any) -> None:
            if not closing():  # a resume after Ctrl-Z; never after SIGHUP, nor once the screen closed
                super()._sigcont_application(*args)

    return HangupSafeDriver

"""An app started by ``serve`` dies with its server.

textual-serve starts one app process per open page. If the server is killed (SIGKILL, OOM), nothing tells
the apps: each went on running, holding its memory and its study connection (issue 36: 5 of 5 runs alive
after 30 s). The server names itself in the app's environment; the app then asks the kernel for SIGHUP when
its parent dies (Linux: ``prctl(PR_SET_PDEATHSIG)``), and a watchdog thread checks its parent's id once a
second elsewhere. SIGHUP is what a closed terminal sends: the app saves what is unsaved, then exits
(``ui/run.py``), so its ratings are kept.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import signal
import sys
import threading

PARENT_VARIABLE = "TUI_RATER_SERVER_PID"
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
WATCH_EVERY_S = 1.0

_parent: int | None = None  # the server that started this app, if one did


def die_with_parent() -> None:
    """When this process was started by ``serve`` (its pid in the environment), end it with SIGHUP once that
    process is gone. Call it early: an app still starting up has nothing to save."""
    text = os.environ.pop(PARENT_VARIABLE, "")  # (not passed on to anything this app starts)
    if not text.isdigit():
        return
    global _parent
    parent = _parent = int(text)
    if not _death_signal():  # elsewhere (macOS, BSD): a thread watches for the server's end
        threading.Thread(target=_watch, args=(parent,), name="parent-watchdog", daemon=True).start()
    if os.getppid() != parent:  # it died before prctl: nothing will signal it
        _hang_up()


def _death_signal() -> bool:
    """Ask Linux for SIGHUP when the parent dies; True when it said yes."""
    if not sys.platform.startswith("linux"):
        return False
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        return bool(libc.prctl(PR_SET_PDEATHSIG, int(signal.SIGHUP), 0, 0, 0) == 0)
    return False


def _watch(parent: int) -> None:
    stop = threading.Event()
    while not stop.wait(WATCH_EVERY_S):
        if os.getppid() != parent:  # re-parented: the server has gone
            _hang_up()
            return


def _hang_up() -> None:
    os.kill(os.getpid(), signal.SIGHUP)


def orphaned() -> bool:
    """Whether the server that started this app has gone (its pipes with it)."""
    return _parent is not None and os.getppid() != _parent


def silence_outputs() -> None:
    """Point standard output and error at /dev/null: they were pipes to the server, which is gone. The app
    then ends as after any hang-up, saving first, instead of crashing on a broken pipe at its first write
    and spending seconds rendering a traceback nobody can read."""
    with contextlib.suppress(OSError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, 1)
        os.dup2(null, 2)
        os.close(null)

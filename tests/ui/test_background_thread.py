"""The pane's computations run in one thread per ``Background``, woken by each request (issue 35 item 1: keys
< 50 ms p99 while the pane computes): a new thread per request made the screen wait in ``Thread.start`` for the
kernel to run it, every half second. Closed, the waiting thread ends."""

from __future__ import annotations

import threading
import time

from tui_rater.ui.background import Background


def test_every_run_is_on_one_thread_and_close_ends_it() -> None:
    ran: list[threading.Thread] = []
    done = threading.Semaphore(0)

    def work() -> None:
        ran.append(threading.current_thread())
        done.release()

    background = Background("one-thread", work, lambda exc: None, threading.Lock())
    for _ in range(5):  # each request after the last run has ended: the same thread, woken
        background.request()
        assert done.acquire(timeout=10)
        deadline = time.monotonic() + 10
        while background.running() and time.monotonic() < deadline:
            time.sleep(0.01)
    assert len(ran) == 5 and background.runs == 5
    assert len({id(thread) for thread in ran}) == 1
    thread = ran[0]
    assert thread.daemon and thread.is_alive()  # waiting for the next request
    background.close()
    thread.join(timeout=10)
    assert not thread.is_alive()
    background.request()  # closed: nothing runs
    time.sleep(0.1)
    assert background.runs == 5

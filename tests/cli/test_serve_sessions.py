"""`tui-rater serve`'s sessions over plain HTTP and websockets on loopback (issue 36): a link replaced from another
process stops opening at once, one live session per link (a second page takes over), a cap on sessions with a
page past it, a page that says why for a name outside the plan, a plain GET on the websocket's address is a 400
without a traceback, the apps die with a SIGKILLed server, their ratings kept, and an app that floods its
stderr and leaves a process holding it rates, saves and ends its session.

A "page" here is what the browser's script does: a websocket to ``/a/<token>/ws`` sending ``["stdin", keys]``.
The same cases in Chromium are in tests/ui/test_browser.py."""

from __future__ import annotations

import asyncio
import os
import signal
import sqlite3
import time
import urllib.error
import urllib.request
from pathlib import Path

import aiohttp
import pytest

from tests.serving import ServeProcess, children
from tests.support import run_cli_process, story_study
from tests.ui.tmux import ratings_in_force, wait_for
from tui_rater.ui.web import REVOKED, TAKEN_OVER, WS_REVOKED

TIMEOUT = 60.0  # a small, busy machine: an app takes a few seconds to start


def get(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def ws_url(link: str) -> str:
    return link.replace("http://", "ws://", 1) + "/ws?width=100&height=30"


async def until(predicate, timeout: float = TIMEOUT) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        await asyncio.sleep(0.1)
    return bool(predicate())


class Page:
    """One page's websocket: what the app sends is read as it comes (as xterm.js does), keys go as the page's
    script sends them."""

    def __init__(self, client: aiohttp.ClientSession, link: str):
        self.client, self.link = client, link
        self.received = bytearray()
        self.closed: tuple[int | None, str] | None = None  # (close code, reason) once the server closed it

    async def open(self) -> Page:
        self.ws = await self.client.ws_connect(ws_url(self.link))
        self._reader = asyncio.create_task(self._read())
        return self

    async def _read(self) -> None:
        reason = ""
        while True:
            message = await self.ws.receive()
            if message.type == aiohttp.WSMsgType.BINARY:
                self.received += message.data
            elif message.type == aiohttp.WSMsgType.CLOSE:
                reason = message.extra or ""
            elif message.type in (aiohttp.WSMsgType.CLOSED, aiohttp.WSMsgType.CLOSING, aiohttp.WSMsgType.ERROR):
                break
        self.closed = (self.ws.close_code, reason)

    def shows(self, text: str) -> bool:
        return text.encode() in self.received

    async def keys(self, keys: str) -> None:
        for key in keys:
            await self.ws.send_json(["stdin", key])

    async def close(self) -> None:
        await self.ws.close()
        await self._reader


def app_processes(server: ServeProcess) -> list[int]:
    return children(server.process.pid)


def test_a_link_replaced_by_another_serve_stops_opening_at_once(tmp_path):
    db = story_study(tmp_path / "s.db")
    server = ServeProcess(db, "--task", "story", "--annotators", "alice")
    try:
        old = server.links()["alice"]
        assert get(old)[0] == 200
        other = ServeProcess(db, "--task", "story", "--annotators", "alice", "--new-links")  # another process
        new = other.links()["alice"].replace(other.base, server.base)
        assert other.stop() == 0
        code, page = get(old)  # the running server: the old link no longer opens, the new one does
        assert code == 403 and "not (or no longer) valid" in page
        assert get(new)[0] == 200

        async def sockets() -> None:
            async with aiohttp.ClientSession() as client:
                with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                    await client.ws_connect(ws_url(old))
                assert refused.value.status == 403

        asyncio.run(sockets())
        assert app_processes(server) == [] and "session started" not in server.output()
    finally:
        assert server.stop() == 0, server.output()


def test_a_session_already_open_is_closed_when_its_link_is_replaced_its_ratings_kept(tmp_path):
    """Revocation takes effect at once for an open page too: a link replaced by `serve --new-links` in another
    process closes the page using it within a few seconds, with the reason, its app saving first."""
    db = story_study(tmp_path / "s.db")
    server = ServeProcess(db, "--task", "story", "--annotators", "alice")
    try:
        old = server.links()["alice"]

        async def scenario() -> None:
            async with aiohttp.ClientSession() as client:
                page = await Page(client, old).open()
                assert await until(lambda: page.shows("item 1/4"))
                await page.keys("4325")
                assert await until(lambda: len(ratings_in_force(db, "alice")) == 4)
                other = ServeProcess(db, "--task", "story", "--annotators", "alice", "--new-links")
                assert other.stop() == 0
                assert await until(lambda: page.closed is not None, timeout=30)
                assert page.closed == (WS_REVOKED, REVOKED)

        asyncio.run(scenario())
        assert wait_for(lambda: app_processes(server) == [], 30)  # its app saved and exited
        assert len(ratings_in_force(db, "alice")) == 4
        assert "the link was revoked" in server.output()
    finally:
        assert server.stop() == 0, server.output()


def test_one_live_session_per_link_the_second_page_takes_over(tmp_path):
    db = story_study(tmp_path / "s.db")
    server = ServeProcess(db, "--task", "story", "--annotators", "alice")
    link = server.links()["alice"]

    async def scenario() -> None:
        async with aiohttp.ClientSession() as client:
            first = await Page(client, link).open()
            assert await until(lambda: first.shows("item 1/4"))
            await first.keys("4325")  # item 1's four questions
            assert await until(lambda: len(ratings_in_force(db, "alice")) == 4)
            (first_app,) = app_processes(server)
            second = await Page(client, link).open()  # the same link in another tab
            assert await until(lambda: first.closed is not None)
            assert first.closed == (4000, TAKEN_OVER)
            assert await until(lambda: second.shows("item 2/4"))  # it resumes after what the first one saved
            assert first_app not in app_processes(server) and len(app_processes(server)) == 1
            # 6 more pages of one link, at once: never more than one app for it
            pages = await asyncio.gather(*(Page(client, link).open() for _ in range(6)))
            most = 0
            for _ in range(40):
                most = max(most, len(app_processes(server)))
                await asyncio.sleep(0.1)
            assert most == 1
            assert await until(lambda: sum(page.closed is None for page in [second, *pages]) == 1)
            assert await until(lambda: len(app_processes(server)) == 1)
            for page in [second, *pages]:
                if page.closed is None:
                    await page.close()

    try:
        asyncio.run(scenario())
        assert server.wait_line(lambda line: line == "alice: session ended", TIMEOUT, count=8)
        assert "Traceback" not in server.output()
    finally:
        assert server.stop() == 0, server.output()
    assert len(ratings_in_force(db, "alice")) == 4


def test_past_the_session_cap_a_page_says_the_server_is_full(tmp_path):
    db = story_study(tmp_path / "s.db")
    server = ServeProcess(db, "--task", "story", "--annotators", "alice,bob", "--max-sessions", "1")
    links = server.links()
    assert "At most 1 session at once (--max-sessions)" in server.output()

    async def scenario() -> None:
        async with aiohttp.ClientSession() as client:
            alice = await Page(client, links["alice"]).open()
            assert await until(lambda: alice.shows("item 1/4"))
            code, page = await asyncio.to_thread(get, links["bob"])
            assert code == 503 and "The server is full" in page and "at most 1 session at once" in page
            with pytest.raises(aiohttp.WSServerHandshakeError) as refused:
                await client.ws_connect(ws_url(links["bob"]))
            assert refused.value.status == 503
            assert len(app_processes(server)) == 1
            assert (await asyncio.to_thread(get, links["alice"]))[0] == 200  # her own link: a take-over, not one more
            await alice.close()
            assert await until(lambda: app_processes(server) == [])
            assert (await asyncio.to_thread(get, links["bob"]))[0] == 200  # a place is free again

    try:
        asyncio.run(scenario())
    finally:
        assert server.stop() == 0, server.output()


def test_a_link_for_a_name_outside_the_plan_shows_why(tmp_path):
    db = story_study(tmp_path / "s.db")
    proc = run_cli_process("assign", "--db", db, "--task", "story", "--annotators", "alice,bob", "--per-item", "1")
    assert proc.returncode == 0, proc.stderr
    server = ServeProcess(db, "--task", "story", "--annotators", "alice,zed")
    try:
        links = server.links()
        code, page = get(links["zed"])
        assert code == 403 and "This link cannot open the study now" in page
        assert "&#x27;zed&#x27; is not in the plan for &#x27;story&#x27;" in page and "--add zed" in page
        assert get(links["alice"])[0] == 200
        assert app_processes(server) == []
    finally:
        assert server.stop() == 0, server.output()


def test_a_plain_get_on_the_websocket_address_is_a_400_and_no_traceback(tmp_path):
    db = story_study(tmp_path / "s.db")
    server = ServeProcess(db, "--task", "story", "--annotators", "alice")
    try:
        code, text = get(server.links()["alice"] + "/ws")
        assert code == 400 and text.count("\n") == 1 and "open the link itself" in text
        assert app_processes(server) == []
        time.sleep(0.5)
        assert "Traceback" not in server.output() and "Error" not in server.output(), server.output()
    finally:
        assert server.stop() == 0, server.output()


@pytest.mark.parametrize("run", range(2))
def test_a_sigkilled_server_takes_its_apps_with_it_and_their_ratings_are_kept(tmp_path, run):
    db = story_study(tmp_path / "s.db")
    server = ServeProcess(db, "--task", "story", "--annotators", "alice,bob")
    links = server.links()
    apps: list[int] = []

    async def scenario() -> None:
        async with aiohttp.ClientSession() as client:
            pages = {name: await Page(client, links[name]).open() for name in ("alice", "bob")}
            for name, keys in (("alice", "1234"), ("bob", "5432")):
                assert await until(lambda name=name: pages[name].shows("item 1/4"))
                await pages[name].keys(keys)
            assert await until(lambda: len(ratings_in_force(db, "alice")) == len(ratings_in_force(db, "bob")) == 4)
            await pages["bob"].keys("3")  # one more: saved before its app exits, or by the hang-up after
            apps.extend(app_processes(server))
            assert len(apps) == 2
            server.process.send_signal(signal.SIGKILL)
            began = time.monotonic()
            assert await until(lambda: not any(alive(pid) for pid in apps), 20), "an app outlived its server"
            print(f"apps gone {time.monotonic() - began:.2f} s after the SIGKILL")

    try:
        asyncio.run(scenario())
    finally:
        server.stop()
        for pid in apps:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    attributes = ("grammaticality", "cohesiveness", "likability", "relevance")
    assert ratings_in_force(db, "alice") == {("s0", a): float(v) for a, v in zip(attributes, "1234", strict=True)}
    bob = ratings_in_force(db, "bob")
    assert {k: v for k, v in bob.items() if k[0] == "s0"} == {
        ("s0", a): float(v) for a, v in zip(attributes, "5432", strict=True)
    }
    with sqlite3.connect(db) as conn:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"


def alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    return "\nState:\tZ" not in status and "\nState:\tX" not in status


def test_nothing_a_served_page_receives_marks_a_gold_item(tmp_path):
    """Issue 36: nothing on screen, in the page or in its traffic may tell a gold item from another. The page
    and every byte its websocket brings while alice rates her whole stream (10 items and 2 gold ones) hold no
    trace of the word, and the header's figures move one step per item."""
    path = tmp_path / "items.csv"
    path.write_text(
        "id,title,gold_fluency\n" + "".join(f"x{i},Title number {i},{'3' if i % 4 == 1 else ''}\n" for i in range(13))
    )
    db = tmp_path / "team.db"
    for args in (
        ("import", path, "--task", "title-fluency", "--db", db),
        (
            "assign",
            "--db",
            db,
            "--task",
            "title-fluency",
            "--annotators",
            "alice",
            "--per-item",
            "1",
            "--gold-rate",
            "0.17",
        ),
    ):
        proc = run_cli_process(*args)
        assert proc.returncode == 0, proc.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(*), sum(gold) FROM assignments").fetchone() == (12, 2)
    server = ServeProcess(db, "--task", "title-fluency", "--annotators", "alice")
    link = server.links()["alice"]

    async def scenario() -> bytes:
        async with aiohttp.ClientSession() as client:
            page = await Page(client, link).open()
            assert await until(lambda: page.shows("item 1/12"))
            for n in range(1, 13):
                await page.keys("4")
                assert await until(lambda n=n: page.shows(f"your {n}/12 · team {round(100 * n / 12)}%"))
            await page.close()
            return bytes(page.received)

    try:
        code, html_page = get(link)
        received = asyncio.run(scenario())
    finally:
        assert server.stop() == 0, server.output()
    assert code == 200 and "gold" not in html_page.lower()
    assert len(received) > 10_000 and b"gold" not in received.lower()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT count(DISTINCT item_key) FROM ratings").fetchone()[0] == 12


# put before the app's code by Python itself (``sitecustomize``), in the served app only: 2 MB written to its
# stderr before it starts, then a process started that holds its stderr (not its stdout) for two minutes
NOISY_APP = """
import os, subprocess, sys
if "annotate" in sys.orig_argv:
    for _ in range(2048):
        os.write(2, b"noise " + b"x" * 1017 + b"\\n")
    left = subprocess.Popen(["sleep", "120"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL)
    with open({pids!r}, "a") as pids:
        pids.write(f"{{left.pid}}\\n")
"""


def test_an_app_that_floods_its_stderr_and_leaves_a_process_holding_it_still_rates_ends_and_saves(
    tmp_path, monkeypatch
):
    """serve reads the app's stderr while it runs (else 2 MB said before the app's first packet fill the pipe and
    the app never starts), writes it once and whole when the app ends, and ends the session without waiting for a
    process the app left holding its stderr; a SIGTERM then stops serve with status 0."""
    inject, pids = tmp_path / "inject", tmp_path / "pids"
    inject.mkdir()
    (inject / "sitecustomize.py").write_text(NOISY_APP.format(pids=str(pids)))
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(inject), os.environ.get("PYTHONPATH", "")]))
    db = story_study(tmp_path / "s.db")
    server = ServeProcess(db, "--task", "story", "--annotators", "alice")
    try:

        async def scenario() -> None:
            async with aiohttp.ClientSession() as client:
                page = await Page(client, server.links()["alice"]).open()
                assert await until(lambda: page.shows("item 1/4"))
                await page.keys("4325")
                assert await until(lambda: len(ratings_in_force(db, "alice")) == 4)
                await page.keys("q")
                assert await until(lambda: page.closed is not None)

        asyncio.run(scenario())
        assert server.wait_line(lambda line: line == "alice: session ended", TIMEOUT), server.output()
        (left,) = map(int, pids.read_text().split())
        assert alive(left)  # the session ended while the process holding the app's stderr still ran
        assert sum(1 for line in server.lines if line.startswith("noise ")) == 2048  # whole, and once
        assert len(ratings_in_force(db, "alice")) == 4
    finally:
        code = server.stop()
        for pid in map(int, pids.read_text().split()) if pids.exists() else []:
            if alive(pid):
                os.kill(pid, signal.SIGKILL)
    assert code == 0, server.output()

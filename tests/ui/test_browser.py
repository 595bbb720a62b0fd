"""`tui-rater serve` in a real browser: Chromium (Debian's, driven by Playwright) opens an annotator's link,
rates in the terminal textual-serve draws with xterm.js, reloads the page, rates again, and the study file
holds the ratings under that annotator's name.

xterm.js draws on a canvas, so the screen is read from the terminal output the page receives on its
websocket (the app's own escape sequences and text), as a browser-side terminal would get it."""

from __future__ import annotations

import shutil
import time

import pytest

from tests.serving import ServeProcess, children
from tests.support import story_study
from tests.ui.tmux import ratings_in_force, wait_for
from tui_rater.ui.web import TAKEN_OVER

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")

pytestmark = [
    pytest.mark.terminal,
    pytest.mark.browser,
    pytest.mark.skipif(CHROMIUM is None, reason="Chromium is not installed (Debian: apt-get install chromium)"),
]

# the machine running the tests may be small and busy: a browser and an app process per page
TIMEOUT_MS = 120_000


class Terminal:
    """What the page's terminal has received since the page was (re)loaded."""

    def __init__(self, page):
        self.page = page
        self.screens: list[list[str]] = []  # per websocket: a (re)load opens a new one, a new app, a new screen
        page.on("websocket", self._watch)

    def _watch(self, websocket) -> None:
        frames: list[str] = []
        self.screens.append(frames)
        websocket.on("framereceived", lambda payload: frames.append(self._text(payload)))

    @staticmethod
    def _text(payload) -> str:
        return payload.decode("utf-8", "replace") if isinstance(payload, bytes) else payload

    def text(self) -> str:
        """What the latest websocket brought (never the last words of the app a reload replaced)."""
        return "".join(self.screens[-1]) if self.screens else ""

    def wait_text(self, *texts: str, timeout: float = TIMEOUT_MS / 1000, any_of: bool = False) -> None:
        """Wait for all ``texts`` (``any_of``: one of them). Playwright's own wait, not a sleep: frames arrive
        only while Playwright runs."""
        found = any if any_of else all
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if found(text in self.text() for text in texts):
                return
            self.page.wait_for_timeout(100)
        raise AssertionError(f"not on the screen: {[t for t in texts if t not in self.text()]}")

    def keys(self, keys: str) -> None:
        for key in keys:
            self.page.keyboard.press(key)


@pytest.fixture
def chromium():
    from playwright.sync_api import sync_playwright  # the test extra: missing, it fails rather than skips

    with sync_playwright() as playwright:
        # Debian's Chromium, not Playwright's download; no sandbox: the tests may run as root in a container
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"], timeout=TIMEOUT_MS)
        try:
            yield browser
        finally:
            browser.close()


def test_an_annotator_rates_through_their_link_reloads_and_rates_on(tmp_path, chromium):
    db = story_study(tmp_path / "s.db")
    server = ServeProcess(db, "--task", "story", "--annotators", "alice,bob")
    try:
        links = server.links()
        page = chromium.new_page(viewport={"width": 1100, "height": 700})
        page.set_default_timeout(TIMEOUT_MS)
        terminal = Terminal(page)
        page.goto(links["alice"])
        terminal.wait_text("alice", "item 1/4", "Story 0.", "grammaticality")
        page.click("#terminal")  # the keys go to xterm.js, which sends them to the app
        terminal.keys("4325")
        terminal.wait_text("item 2/4", "Story 1.")
        # saved as they are made, under alice's name, while her page is still open
        assert wait_for(lambda: len(ratings_in_force(db, "alice")) == 4, TIMEOUT_MS / 1000)

        page.reload()  # the first app quits (saving), a new one starts and continues
        terminal.wait_text("alice", "item 2/4", "Story 1.", "grammaticality")
        page.click("#terminal")
        terminal.keys("1234")
        terminal.wait_text("item 3/4", "Story 2.")
        page.close()

        assert server.wait_line(lambda line: line == "alice: session ended", timeout=TIMEOUT_MS / 1000, count=2)
        assert [line for line in server.lines if "session started" in line] == ["alice: session started"] * 2
        assert children(server.process.pid) == []  # each app exited with its page
    finally:
        assert server.stop() == 0, server.output()
    assert ratings_in_force(db, "alice") == {
        ("s0", "grammaticality"): 4.0,
        ("s0", "cohesiveness"): 3.0,
        ("s0", "likability"): 2.0,
        ("s0", "relevance"): 5.0,
        ("s1", "grammaticality"): 1.0,
        ("s1", "cohesiveness"): 2.0,
        ("s1", "likability"): 3.0,
        ("s1", "relevance"): 4.0,
    }
    assert ratings_in_force(db, "bob") == {}


def test_a_wrong_link_shows_the_403_page_in_the_browser_and_starts_no_app(tmp_path, chromium):
    db = story_study(tmp_path / "s.db")
    server = ServeProcess(db, "--task", "story", "--annotators", "alice")
    try:
        token = server.links()["alice"].rsplit("/", 1)[1]
        page = chromium.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        sockets: list[str] = []
        page.on("websocket", lambda websocket: sockets.append(websocket.url))
        response = page.goto(f"{server.base}/a/{token[::-1]}")
        assert response is not None and response.status == 403
        assert page.locator("h1").inner_text() == "This link does not open the study"
        response = page.goto(server.base)
        assert response is not None and response.status == 403
        page.wait_for_timeout(1000)
        assert sockets == [] and children(server.process.pid) == []
        assert "session started" not in server.output()
    finally:
        assert server.stop() == 0, server.output()


def test_stopping_the_server_with_a_page_open_saves_that_page_s_ratings(tmp_path, chromium):
    db = story_study(tmp_path / "s.db")
    server = ServeProcess(db, "--task", "story", "--annotators", "bob")
    try:
        page = chromium.new_page(viewport={"width": 1100, "height": 700})
        page.set_default_timeout(TIMEOUT_MS)
        terminal = Terminal(page)
        page.goto(server.links()["bob"])
        terminal.wait_text("bob", "item 1/4", "Story 0.", "grammaticality")
        page.click("#terminal")
        terminal.keys("5555")
        terminal.wait_text("item 2/4")
        terminal.keys("21")  # two questions of item 2, then SIGTERM: the app is told to quit, saves, exits
        # the app has the key: "[1…]" while saving, "[1]" once in the file (never a bare "[1": escape sequences hold it)
        terminal.wait_text("[1…]", "[1]", any_of=True)
        code = server.stop(timeout=TIMEOUT_MS / 1000)  # SIGTERM with bob's page open
    finally:
        server.stop()  # (already stopped: its exit status again)
    assert code == 0, server.output()
    assert "bob: session ended" in server.lines
    assert ratings_in_force(db, "bob") == {
        ("s0", "grammaticality"): 5.0,
        ("s0", "cohesiveness"): 5.0,
        ("s0", "likability"): 5.0,
        ("s0", "relevance"): 5.0,
        ("s1", "grammaticality"): 2.0,
        ("s1", "cohesiveness"): 1.0,
    }


def test_two_annotators_at_once_each_rate_under_their_own_name(tmp_path, chromium):
    """Two pages open at the same time, one app process each: every rating lands under the link's owner."""
    db = story_study(tmp_path / "s.db")
    server = ServeProcess(db, "--task", "story", "--annotators", "alice,bob")
    try:
        links = server.links()
        pages = {}
        for name in ("alice", "bob"):
            page = chromium.new_page(viewport={"width": 1100, "height": 700})
            page.set_default_timeout(TIMEOUT_MS)
            pages[name] = (page, Terminal(page))
            page.goto(links[name])
        for name, (_page, terminal) in pages.items():
            terminal.wait_text(name, "item 1/4", "Story 0.", "grammaticality")
        assert len(children(server.process.pid)) == 2  # both apps running
        for name, keys in (("alice", "1111"), ("bob", "5555")):
            page, terminal = pages[name]
            page.click("#terminal")
            terminal.keys(keys)
            terminal.wait_text("item 2/4")
        for page, _ in pages.values():
            page.close()
        assert server.wait_line(lambda line: line.endswith(": session ended"), timeout=TIMEOUT_MS / 1000, count=2)
    finally:
        assert server.stop() == 0, server.output()
    attributes = ("grammaticality", "cohesiveness", "likability", "relevance")
    assert ratings_in_force(db, "alice") == {("s0", attribute): 1.0 for attribute in attributes}
    assert ratings_in_force(db, "bob") == {("s0", attribute): 5.0 for attribute in attributes}


def test_an_app_that_cannot_start_ends_the_session_in_the_browser_and_says_why_in_serve_s_output(tmp_path, chromium):
    """The study file moved away after `serve` started: the app exits with its one sentence. The page says
    "Session ended" (with a restart button) instead of staying blank, and the lead reads why."""
    db = story_study(tmp_path / "s.db")
    server = ServeProcess(db, "--task", "story", "--annotators", "alice")
    try:
        db.rename(tmp_path / "moved.db")
        page = chromium.new_page()
        page.set_default_timeout(TIMEOUT_MS)
        page.goto(server.links()["alice"])
        page.wait_for_selector("body.-closed")
        assert page.locator(".closed-dialog .message").inner_text() == "Session ended."
        assert server.wait_line(lambda line: line == "alice: session ended", timeout=TIMEOUT_MS / 1000), server.output()
        # the app's sentence, whole and once (textual-serve wrote what it had read of it twice, and could cut it)
        said = [line for line in server.lines if "does not exist" in line]
        assert said == [f"tui-rater: error: database {db} does not exist (run `tui-rater import` first)"], (
            server.output()
        )
        assert children(server.process.pid) == []
    finally:
        assert server.stop() == 0, server.output()


def test_a_second_tab_of_one_link_takes_over_and_the_first_says_why(tmp_path, chromium):
    """One live session per link (issue 36: two tabs of one person overwrote each other's answers while both
    screens showed their own): the second tab's app starts once the first tab's has saved and exited, so it
    goes on after what the first one rated; the first tab says why it ended."""
    db = story_study(tmp_path / "s.db")
    server = ServeProcess(db, "--task", "story", "--annotators", "alice")
    try:
        link = server.links()["alice"]
        first = chromium.new_page(viewport={"width": 1100, "height": 700})
        first.set_default_timeout(TIMEOUT_MS)
        first_terminal = Terminal(first)
        first.goto(link)
        first_terminal.wait_text("alice", "item 1/4", "Story 0.", "grammaticality")
        first.click("#terminal")
        first_terminal.keys("4325")
        first_terminal.wait_text("item 2/4")
        second = chromium.new_page(viewport={"width": 1100, "height": 700})
        second.set_default_timeout(TIMEOUT_MS)
        second_terminal = Terminal(second)
        second.goto(link)
        first.wait_for_selector("body.-closed")
        assert first.locator(".closed-dialog .message").inner_text() == TAKEN_OVER
        second_terminal.wait_text("alice", "item 2/4", "Story 1.")  # after what the first tab saved
        second.click("#terminal")
        second_terminal.keys("1111")
        second_terminal.wait_text("item 3/4")
        assert len(children(server.process.pid)) == 1
        second.close()
        assert server.wait_line(lambda line: line == "alice: session ended", timeout=TIMEOUT_MS / 1000, count=2)
    finally:
        assert server.stop() == 0, server.output()
    assert len(ratings_in_force(db, "alice")) == 8

"""The annotation app in a browser: textual-serve's server, with a personal link per annotator.

textual-serve (the Textual team's package) runs one app process per browser websocket and relays the
terminal to xterm.js in the page. Its ``Server`` serves one command to whoever connects; here every
page and websocket is under ``/a/<token>``, the token's SHA-256 names the annotator, and the command
started for the websocket rates under that name. A wrong or missing token gets a 403 page, and no
process is started for it: the check comes before the websocket is accepted.

Every request asks the study (``LinkBook``): a link replaced meanwhile, by ``serve --new-links`` in another
process, no longer opens. One live session per link: a second page of the same link takes over, and the
first page is told so and closed (its app saves and exits before the new one starts, so the new screen
shows everything saved). At most ``max_sessions`` app processes run at once; past that a page says so.
Each app dies with the server (``ui/parent.py``): it is told the server's process id.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
import os
import signal
import socket
import sqlite3
import sys
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import aiohttp_jinja2
import jinja2
from aiohttp import WSCloseCode, web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from tui_rater.ui.parent import PARENT_VARIABLE

log = logging.getLogger("textual-serve")

WS_TAKEN_OVER = 4000  # (4000-4999: the application's own close codes)
WS_REVOKED = 4001
STDERR_GRACE_S = 5.0  # how long an ended app's stderr is read on, when something else still holds it
EXIT_NOTE_S = 30.0  # an app still running this long after it was asked to quit is noted in serve's output
REVOCATION_CHECK_S = 2.0  # how often the live sessions' links are read again from the study

PAGE = """<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>tui-rater: {heading}</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 4em auto; line-height: 1.5">
<h1>{heading}</h1>
<p>{text}</p>
</body>
</html>
"""
NOT_A_LINK = (
    " Each annotator has a personal link, of the form <code>/a/&lt;token&gt;</code>. Ask the person who runs the "
    "study for yours; if it was lost, they make a new one (<code>tui-rater serve --new-links</code>), and the old "
    "one stops working."
)
TAKEN_OVER = (
    "This link was opened in another tab or window, which goes on from here (what you rated here is saved first)."
)
REVOKED = (
    "This link was replaced or withdrawn by the study's lead (what you rated here is saved): ask for your new one."
)
assert len(REVOKED.encode()) <= 123  # a websocket's close reason: at most 123 bytes (RFC 6455, 5.5.1)
NOT_A_WEBSOCKET = "This address takes the page's websocket, not a plain request: open the link itself.\n"

# The reason the server gives when it closes a page's websocket (another page took over, the server stops) is
# shown in textual-serve's "Session ended." dialog, which otherwise says only that.
CLOSE_REASON_SCRIPT = """<script>
(function () {
  const Native = window.WebSocket;
  function Watched(url, protocols) {
    const socket = protocols === undefined ? new Native(url) : new Native(url, protocols);
    socket.addEventListener("close", function (event) {
      const message = document.querySelector(".closed-dialog .message");
      if (event.reason && message) { message.textContent = event.reason; }
    });
    return socket;
  }
  Watched.prototype = Native.prototype;
  for (const name of ["CONNECTING", "OPEN", "CLOSING", "CLOSED"]) { Watched[name] = Native[name]; }
  window.WebSocket = Watched;
})();
</script>
"""

# the token is in the page's URL: it must not travel on in a Referer header, nor stay in a cache
PRIVATE_HEADERS = {"Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}


@dataclass(eq=False)
class Live:
    """One link's session: its page's websocket, until its app process has exited."""

    websocket: web.WebSocketResponse
    token: str = ""
    ended: asyncio.Event = field(default_factory=asyncio.Event)


class Links(Protocol):
    """Whose link a token is, and why that annotator may not rate now (``store.links.LinkBook``)."""

    def annotator(self, token: str) -> str | None: ...

    def refusal(self, annotator: str) -> str | None: ...


class AppSession(AppService):
    """textual-serve's app process, whose end (``q``, a crash, an error before the screen opened) also ends
    the page's websocket: the browser says "Session ended" and offers a restart instead of a blank page.
    (textual-serve closes it only when the app says it exits.) The app's messages go to serve's output."""

    async def run(self) -> None:
        try:
            await self._relay()
        finally:
            with contextlib.suppress(Exception):
                await self.remote_close()

    async def _relay(self) -> None:
        """textual-serve's ``AppService.run``, but the app's stderr (the one sentence of an app that could not
        start) is read to its end before it is written to serve's output, once and flushed: textual-serve
        cancelled its stderr reader as soon as stdout ended, so the sentence could be cut or missing, and it
        wrote what it had twice (when the app did not start, and again when it ended)."""
        process = self._process
        assert process is not None and process.stdout is not None and process.stderr is not None
        stdout, stderr = process.stdout, process.stderr
        said = bytearray()

        async def read_errors() -> None:
            while chunk := await stderr.read(4096):
                said.extend(chunk)

        errors = asyncio.create_task(read_errors())
        try:
            started = False
            for _ in range(10):  # the prelude: a Textual app says so before its first packet
                if not (line := await stdout.readline()):
                    break
                if line == b"__GANGLION__\n":
                    started = True
                    break
            if not started:
                log.error("Application failed to start")
            while True:
                kind = await stdout.readexactly(1)
                size = int.from_bytes(await stdout.readexactly(4), "big")
                payload = await stdout.readexactly(size)
                if kind == b"D":
                    await self.on_data(payload)
                elif kind == b"M":
                    await self.on_meta(payload)
                elif kind == b"P":
                    await self.on_packed(payload)
        except (asyncio.IncompleteReadError, ConnectionResetError):
            pass  # the app closed its output: it has ended
        except asyncio.CancelledError:
            pass  # (as textual-serve's: ``stop`` awaits this task, and returns when it was cancelled too)
        finally:
            # stderr ends when the app does; a process the app left behind may hold it open: not for long
            try:
                with contextlib.suppress(asyncio.TimeoutError, OSError):
                    await asyncio.wait_for(asyncio.shield(errors), STDERR_GRACE_S)
            finally:
                errors.cancel()
            if said:
                message = said.decode("utf-8", "replace")
                sys.stdout.write(message if message.endswith("\n") else message + "\n")
                sys.stdout.flush()

    def _build_environment(self, width: int = 80, height: int = 24) -> dict[str, str]:
        environment = super()._build_environment(width, height)
        environment[PARENT_VARIABLE] = str(os.getpid())  # the app dies with this server (``ui/parent.py``)
        return environment

    async def exited(self) -> int | None:
        """Wait until the app process has exited (it may still be saving after its screen closed)."""
        process = getattr(self, "_process", None)  # textual-serve's handle on the process
        return None if process is None else await process.wait()


def page(status: int, heading: str, text: str, headers: dict[str, str] | None = None) -> web.Response:
    """A page of one heading and one paragraph (``text`` is HTML: escape what comes from data)."""
    return web.Response(
        status=status,
        text=PAGE.format(heading=html.escape(heading), text=text),
        content_type="text/html",
        headers={**PRIVATE_HEADERS, **(headers or {})},
    )


def refused(reason: str) -> web.Response:
    return page(403, "This link does not open the study", html.escape(reason) + NOT_A_LINK)


def not_in_plan(reason: str) -> web.Response:
    return page(403, "This link cannot open the study now", html.escape(reason))


def full(limit: int) -> web.Response:
    text = (
        f"This server runs at most {limit} session{'s' if limit != 1 else ''} at once, and {limit} "
        f"{'are' if limit != 1 else 'is'} open. Try again in a few minutes, or tell the person who runs the study "
        "(<code>tui-rater serve --max-sessions</code>)."
    )
    return page(503, "The server is full", text, {"Retry-After": "60"})


def unreadable(error: Exception) -> web.Response:
    return page(503, "The study cannot be read now", html.escape(f"{error}. Try again in a moment."))


class LinkServer(Server):
    """textual-serve's ``Server``, one annotator per link.

    ``links``: whose link a token is, asked on every request; ``command_for(annotator)``: the shell command
    that runs the app for them (its arguments quoted); ``max_sessions``: app processes at once.
    """

    def __init__(
        self,
        links: Links,
        command_for: Callable[[str], str],
        *,
        title: str,
        host: str = "127.0.0.1",
        port: int = 8000,
        max_sessions: int = 32,
        note: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(command="tui-rater annotate", host=host, port=port, title=title)
        self.links = links
        self.command_for = command_for
        self.max_sessions = max_sessions
        self.note = note or (lambda line: None)  # one line per session started and ended
        self._sockets: weakref.WeakSet[web.WebSocketResponse] = weakref.WeakSet()
        self._live: dict[str, Live] = {}  # annotator -> their session, until its app has exited
        self._opening: dict[str, asyncio.Lock] = {}  # one opening (or take-over) at a time per link

    def annotator(self, request: web.Request) -> str | None:
        return self.links.annotator(request.match_info.get("token", ""))

    def admit(self, request: web.Request, websocket: bool) -> tuple[str | None, web.StreamResponse | None]:
        """(annotator, None) when the link may open a session now; else (None, the page that says why)."""
        try:
            annotator = self.annotator(request)
            refusal = self.links.refusal(annotator) if annotator is not None else None
        except sqlite3.Error as error:  # (read from the study on every request: a revoked link closes at once)
            return None, unreadable(error)
        if annotator is None:
            return None, refused("This link is not (or no longer) valid.")
        if websocket and not web.WebSocketResponse().can_prepare(request).ok:
            return None, web.Response(status=400, text=NOT_A_WEBSOCKET, headers=PRIVATE_HEADERS)
        if refusal is not None:
            return None, not_in_plan(refusal)
        if annotator not in self._live and len(self._live) >= self.max_sessions:
            return None, full(self.max_sessions)
        return annotator, None

    async def _make_app(self) -> web.Application:
        app = web.Application()
        aiohttp_jinja2.setup(app, loader=jinja2.FileSystemLoader(self.templates_path))
        app.add_routes(
            [
                web.get("/a/{token}", self.handle_link, name="index"),
                web.get("/a/{token}/ws", self.handle_link_websocket, name="websocket"),
                web.static("/static", self.statics_path, name="static"),
                web.get("/{tail:.*}", self.handle_no_token),
            ]
        )
        app.on_shutdown.append(self.on_shutdown)
        return app

    async def handle_no_token(self, request: web.Request) -> web.Response:
        return refused("The address holds no personal link.")

    async def handle_link(self, request: web.Request) -> web.StreamResponse:
        annotator, refusal = self.admit(request, websocket=False)
        if annotator is None:
            assert refusal is not None
            return refusal
        scheme = "wss" if request.secure else "ws"
        token = request.match_info["token"]
        context: dict[str, Any] = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            # the host the browser used (an SSH tunnel's local port, say), not the one bound here
            "app_websocket_url": f"{scheme}://{request.host}/a/{token}/ws",
            "config": {"static": {"url": "/static/"}},
            "application": {"name": f"{self.title} · {annotator}"},  # the template escapes it
        }
        text = aiohttp_jinja2.render_string("app_index.html", request, context)
        text = text.replace("</head>", CLOSE_REASON_SCRIPT + "</head>", 1)
        return web.Response(text=text, content_type="text/html", headers=PRIVATE_HEADERS)

    async def handle_link_websocket(self, request: web.Request) -> web.StreamResponse:
        # every refusal comes before the websocket is accepted: no app process starts for it
        annotator, refusal = self.admit(request, websocket=True)
        if annotator is None:
            assert refusal is not None
            return refusal
        lock = self._opening.setdefault(annotator, asyncio.Lock())
        async with lock:
            earlier = self._live.get(annotator)
            if earlier is not None:  # one live session per link: this page takes over
                await self._take_over(annotator, earlier)
            if len(self._live) >= self.max_sessions:  # (filled while this one waited)
                return full(self.max_sessions)
            websocket = web.WebSocketResponse(heartbeat=15)
            await websocket.prepare(request)
            live = self._live[annotator] = Live(websocket, request.match_info.get("token", ""))
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        app_service: AppSession | None = None

        async def close_socket() -> None:  # (the session awaits it; the socket's own close returns a bool)
            await websocket.close()

        try:
            self._sockets.add(websocket)
            app_service = AppSession(
                self.command_for(annotator),
                write_bytes=websocket.send_bytes,
                write_str=websocket.send_str,
                close=close_socket,
                download_manager=self.download_manager,
                debug=self.debug,
            )
            self.note(f"{annotator}: session started")
            await app_service.start(width, height)
            await self._process_messages(websocket, app_service)
        except asyncio.CancelledError:
            await websocket.close()
        except Exception as error:  # (a browser's malformed message, say): one line in serve's output
            if os.environ.get("TUI_RATER_DEBUG"):
                log.exception(error)
            self.note(f"{annotator}: session error: {type(error).__name__}: {error}")
        finally:
            try:
                if app_service is not None:  # asks the app to quit, and waits until it has (it saves first)
                    await self._end_app(annotator, app_service)
            finally:
                if self._live.get(annotator) is live:
                    del self._live[annotator]
                live.ended.set()
        return websocket

    async def _end_app(self, annotator: str, app_service: AppSession) -> None:
        """Ask the app to quit and wait until its process has exited (it saves first); serve's output says when,
        and says so when that takes long, or when the wait itself failed."""
        try:
            await app_service.stop()
            exited = asyncio.ensure_future(app_service.exited())
            if not (await asyncio.wait({exited}, timeout=EXIT_NOTE_S))[0]:
                self.note(f"{annotator}: the app has not exited after {EXIT_NOTE_S:.0f} s; waiting (it saves first)")
            await exited
        except Exception as error:
            self.note(f"{annotator}: session error while ending: {type(error).__name__}: {error}")
            raise
        self.note(f"{annotator}: session ended")

    async def _take_over(self, annotator: str, earlier: Live) -> None:
        """End ``annotator``'s earlier session for a new page of the same link: its page is told why, its app
        saves and exits; the new app starts only then, so it shows everything the earlier one saved."""
        if not earlier.websocket.closed:  # (a reload closed it already: nobody to tell)
            self.note(f"{annotator}: the link was opened again; its earlier page is closed")
            await earlier.websocket.close(code=WS_TAKEN_OVER, message=TAKEN_OVER.encode())
        await earlier.ended.wait()

    async def _end_revoked(self) -> None:
        """Revocation takes effect at once for sessions already open too: every ``REVOCATION_CHECK_S`` the live
        sessions' links are read again from the study, and a session whose link was replaced or withdrawn (``serve
        --new-links`` in another process, a name taken out of the plan) is closed with the reason, its app saving
        first, as when another page takes over."""
        while True:
            await asyncio.sleep(REVOCATION_CHECK_S)
            for annotator, live in list(self._live.items()):
                try:
                    still = self.links.annotator(live.token) == annotator and self.links.refusal(annotator) is None
                except sqlite3.Error:
                    continue  # the study unreadable for a moment (a writer's lock): look again next time
                if not still and not live.websocket.closed:
                    self.note(f"{annotator}: the link was revoked; its page is closed")
                    await live.websocket.close(code=WS_REVOKED, message=REVOKED.encode())

    async def on_shutdown(self, app: web.Application) -> None:
        # closing each browser's websocket ends its app the way closing the tab does: it saves, then exits
        for websocket in list(self._sockets):
            await websocket.close(code=WSCloseCode.GOING_AWAY, message=b"the server is stopping")

    async def serve_on(self, sock: socket.socket, ready: Callable[[], None] | None = None) -> None:
        """Serve on an already bound socket until SIGINT or SIGTERM; then every app saves and exits."""
        runner = web.AppRunner(await self._make_app(), access_log=None, handle_signals=False, shutdown_timeout=60)
        await runner.setup()
        await web.SockSite(runner, sock).start()
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(NotImplementedError):
                loop.add_signal_handler(sig, stop.set)
        if ready is not None:
            ready()
        watcher = asyncio.create_task(self._end_revoked())
        try:
            await stop.wait()
        finally:
            watcher.cancel()
            await runner.cleanup()

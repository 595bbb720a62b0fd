"""The annotation app in a browser: textual-serve's server, with a personal link per annotator.

textual-serve (the Textual team's package) runs one app process per browser websocket and relays the
terminal to xterm.js in the page. Its ``Server`` serves one command to whoever connects; here every
page and websocket is under ``/a/<token>``, the token's SHA-256 names the annotator, and the command
started for the websocket rates under that name. A wrong or missing token gets a 403 page, and no
process is started for it: the check comes before the websocket is accepted.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
import signal
import socket
import weakref
from collections.abc import Callable
from typing import Any

import aiohttp_jinja2
import jinja2
from aiohttp import WSCloseCode, web
from textual_serve.app_service import AppService
from textual_serve.server import Server, to_int

from tui_rater.store.links import token_hash

log = logging.getLogger("textual-serve")

REFUSED_PAGE = """<!DOCTYPE html>
<html lang="en">
<head><meta charset="utf-8"><title>tui-rater: this link does not open the study</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 4em auto; line-height: 1.5">
<h1>This link does not open the study</h1>
<p>{reason} Each annotator has a personal link, of the form <code>/a/&lt;token&gt;</code>.
Ask the person who runs the study for yours; if it was lost, they make a new one
(<code>tui-rater serve --new-links</code>), and the old one stops working.</p>
</body>
</html>
"""

# the token is in the page's URL: it must not travel on in a Referer header, nor stay in a cache
PRIVATE_HEADERS = {"Referrer-Policy": "no-referrer", "Cache-Control": "no-store"}


class AppSession(AppService):
    """textual-serve's app process, whose end (``q``, a crash, an error before the screen opened) also ends
    the page's websocket: the browser says "Session ended" and offers a restart instead of a blank page.
    (textual-serve closes it only when the app says it exits.) The app's messages go to serve's output."""

    async def run(self) -> None:
        try:
            await super().run()
        finally:
            with contextlib.suppress(Exception):
                await self.remote_close()

    async def exited(self) -> int | None:
        """Wait until the app process has exited (it may still be saving after its screen closed)."""
        process = getattr(self, "_process", None)  # textual-serve's handle on the process
        return None if process is None else await process.wait()


def refused(reason: str) -> web.Response:
    return web.Response(
        status=403,
        text=REFUSED_PAGE.format(reason=html.escape(reason)),
        content_type="text/html",
        headers=PRIVATE_HEADERS,
    )


class LinkServer(Server):
    """textual-serve's ``Server``, one annotator per link.

    ``annotators``: token SHA-256 -> annotator name; ``command_for(annotator)``: the shell command
    that runs the app for them (its arguments quoted).
    """

    def __init__(
        self,
        annotators: dict[str, str],
        command_for: Callable[[str], str],
        *,
        title: str,
        host: str = "127.0.0.1",
        port: int = 8000,
        note: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__(command="tui-rater annotate", host=host, port=port, title=title)
        self.annotators = dict(annotators)
        self.command_for = command_for
        self.note = note or (lambda line: None)  # one line per session started and ended
        self._sockets: weakref.WeakSet[web.WebSocketResponse] = weakref.WeakSet()

    def annotator(self, request: web.Request) -> str | None:
        token = request.match_info.get("token", "")
        return self.annotators.get(token_hash(token)) if token else None

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

    async def handle_link(self, request: web.Request) -> web.Response:
        annotator = self.annotator(request)
        if annotator is None:
            return refused("This link is not (or no longer) valid.")
        scheme = "wss" if request.secure else "ws"
        token = request.match_info["token"]
        context: dict[str, Any] = {
            "font_size": to_int(request.query.get("fontsize", "16"), 16),
            # the host the browser used (an SSH tunnel's local port, say), not the one bound here
            "app_websocket_url": f"{scheme}://{request.host}/a/{token}/ws",
            "config": {"static": {"url": "/static/"}},
            "application": {"name": f"{self.title} · {annotator}"},  # the template escapes it
        }
        response = aiohttp_jinja2.render_template("app_index.html", request, context)
        response.headers.update(PRIVATE_HEADERS)
        return response

    async def handle_link_websocket(self, request: web.Request) -> web.StreamResponse:
        annotator = self.annotator(request)
        if annotator is None:  # refused before the websocket is accepted: no app process starts
            return refused("This link is not (or no longer) valid.")
        websocket = web.WebSocketResponse(heartbeat=15)
        width = to_int(request.query.get("width", "80"), 80)
        height = to_int(request.query.get("height", "24"), 24)
        app_service: AppSession | None = None

        async def close_socket() -> None:  # (the session awaits it; the socket's own close returns a bool)
            await websocket.close()

        try:
            await websocket.prepare(request)
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
        except Exception as error:
            log.exception(error)
        finally:
            if app_service is not None:  # asks the app to quit, and waits until it has (it saves first)
                await app_service.stop()
                await app_service.exited()
                self.note(f"{annotator}: session ended")
        return websocket

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
        try:
            await stop.wait()
        finally:
            await runner.cleanup()

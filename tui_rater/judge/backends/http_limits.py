"""Limits on what one API request may cost: a total deadline, and a cap on the bytes a reply decodes to.

A read timeout restarts with every byte, so a server sending its headers (or its body) one byte a second
holds a worker forever: every network read here is given at most what is left of the request's total
deadline (``--timeout``), through the HTTP client's network backend, and the request fails as a timeout
when it is spent. A reply is counted after decoding: gzip can turn a 100 KB body into 100 MB, so a
compressed body is decompressed here, counted as it grows, and refused at ``MAX_BODY_BYTES``.

The openai client brings its own copy of httpx / httpcore (``httpx2`` / ``httpcore2`` in openai 3); the
modules are found through the client rather than named, so either generation works.
"""

from __future__ import annotations

import importlib
import sys
import threading
import time
import zlib
from collections.abc import Iterator
from functools import partial
from typing import Any

from tui_rater.judge.backends.api_reply import MAX_BODY_BYTES


class BodyTooLarge(Exception):
    pass


class BodyTooSlow(Exception):
    pass


class BadEncoding(Exception):
    pass


_DEADLINE = threading.local()  # the deadline of the request this thread is making (time.monotonic())


class deadline:
    """``with deadline(seconds):`` every network read and write of the requests made inside gets at most
    what is left of ``seconds``; past it they fail as timeouts."""

    def __init__(self, seconds: float):
        self.seconds = seconds

    def __enter__(self) -> None:
        _DEADLINE.at = time.monotonic() + self.seconds

    def __exit__(self, *exc: object) -> None:
        _DEADLINE.at = None


def _left(timeout: float | None, timeout_error: type[Exception]) -> float | None:
    at: float | None = getattr(_DEADLINE, "at", None)
    if at is None:
        return timeout
    left = at - time.monotonic()
    if left <= 0:
        raise timeout_error("the request's total deadline has passed")
    return left if timeout is None else min(timeout, left)


def _modules(openai: Any) -> tuple[Any, Any]:
    """(httpx, httpcore) as the openai client uses them."""
    httpx = sys.modules[openai.DefaultHttpxClient.__mro__[1].__module__.partition(".")[0]]
    return httpx, importlib.import_module(httpx.__name__.replace("httpx", "httpcore", 1))


def httpx_of(openai: Any) -> Any:
    """The httpx module the openai client uses (a streamed body's reads raise its errors, not openai's)."""
    return _modules(openai)[0]


def _deadline_backend(httpcore: Any) -> Any:
    """httpcore's sync network backend, each read, write, connect and TLS handshake bounded by the deadline."""
    timeout_error = httpcore.ReadTimeout

    class Stream(httpcore.NetworkStream):  # type: ignore[misc]
        def __init__(self, inner: Any):
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return bytes(self._inner.read(max_bytes, _left(timeout, timeout_error)))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._inner.write(buffer, _left(timeout, httpcore.WriteTimeout))

        def close(self) -> None:
            self._inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None, timeout: float | None = None) -> Any:
            return Stream(self._inner.start_tls(ssl_context, server_hostname, _left(timeout, httpcore.ConnectTimeout)))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class Backend(httpcore.NetworkBackend):  # type: ignore[misc]
        def __init__(self) -> None:
            self._inner = httpcore.SyncBackend()

        def connect_tcp(self, host: str, port: int, timeout: float | None = None, **options: Any) -> Any:
            timeout = _left(timeout, httpcore.ConnectTimeout)
            return Stream(self._inner.connect_tcp(host, port, timeout, **options))

        def connect_unix_socket(self, path: str, timeout: float | None = None, **options: Any) -> Any:
            return Stream(self._inner.connect_unix_socket(path, _left(timeout, httpcore.ConnectTimeout), **options))

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    return Backend()


def _transport(httpx: Any, httpcore: Any) -> Any:
    class DeadlineTransport(httpx.HTTPTransport):  # type: ignore[misc]
        """The default transport with the deadline backend (its pool is built as httpx builds it)."""

        def __init__(self) -> None:
            # one TLS context for both pools (loading the CA bundle twice was a tenth of a second of the launch)
            ssl_context = httpx.create_ssl_context()
            super().__init__(verify=ssl_context)
            limits = httpx.Limits(max_connections=1000, max_keepalive_connections=100, keepalive_expiry=5.0)
            self._pool = httpcore.ConnectionPool(
                ssl_context=ssl_context,
                max_connections=limits.max_connections,
                max_keepalive_connections=limits.max_keepalive_connections,
                keepalive_expiry=limits.keepalive_expiry,
                network_backend=_deadline_backend(httpcore),
            )

    return DeadlineTransport()


def _decoded(chunks: Iterator[bytes], encoding: str, limit: int = MAX_BODY_BYTES) -> Iterator[bytes]:
    """A gzip or deflate body decompressed, never past ``limit`` (the cap counts what it decodes to)."""
    # 32 + MAX_WBITS: a gzip or zlib header, found by zlib; raw deflate (no header) as some servers send it,
    # tried (as httpx does) when a deflate body's first bytes are no header
    decoder = zlib.decompressobj(32 + zlib.MAX_WBITS)
    size, first = 0, True
    for chunk in chunks:
        try:
            try:
                out = decoder.decompress(chunk, limit + 1 - size)
            except zlib.error:
                if not (first and encoding == "deflate"):
                    raise
                decoder = zlib.decompressobj(-zlib.MAX_WBITS)
                out = decoder.decompress(chunk, limit + 1 - size)
        except zlib.error:
            raise BadEncoding(f"its {encoding} body is not valid") from None
        first = first and not chunk
        size += len(out)
        if size > limit or decoder.unconsumed_tail:
            raise BodyTooLarge()
        yield out
    yield decoder.flush()


def _capped(base: type) -> type:
    class CappedStream(base):  # type: ignore[misc]
        """A response body that stops at its limit (decoded; MAX_BODY_BYTES but for a batch's result file) and at
        the request's deadline."""

        def __init__(self, stream: Any, deadline_at: float, encoding: str, limit: int):
            self.stream, self.deadline_at, self.encoding, self.limit = stream, deadline_at, encoding, limit

        def _raw(self) -> Iterator[bytes]:
            size = 0
            for chunk in self.stream:
                size += len(chunk)
                if size > self.limit:
                    raise BodyTooLarge()
                if time.monotonic() > self.deadline_at:  # a server that drips bytes defeats a read timeout
                    raise BodyTooSlow()
                yield chunk

        def __iter__(self) -> Iterator[bytes]:
            if self.encoding in ("", "identity"):
                yield from self._raw()
            else:
                yield from _decoded(self._raw(), self.encoding, self.limit)

        def close(self) -> None:
            self.stream.close()

    return CappedStream


_CAPPED: dict[type, type] = {}
ENCODINGS = {"": "", "identity": "", "gzip": "gzip", "x-gzip": "gzip", "deflate": "deflate"}


def _cap_body(timeout_s: float, response: Any, max_bytes: int = MAX_BODY_BYTES) -> None:
    """Response hook: the body is read through the cap (the headers are in, the body not yet); a gzip or
    deflate body is decoded here, so the client gets it as identity and the cap counts decoded bytes."""
    module = sys.modules[type(response).__module__.partition(".")[0]]
    encoding = response.headers.get("content-encoding", "").strip().lower()
    if encoding not in ENCODINGS:
        raise BadEncoding(f"it sent its answer in the {encoding!r} encoding, which is not read here")
    if encoding:
        del response.headers["content-encoding"]
    base = module.SyncByteStream
    if base not in _CAPPED:
        _CAPPED[base] = _capped(base)
    response.stream = _CAPPED[base](response.stream, time.monotonic() + timeout_s, ENCODINGS[encoding], max_bytes)


def http_client(openai: Any, timeout_s: float, max_bytes: int = MAX_BODY_BYTES) -> Any:
    """The httpx client for one judge: the deadline transport, the decoded-size cap (``max_bytes``: a batch's
    result file, read line by line, may be larger than one reply), no compression asked."""
    httpx, httpcore = _modules(openai)
    return openai.DefaultHttpxClient(
        transport=_transport(httpx, httpcore),
        event_hooks={"response": [partial(_cap_body, timeout_s, max_bytes=max_bytes)]},
        headers={"accept-encoding": "identity"},  # asked not to compress; decoded and counted if it does
    )

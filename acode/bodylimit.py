"""Request bodies over ``ACODE_MAX_BODY_BYTES`` are refused before they are read, under
every server acode ships with.

- :class:`BodyLimit`, ASGI middleware around the HTTP app: a declared ``Content-Length``
  over the limit is answered 413 at once, without a single ``receive``; a body without
  one (chunked) is counted as it streams and refused as soon as it passes the limit. The
  server then closes the connection (``Connection: close``). uvicorn calls the application
  as soon as the headers are in, so this is all it needs.
- :func:`limit_daphne_bodies`: daphne (Twisted) reads the whole body, to memory or a
  temporary file, before it calls the application at all, so an ASGI guard alone would
  answer a declared 10^12 bytes never, and 30 MB only after reading them. Its request
  class gets the same check where Twisted learns the length (``gotLength``) and as the
  body streams in (``handleContentChunk``).

Either way the answer is the API's error body, ``413 ACODE-API-413``, with the request id
(``text/plain`` outside ``/api/``). Django's own check (``acode.middleware``) stays for
servers that hand it a body they read already (the test client, WSGI).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

logger = logging.getLogger(__name__)

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
AsgiApp = Callable[[Scope, Receive, Send], Awaitable[None]]

API_PREFIX = "/api/"
REQUEST_ID_HEADER = "X-Request-ID"
MAX_REQUEST_ID_CHARS = 200
# After refusing a body under daphne, what of it is still read (and dropped), and for how
# long the connection stays open, so that a client busy sending it reads the answer
# rather than a reset.
LINGER_BYTES = 1024 * 1024
LINGER_SECONDS = 2.0


def is_printable_ascii(text: str) -> bool:
    return all(" " <= char <= "~" for char in text)


def usable_request_id(given: str) -> str:
    """The client's ``X-Request-ID`` when it is 1 to 200 printable ASCII characters, else
    one made up. The one rule, shared with ``acode.middleware``."""
    if 0 < len(given) <= MAX_REQUEST_ID_CHARS and is_printable_ascii(given):
        return given
    return uuid.uuid4().hex


def refusal(path: str, limit: int, declared: int | None, request_id: str) -> tuple[bytes, bytes]:
    """The 413 answer's body and content type: JSON under ``/api/``, text elsewhere."""
    how_big = f"has {declared} bytes" if declared is not None else "is longer than that"
    message = f"The request body {how_big}; the limit is {limit}."
    if not path.startswith(API_PREFIX):
        return f"{message}\n".encode(), b"text/plain; charset=utf-8"
    body = {
        "code": "ACODE-API-413",
        "message": message,
        "details": {"limit": limit},
        "request_id": request_id,
    }
    return json.dumps(body).encode(), b"application/json"


def _header(headers: list[tuple[bytes, bytes]], name: bytes) -> bytes | None:
    for key, value in headers:
        if key.lower() == name:
            return value
    return None


def declared_length(value: bytes | None) -> int | None:
    """A ``Content-Length`` value as a number; None when absent or not a number."""
    if value is None or not value.strip().isdigit():
        return None
    return int(value)


def _log_refusal(method: str, path: str, limit: int, declared: int | None) -> None:
    size = f"{declared} bytes declared" if declared is not None else "chunked, over the limit"
    logger.warning(
        "%s %s: request body refused before reading (%s; limit %d)", method, path, size, limit
    )


class BodyLimit:
    """ASGI middleware: 413 for a request body over ``limit`` bytes, before it is read."""

    def __init__(self, app: AsgiApp, *, limit: int) -> None:
        self.app = app
        self.limit = limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = list(scope.get("headers", []))
        declared = declared_length(_header(headers, b"content-length"))
        if declared is not None:
            if declared > self.limit:
                await self._refuse(scope, send, declared)
                return
            await self.app(scope, receive, send)
            return
        if b"chunked" not in (_header(headers, b"transfer-encoding") or b"").lower():
            await self.app(scope, receive, send)  # no body
            return
        # A streamed body: read it (it fits in the limit, or it is refused) before the
        # application sees it, and tell the application its length (Django reads a body
        # only as far as Content-Length says).
        messages: list[Message] = []
        total = 0
        while True:
            message = await receive()
            messages.append(message)
            if message["type"] != "http.request":
                break
            total += len(message.get("body", b""))
            if total > self.limit:
                await self._refuse(scope, send, None)
                return
            if not message.get("more_body", False):
                break
        kept = [(k, v) for k, v in headers if k.lower() != b"transfer-encoding"]
        scope = {**scope, "headers": [*kept, (b"content-length", str(total).encode())]}
        pending = iter(messages)

        async def replay() -> Message:
            return next(pending, None) or await receive()

        await self.app(scope, replay, send)

    async def _refuse(self, scope: Scope, send: Send, declared: int | None) -> None:
        headers = list(scope.get("headers", []))
        given = (_header(headers, REQUEST_ID_HEADER.lower().encode()) or b"").decode("latin-1")
        request_id = usable_request_id(given)
        path = str(scope.get("path", ""))
        _log_refusal(str(scope.get("method", "")), path, self.limit, declared)
        body, content_type = refusal(path, self.limit, declared, request_id)
        await send(
            {
                "type": "http.response.start",
                "status": 413,
                "headers": [
                    (b"content-type", content_type),
                    (b"content-length", str(len(body)).encode()),
                    (b"connection", b"close"),
                    (REQUEST_ID_HEADER.encode(), request_id.encode()),
                ],
            }
        )
        await send({"type": "http.response.body", "body": body})


# What the mixin extends: daphne's request class, known only once daphne is imported.
_WebRequest: Any = object


class DaphneBodyLimit(_WebRequest):
    """The body limit for daphne's (Twisted's) ``WebRequest``, mixed in before it by
    :func:`limit_daphne_bodies`, which sets ``acode_body_limit`` and ``acode_reactor``."""

    acode_body_limit: int
    acode_reactor: Any

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._acode_received = 0
        self._acode_refused = False
        self._acode_lingered = 0
        self._acode_abort: Any = None

    def gotLength(self, length: int | None) -> None:
        if length is not None and length > self.acode_body_limit:
            super().gotLength(0)  # a small buffer, never written to
            self._acode_refuse(length)
            return
        super().gotLength(length)

    def handleContentChunk(self, data: bytes) -> None:
        if self._acode_refused:
            self._acode_lingered += len(data)
            if self._acode_lingered > LINGER_BYTES and self.channel is not None:
                # Read no more; the connection is cut when the linger time is up (at
                # once could drop the answer before it left the write buffer).
                self.channel.transport.pauseProducing()
            return
        self._acode_received += len(data)
        if self._acode_received > self.acode_body_limit:
            self._acode_refuse(None)
            return
        super().handleContentChunk(data)

    def requestReceived(self, command: bytes, path: bytes, version: bytes) -> None:
        if not self._acode_refused:
            super().requestReceived(command, path, version)

    def connectionLost(self, reason: Any) -> None:
        if self._acode_abort is not None and self._acode_abort.active():
            self._acode_abort.cancel()
        super().connectionLost(reason)

    def _acode_refuse(self, declared: int | None) -> None:
        self._acode_refused = True
        # The request line is parsed but not yet given to the request (Twisted does
        # that once the body is in): the channel holds it meanwhile.
        method = getattr(self.channel, "_command", b"")
        path = getattr(self.channel, "_path", b"").split(b"?", 1)[0].decode("latin-1")
        given = self.requestHeaders.getRawHeaders(b"x-request-id", [b""])[0]
        request_id = usable_request_id(given.decode("latin-1"))
        _log_refusal(method.decode("latin-1"), path, self.acode_body_limit, declared)
        body, content_type = refusal(path, self.acode_body_limit, declared, request_id)
        head = (
            b"HTTP/1.1 413 Content Too Large\r\n"
            b"Content-Type: " + content_type + b"\r\n"
            b"Content-Length: " + str(len(body)).encode() + b"\r\n"
            b"Connection: close\r\n"
            b"X-Request-ID: " + request_id.encode() + b"\r\n\r\n"
        )
        transport = self.channel.transport
        transport.write(head + body)
        # Stop writing (the answer is all there is) but keep reading a little: a client
        # still sending its body then reads the answer instead of a reset.
        if hasattr(transport, "loseWriteConnection"):
            transport.loseWriteConnection()
        self._acode_abort = self.acode_reactor.callLater(LINGER_SECONDS, self._acode_close)

    def _acode_close(self) -> None:
        if self.channel is not None and self.channel.transport is not None:
            self.channel.transport.abortConnection()


def limit_daphne_bodies(limit: int) -> None:
    """Give daphne's request class the body limit (see the module docstring).

    daphne's ``HTTPFactory`` makes each request from the module's ``WebRequest``; that name
    is pointed at a subclass that refuses an oversized body from its headers (or its first
    chunks past the limit), answers 413 itself, and closes the connection once the client
    had a moment to read the answer. Such a request never reaches the application.
    """
    from daphne import http_protocol
    from twisted.internet import reactor

    base = http_protocol.WebRequest
    if getattr(base, "acode_body_limit", None) is not None:
        base.acode_body_limit = limit
        return

    class LimitedWebRequest(DaphneBodyLimit, base):  # type: ignore[misc, valid-type]
        acode_body_limit = limit
        acode_reactor = reactor  # the installed reactor (asyncio's, under daphne)

    http_protocol.WebRequest = LimitedWebRequest

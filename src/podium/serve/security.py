"""Who may read the dashboard: the token gate, the hosts it answers for, and headers that keep pages inert.

- Served on a loopback address (the default), anyone on this machine may read it, as they may read
  the runs folder; the ``Host`` header must name a loopback address or the given host, so a web page
  elsewhere cannot reach it through DNS rebinding.
- Served on any other address, a token is required (:func:`check_bind`): every request must carry it
  in the ``podium_token`` cookie, a ``token`` query parameter or an ``Authorization: Bearer`` header.
  A page opened with ``?token=`` sets the cookie and is redirected to its address without the token.
- Every answer carries a Content-Security-Policy that allows nothing but the dashboard's own scripts,
  styles and requests, so even a page showing hostile text cannot fetch from anywhere else.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Iterable
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qsl, urlencode

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from podium.errors import UsageError

__all__ = ["COOKIE", "SECURITY_HEADERS", "SecurityHeaders", "TokenGate", "check_bind", "is_loopback", "loopback_hosts"]

COOKIE = "podium_token"
SECURITY_HEADERS = {
    "content-security-policy": "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; "
    "connect-src 'self'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
    "x-content-type-options": "nosniff",
    "referrer-policy": "no-referrer",
    "x-frame-options": "DENY",
    "cache-control": "no-store",
}


def is_loopback(host: str) -> bool:
    """Whether ``host`` (an address or ``localhost``) binds only this machine's loopback."""
    if host.lower() in ("localhost", "localhost."):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def loopback_hosts(host: str, port: int) -> list[str]:
    """The ``Host`` values a loopback dashboard answers: its loopback names, with and without the port."""
    names = {"127.0.0.1", "localhost", "[::1]", host if ":" not in host else f"[{host}]"}
    return sorted(names | {f"{name}:{port}" for name in names})


def check_bind(host: str, token: str | None) -> None:
    """Refuse to serve other machines without a token (the one rule that keeps the runs private)."""
    if not is_loopback(host) and not token:
        raise UsageError(
            f"--host {host} serves the runs to other machines, which needs a token: add --token (a random one is "
            "made and printed) or --token YOURS, or serve on 127.0.0.1"
        )


class TokenGate:
    """ASGI middleware: every request must carry the token; a ``?token=`` page load sets the cookie."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.token = token

    def _matches(self, candidates: Iterable[str]) -> bool:
        want = self.token.encode()
        return any(hmac.compare_digest(c.encode(), want) for c in candidates if c)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        query = parse_qsl(scope.get("query_string", b"").decode("latin-1"), keep_blank_values=True)
        from_query = [v for k, v in query if k == "token"]
        cookie = SimpleCookie()
        cookie.load(headers.get("cookie", ""))
        bearer = headers.get("authorization", "")
        candidates = [
            cookie[COOKIE].value if COOKIE in cookie else "",
            bearer[7:] if bearer.lower().startswith("bearer ") else "",
            headers.get("x-podium-token", ""),
        ]
        if self._matches(from_query):
            rest = urlencode([(k, v) for k, v in query if k != "token"])
            location = scope.get("root_path", "") + scope["path"] + (f"?{rest}" if rest else "")
            await _answer(send, 303, b"", [("location", location), ("set-cookie", _cookie(self.token))])
            return
        if not self._matches(candidates):
            body = b"podium serve: this dashboard needs its token (open the address podium serve printed)\n"
            await _answer(send, 401, body, [("content-type", "text/plain; charset=utf-8")])
            return
        await self.app(scope, receive, send)


def _cookie(token: str) -> str:
    return f"{COOKIE}={token}; Path=/; HttpOnly; SameSite=Strict"


async def _answer(send: Send, status: int, body: bytes, headers: list[tuple[str, str]]) -> None:
    raw = [(k.encode(), v.encode()) for k, v in [*headers, *SECURITY_HEADERS.items()]]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": body})


class SecurityHeaders:
    """ASGI middleware: :data:`SECURITY_HEADERS` on every response."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return

        async def with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                present = {k.lower() for k, _ in message.get("headers", [])}
                extra: list[Any] = [
                    (k.encode(), v.encode()) for k, v in SECURITY_HEADERS.items() if k.encode() not in present
                ]
                message = {**message, "headers": [*message.get("headers", []), *extra]}
            await send(message)

        await self.app(scope, receive, with_headers)

"""``podium serve``: the dashboard on uvicorn, after the checks that make its errors one line.

The runs folder must exist (nothing is created), a non-loopback address needs a token
(:func:`~podium.serve.security.check_bind`), and the port is bound here first, so a port in use is
an error naming it rather than a traceback. Ctrl-C stops uvicorn, which closes the socket and returns.
"""

from __future__ import annotations

import errno
import secrets
import socket
import sys
from pathlib import Path

from podium.errors import UsageError

__all__ = ["bind", "serve"]


def bind(host: str, port: int) -> socket.socket:
    """A listening socket on (host, port), or a one-line error saying why there is none."""
    if not 0 <= port <= 65535:
        raise UsageError(f"--port {port}: a port is 0 to 65535")
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except socket.gaierror as error:
        raise UsageError(f"--host {host}: not an address of this machine ({error.strerror})") from None
    family, kind, proto, _, address = infos[0]
    sock = socket.socket(family, kind, proto)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(address)
        sock.listen(128)
    except OSError as error:
        sock.close()
        if error.errno == errno.EADDRINUSE:
            raise UsageError(
                f"port {port} on {host} is in use: pass --port with a free one (or stop what holds it)"
            ) from None
        raise UsageError(f"cannot serve on {host}:{port}: {error.strerror}") from None
    return sock


def serve(runs_dir: Path, host: str = "127.0.0.1", port: int = 8000, token: str | None = None) -> int:
    """Serve the dashboard of ``runs_dir`` until Ctrl-C. ``token=""`` makes a random token (printed)."""
    import uvicorn

    from podium.serve.app import create_app
    from podium.serve.security import check_bind, is_loopback, loopback_hosts

    if not runs_dir.is_dir():
        raise UsageError(f"--runs-dir {runs_dir}: no such folder (podium run writes it; pass the folder it used)")
    if token == "":
        token = secrets.token_urlsafe(24)
    check_bind(host, token)
    sock = bind(host, port)
    port = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    app = create_app(
        runs_dir.resolve(), token=token, allowed_hosts=loopback_hosts(host, port) if is_loopback(host) else None
    )
    address = f"http://{shown}:{port}/" + (f"?token={token}" if token else "")
    print(f"podium serve: {runs_dir} on {address} (read-only; Ctrl-C stops)", file=sys.stderr, flush=True)
    config = uvicorn.Config(app, log_level="warning", access_log=False, lifespan="off")
    server = uvicorn.Server(config)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        pass
    finally:
        sock.close()
    print("podium serve: stopped", file=sys.stderr)
    return 0

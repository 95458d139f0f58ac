#!/usr/bin/env python3
"""Check a submission's format with podium's validation server, from inside the sandbox.

Usage: python3 /home/validate_submission.py [PATH]   (default: /home/submission/submission.csv)

The check is the one grading applies (columns, value types, ids), made without the answers: it
never gives a score. Exit status: 0 valid, 1 invalid, 2 the check could not be made (rate limit,
server unreachable, harness error). The server listens on the Unix socket named by
$PODIUM_VALIDATION_SOCKET (default /home/validate.sock).

Standard library only, so it runs with any Python >= 3.7 in the sandbox.
"""

from __future__ import annotations  # keeps the annotations below inert on Python 3.7+

import contextlib
import http.client
import json
import os
import socket
import sys
from typing import Any

DEFAULT_SUBMISSION = "/home/submission/submission.csv"
DEFAULT_SOCKET = "/home/validate.sock"
NAME_HEADER = "X-Submission-Name"

VALID, INVALID, ERROR = 0, 1, 2


class UnixHTTPConnection(http.client.HTTPConnection):
    """http.client over an AF_UNIX stream socket."""

    def __init__(self, socket_path: str, timeout: float) -> None:
        super().__init__("localhost", timeout=timeout, blocksize=1 << 20)
        self.socket_path = socket_path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self.socket_path)
        except OSError:
            sock.close()
            raise
        self.sock = sock


def post(path: str, socket_path: str, timeout: float = 900.0) -> tuple[int, dict[str, Any]]:
    """Stream the file at ``path`` to ``POST /validate``; return (HTTP status, parsed JSON body)."""
    size = os.path.getsize(path)
    conn = UnixHTTPConnection(socket_path, timeout)
    try:
        with open(path, "rb") as body:
            headers = {
                "Content-Type": "text/csv",
                "Content-Length": str(size),
                NAME_HEADER: "".join(c if " " <= c <= "~" else "_" for c in os.path.basename(path)),
            }
            # The server may answer (413, 429) before reading the whole body: then read its answer.
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                conn.request("POST", "/validate", body=body, headers=headers)
            response = conn.getresponse()
            raw = response.read()
    finally:
        conn.close()
    try:
        payload = json.loads(raw.decode("utf-8"))
    except ValueError:
        payload = {"error": raw.decode("utf-8", "replace").strip() or "empty response"}
    if not isinstance(payload, dict):
        payload = {"error": f"unexpected response: {payload!r}"}
    return response.status, payload


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args and args[0] in ("-h", "--help"):
        print(__doc__.strip())
        return VALID
    if len(args) > 1:
        print("usage: validate_submission.py [PATH]", file=sys.stderr)
        return ERROR
    path = args[0] if args else DEFAULT_SUBMISSION
    socket_path = os.environ.get("PODIUM_VALIDATION_SOCKET") or DEFAULT_SOCKET
    timeout = float(os.environ.get("PODIUM_VALIDATION_TIMEOUT") or 900)

    if not os.path.exists(path):
        print(f"Submission is invalid: no submission file at {path}")
        return INVALID
    if not os.path.isfile(path):
        print(f"Submission is invalid: {path} is not a file")
        return INVALID
    folder = os.path.dirname(os.path.abspath(path))
    if os.path.islink(path) or os.path.realpath(folder) != folder:
        # Grading opens the file without following links, so a link would be refused there.
        print(
            f"Submission is invalid: {path} is reached through a symbolic link; only a regular file is graded "
            "and links are never followed. Fix: write the submission as a regular CSV file"
        )
        return INVALID

    try:
        status, payload = post(path, socket_path, timeout)
    except (OSError, http.client.HTTPException) as exc:
        print(
            f"Could not check the submission: the validation server at {socket_path} is unreachable ({type(exc).__name__}: {exc}). "
            "This says nothing about the submission itself."
        )
        return ERROR

    message = payload.get("error") or "no message"
    if status == 200 and payload.get("valid") is True:
        print(
            f"Submission is valid: {path} would be accepted for grading (a format check only; it is graded after the run)."
        )
        for warning in payload.get("warnings") or []:
            print(f"  warning: {warning}")
        return VALID
    if status == 200 and payload.get("valid") is False:
        print(f"Submission is invalid: {message}")
        for warning in payload.get("warnings") or []:
            print(f"  warning: {warning}")
        return INVALID
    if status == 429:
        print(f"Not checked, rate limited (HTTP 429): {message}")
        return ERROR
    if status >= 500:
        print(f"Not checked, validation server error (HTTP {status}): {message}")
        return ERROR
    print(f"Not checked (HTTP {status}): {message}")
    return ERROR


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Score your own hold-out with the competition's exact metric, from inside the sandbox.

Usage: python /home/score_holdout.py PREDICTIONS.csv LABELS.csv

Both files are in the sample submission's format: PREDICTIONS.csv your model's predictions for rows you
held out of your training data, LABELS.csv those rows' true labels, taken from your training data. It
prints the score podium's grader would give those predictions against those labels, with the grader's
own checks of the predictions (columns, values, ids: they must be the labels' ids). A metric that also
reads other columns of the answers (weights, masks) names them; add them to LABELS.csv. It never sees
the test set, and each call is logged.

Exit status: 0 scored, 1 not scored (the files say why), 2 the scorer could not be reached (rate limit,
server unreachable, harness error). Standard library only (Python >= 3.8).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import sys
import time
from typing import Any

from validate_submission import DEFAULT_SOCKET, UnixHTTPConnection  # beside this file in /home

SCORED, NOT_SCORED, ERROR = 0, 1, 2
_ATTEMPTS = 20  # a rate-limited call waits and tries again


def _safe_name(path: str) -> str:
    return "".join(c if " " <= c <= "~" else "_" for c in os.path.basename(path))


def _problem(path: str) -> str | None:
    """Why ``path`` cannot be sent (a link, not a file), or None."""
    if os.path.islink(path):
        return f"{path} is a symbolic link; give the file itself"
    if not os.path.isfile(path):
        return f"no file at {path}"
    return None


def post(predictions: str, labels: str, socket_path: str, timeout: float) -> tuple[int, dict[str, Any], float]:
    """Stream both files to ``POST /score-holdout``; (HTTP status, JSON body, seconds to wait when rate-limited).

    Each file is sent as exactly the bytes its size said when it was opened (a file that grows, or a /proc file whose
    size says 0, never sends more than the declared length and so never splits the body)."""
    handles = [open(path, "rb") for path in (predictions, labels)]  # noqa: SIM115  (closed below)
    try:
        return _post(
            handles, [os.fstat(h.fileno()).st_size for h in handles], predictions, labels, socket_path, timeout
        )
    finally:
        for handle in handles:
            handle.close()


def _post(
    handles: list[Any], sizes: list[int], predictions: str, labels: str, socket_path: str, timeout: float
) -> tuple[int, dict[str, Any], float]:
    conn = UnixHTTPConnection(socket_path, timeout)
    try:
        headers = {
            "Content-Type": "application/octet-stream",
            "Content-Length": str(sum(sizes)),
            "X-Predictions-Bytes": str(sizes[0]),
            "X-Predictions-Name": _safe_name(predictions),
            "X-Labels-Name": _safe_name(labels),
        }
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):  # refused before the body was read
            conn.putrequest("POST", "/score-holdout")
            for key, value in headers.items():
                conn.putheader(key, value)
            conn.endheaders()
            for index, handle in enumerate(handles):
                left = sizes[index]
                while left > 0:
                    chunk = handle.read(min(left, 1 << 20))
                    if not chunk:
                        raise SystemExit(f"score_holdout: {handle.name} shrank while it was sent; write it, then score")
                    conn.send(chunk)
                    left -= len(chunk)
        response = conn.getresponse()
        raw = response.read(4 << 20)
    finally:
        conn.close()
    try:
        payload = json.loads(raw.decode("utf-8"))
    except ValueError:
        payload = {"error": raw.decode("utf-8", "replace").strip() or "empty response"}
    if not isinstance(payload, dict):
        payload = {"error": f"unexpected response: {payload!r}"}
    wait = float(payload.get("retry_after_s") or 1.0) if response.status == 429 else 0.0
    return response.status, payload, wait


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if args[:1] in (["-h"], ["--help"]):
        print(__doc__.strip())
        return SCORED
    if len(args) != 2:
        print("usage: python /home/score_holdout.py PREDICTIONS.csv LABELS.csv", file=sys.stderr)
        return ERROR
    for path in args:
        problem = _problem(path)
        if problem is not None:
            print(f"Not scored: {problem}")
            return NOT_SCORED
    socket_path = os.environ.get("PODIUM_VALIDATION_SOCKET") or DEFAULT_SOCKET
    timeout = float(os.environ.get("PODIUM_VALIDATION_TIMEOUT") or 900)
    for _ in range(_ATTEMPTS):
        try:
            status, payload, wait = post(args[0], args[1], socket_path, timeout)
        except (OSError, http.client.HTTPException) as exc:
            print(f"Could not score: the scorer at {socket_path} is unreachable ({type(exc).__name__}: {exc}).")
            return ERROR
        if status != 429:
            break
        time.sleep(min(max(wait, 0.5), 30.0))
    if status == 200 and payload.get("score") is not None:
        direction = "higher is better" if payload.get("higher_is_better") else "lower is better"
        print(f"score: {payload['score']} ({payload.get('metric')}, {direction}; your labels, not the test set)")
        for warning in payload.get("warnings") or []:
            print(f"  warning: {warning}")
        return SCORED
    if status == 200:
        print(f"Not scored: {payload.get('error')}")
        return NOT_SCORED
    print(f"Not scored (HTTP {status}): {payload.get('error') or 'no message'}")
    return ERROR


if __name__ == "__main__":
    sys.exit(main())

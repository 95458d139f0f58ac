#!/usr/bin/env python3
"""Relay TCP on the sandbox's own loopback to podium's LLM proxy socket, then run the agent.

Usage: python3 llm_bridge.py --listen 127.0.0.1:8399 --socket /home/llm.sock -- COMMAND [ARG ...]

Started by podium in front of an agent that talks to its model over HTTP/TCP (OPENAI_BASE_URL,
ANTHROPIC_BASE_URL point at the listen address). The sandbox has no network, so the loopback is
the run's own; every byte goes to the proxy socket, which forwards only to the configured
provider. Exits with the agent's exit status. Standard library only (Python >= 3.7).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import socket
import subprocess
import sys
import threading


def _pipe(source: socket.socket, target: socket.socket) -> None:
    try:
        while True:
            data = source.recv(65536)
            if not data:
                break
            target.sendall(data)
    except OSError:
        pass
    finally:
        for sock, how in ((target, socket.SHUT_WR), (source, socket.SHUT_RD)):
            with contextlib.suppress(OSError):
                sock.shutdown(how)


def serve_one(client: socket.socket, socket_path: str, wait: float | None = None) -> None:
    """Relay one connection to the proxy socket both ways until both sides are done (at most ``wait`` seconds
    for the answer's side after the request's side ends; None: no limit)."""
    upstream = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        upstream.connect(socket_path)
    except OSError:
        client.close()
        upstream.close()
        return
    back = threading.Thread(target=_pipe, args=(upstream, client), daemon=True)
    back.start()
    _pipe(client, upstream)
    back.join(wait)
    client.close()
    upstream.close()


def _accept(listener: socket.socket, socket_path: str) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return
        threading.Thread(target=serve_one, args=(client, socket_path), daemon=True).start()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--listen", default="127.0.0.1:8399")
    parser.add_argument("--socket", default=os.environ.get("PODIUM_LLM_SOCKET", "/home/llm.sock"))
    parser.add_argument("command", nargs=argparse.REMAINDER)
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("no agent command after --")
    host, _, port = args.listen.rpartition(":")
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind((host, int(port)))
    listener.listen(64)
    threading.Thread(target=_accept, args=(listener, args.socket), daemon=True).start()
    agent = subprocess.Popen(command)
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda number, _frame: agent.send_signal(number))
    code = agent.wait()
    return code if code >= 0 else 128 - code


if __name__ == "__main__":
    sys.exit(main())

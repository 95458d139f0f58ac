"""A fake Kaggle on loopback that the real ``kaggle`` client talks to, for the tests of prepare's download
(tests/test_kaggle.py), the notebooks (tests/test_kernels.py) and ``podium new`` (tests/test_author_online.py).

``KaggleApi`` always builds its client for production (``KAGGLE_API_ENVIRONMENT`` reaches only ``kagglesdk``'s
own default, which ``KaggleApi`` overrides), so the ``server`` fixture points the production entry of
``kagglesdk.kaggle_env``'s endpoint table at the fake server, and sets a dead proxy for everything else: no
request can leave 127.0.0.1. HOME is a temporary folder and every KAGGLE_* variable is cleared, so the
developer's own credentials are never read.

The RPCs: DownloadDataFiles (302 to a file URL with Range support), GetKernel, IntrospectToken, and for
``podium new`` GetCompetition, ListCompetitionPages, ListDataFiles, GetLeaderboard (paged as Kaggle pages it:
:attr:`FakeKaggle.page_rows` rows a call whatever the page size asked, and a ``nextPageToken``) and ListKernels.
"""

from __future__ import annotations

import base64
import io
import json
import os
import random
import re
import sys
import threading
import zipfile
from collections.abc import Iterator
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest
from kagglesdk import kaggle_env  # kagglesdk alone does not authenticate on import

__all__ = ["ARCHIVE", "ETAG", "KEY", "RULES_MESSAGE", "TOKEN", "USER", "FakeKaggle", "home", "key", "server"]

USER, KEY, TOKEN = "tester", "good-key", "good-token"
RULES_MESSAGE = "You must accept this competition's rules before you'll be able to download files."
ETAG = '"fake-etag-1"'
LAST_MODIFIED = formatdate(1_700_000_000, usegmt=True)


def _archive() -> bytes:
    """A stored zip of ~3 MiB: larger than the client's 1 MiB read, so a cut leaves a partial."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_STORED) as handle:
        handle.writestr("train.csv", "id,target\n1,0\n2,1\n")
        handle.writestr("blob.bin", random.Random(0).randbytes(3 << 20))
    return buffer.getvalue()


ARCHIVE = _archive()
_COMPETITION_RPCS = ("GetCompetition", "ListCompetitionPages", "ListDataFiles", "GetLeaderboard", "ListKernels")


class FakeKaggle(ThreadingHTTPServer):
    """Just the RPCs podium uses (the module's docstring lists them)."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.competitions: dict[str, str] = {}  # id -> "open" | "rules"; absent -> 404
        self.kernels: dict[str, tuple[str, str] | int] = {}  # "author/slug" -> (kernel type, source) | status
        self.seen: list[tuple[str, str, str | None]] = []  # (method, path, Range header)
        self.cut_next_after: int | None = None  # serve this many bytes of the next file GET, then drop
        self.storage_status: int | None = None  # answer file GETs with this status (an expired signed URL: 403)
        self.archives: dict[str, bytes] = {}  # competition -> its data zip (default: ARCHIVE)
        # podium new's calls, per competition: GetCompetition's fields, the pages, the files, the board's rows
        # (best first, {"teamId", "submissionDate", "score"}), the notebooks' references
        self.metadata: dict[str, dict[str, Any]] = {}
        self.pages: dict[str, list[dict[str, str]]] = {}
        self.files: dict[str, list[dict[str, Any]]] = {}
        self.boards: dict[str, list[dict[str, Any]]] = {}
        self.notebooks: dict[str, list[str]] = {}
        self.page_rows = 20  # leaderboard rows per GetLeaderboard call, whatever pageSize asks (as Kaggle pages it)
        self.stop_paging = False  # answer GetLeaderboard with one page and no next token (a board cut short)
        self.lock = threading.Lock()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def handle_error(self, request: Any, client_address: Any) -> None:
        if not isinstance(sys.exc_info()[1], ConnectionError):  # a client closing early is expected
            super().handle_error(request, client_address)

    def ranges(self) -> list[str]:
        return [r for method, _, r in self.seen if method == "GET" and r]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    timeout = 5
    server: FakeKaggle

    def log_message(self, format: str, *args: object) -> None:
        pass

    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def _json(self, status: int, data: dict[str, object]) -> None:
        self._send(status, json.dumps(data).encode(), {"Content-Type": "application/json"})

    def _authorized(self) -> bool:
        header = self.headers.get("Authorization", "")
        if header.startswith("Basic "):
            user, _, key = base64.b64decode(header[6:]).decode().partition(":")
            return (user, key) == (USER, KEY)
        return header == f"Bearer {TOKEN}"

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
        with self.server.lock:
            self.server.seen.append(("POST", self.path, None))
        rpc = self.path.rsplit("/", 1)[-1]
        if rpc == "IntrospectToken":
            active = body.get("token") == TOKEN
            self._json(200, {"active": active, "username": USER if active else ""})
        elif rpc not in ("DownloadDataFiles", "GetKernel", *_COMPETITION_RPCS):
            self._json(404, {"code": 404, "message": f"no RPC {rpc}"})
        elif not self._authorized():
            self._json(401, {"code": 401, "message": "Unauthenticated"})
        elif rpc == "GetKernel":
            self._kernel(f"{body.get('userName')}/{body.get('kernelSlug')}")
        elif rpc == "ListKernels":
            refs = self.server.notebooks.get(body.get("competition", ""), [])
            size = int(body.get("pageSize") or 20)
            self._json(200, {"kernels": [{"ref": ref, "title": ref} for ref in refs[:size]]})
        elif rpc in _COMPETITION_RPCS:
            self._competition(rpc, body)
        else:
            name = body.get("competitionName", "")
            state = self.server.competitions.get(name)
            if state is None:
                self._json(404, {"code": 404, "message": "Competition not found"})
            elif state == "rules":
                self._json(403, {"code": 403, "message": RULES_MESSAGE})
            else:  # like Kaggle: a redirect to a signed storage URL
                self._send(302, headers={"Location": f"{self.server.url}/files/{name}.zip?X-Goog-Signature=fake"})

    def _competition(self, rpc: str, body: dict[str, Any]) -> None:
        name = body.get("competitionName", "")
        if self.server.competitions.get(name) is None:
            self._json(404, {"code": 404, "message": "Competition not found"})
        elif rpc == "GetCompetition":
            self._json(200, {"ref": name, **self.server.metadata.get(name, {})})
        elif rpc == "ListCompetitionPages":
            self._json(200, {"pages": self.server.pages.get(name, [])})
        elif rpc == "ListDataFiles":
            self._json(200, {"files": self.server.files.get(name, []), "nextPageToken": ""})
        else:  # GetLeaderboard: pages of page_rows, the token the next row's index
            rows = self.server.boards.get(name, [])
            start = int(body.get("pageToken") or 0)
            end = start + self.server.page_rows
            following = "" if end >= len(rows) or self.server.stop_paging else str(end)
            self._json(200, {"submissions": rows[start:end], "nextPageToken": following})

    def _kernel(self, ref: str) -> None:
        found = self.server.kernels.get(ref, 404)
        if isinstance(found, int):
            self._json(found, {"code": found, "message": "Notebook not found"})
            return
        kind, source = found
        slug = ref.partition("/")[2]
        self._json(
            200,
            {
                "metadata": {"ref": ref, "slug": slug, "title": slug},
                "blob": {"source": source, "language": "python", "kernelType": kind, "slug": slug},
            },
        )

    def do_GET(self) -> None:
        requested = self.headers.get("Range")
        with self.server.lock:
            self.server.seen.append(("GET", self.path, requested))
            cut, self.server.cut_next_after = self.server.cut_next_after, None
        if not re.fullmatch(r"/files/[\w.-]+\.zip", urlsplit(self.path).path):
            self._send(404)
            return
        if self.server.storage_status is not None:
            self._send(self.server.storage_status, b"<Error>AccessDenied</Error>", {"Content-Type": "application/xml"})
            return
        start = 0
        match = re.fullmatch(r"bytes=(\d+)-", requested or "")
        if match and self.headers.get("If-Range", ETAG) == ETAG:
            start = int(match.group(1))
        archive = self.server.archives.get(urlsplit(self.path).path.rsplit("/", 1)[-1].removesuffix(".zip"), ARCHIVE)
        body = archive[start:]
        self.send_response(206 if start else 200)
        self.send_header("Content-Type", "application/zip")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", ETAG)
        self.send_header("Last-Modified", LAST_MODIFIED)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(archive) - 1}/{len(archive)}")
        self.end_headers()
        try:
            self.wfile.write(body if cut is None else body[:cut])
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):  # the preflight closes after the headers
            pass
        if cut is not None:
            self.close_connection = True  # fewer bytes than Content-Length, then EOF


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME and no KAGGLE_* variables: no credentials unless a test adds them."""
    for name in list(os.environ):
        if name.startswith("KAGGLE_") or name in ("XDG_CONFIG_HOME", "VERBOSE", "VERBOSE_OUTPUT"):
            monkeypatch.delenv(name)
    path = tmp_path / "home"
    path.mkdir()
    monkeypatch.setenv("HOME", str(path))
    # Anything not for 127.0.0.1 goes to a dead proxy and fails at once.
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "http_proxy", "https_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "127.0.0.1")
    return path


@pytest.fixture
def server(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeKaggle]:
    fake = FakeKaggle()
    fake.competitions.update({"spaceship-titanic": "open", "open-two": "open", "rules-comp": "rules"})
    thread = threading.Thread(target=fake.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    monkeypatch.setitem(kaggle_env._env_to_endpoint, kaggle_env.KaggleEnv.PROD, fake.url)
    try:
        yield fake
    finally:
        fake.shutdown()
        fake.server_close()
        thread.join(timeout=5)


@pytest.fixture
def key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAGGLE_USERNAME", USER)
    monkeypatch.setenv("KAGGLE_KEY", KEY)

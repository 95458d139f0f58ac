"""The Kaggle download, run with the real ``kaggle`` client against a fake Kaggle on loopback.

``KaggleApi`` always builds its client for production (``KAGGLE_API_ENVIRONMENT`` reaches only
``kagglesdk``'s own default, which ``KaggleApi`` overrides), so the fixture points the production
entry of ``kagglesdk.kaggle_env``'s endpoint table at the fake server, and sets a dead proxy for
everything else: no request can leave 127.0.0.1. HOME is a temporary folder and every KAGGLE_*
variable is cleared, so the developer's own credentials are never read.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import io
import json
import os
import random
import re
import sys
import threading
import time
import zipfile
from collections.abc import Iterator
from email.utils import formatdate
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import pytest

pytest.importorskip("kaggle")
pytest.importorskip("kagglesdk")

from kagglesdk import kaggle_env  # kagglesdk alone does not authenticate on import

from podium import registry
from podium.competition import Competition
from podium.data import kaggle
from podium.data.prepare import PrepareError
from podium.paths import CompetitionPaths

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


class FakeKaggle(ThreadingHTTPServer):
    """Just the RPCs podium uses: DownloadDataFiles (302 to a file URL), GetKernel and IntrospectToken."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.competitions: dict[str, str] = {}  # id -> "open" | "rules"; absent -> 404
        self.kernels: dict[str, tuple[str, str] | int] = {}  # "author/slug" -> (kernel type, source) | status
        self.seen: list[tuple[str, str, str | None]] = []  # (method, path, Range header)
        self.cut_next_after: int | None = None  # serve this many bytes of the next file GET, then drop
        self.storage_status: int | None = None  # answer file GETs with this status (an expired signed URL: 403)
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
        elif rpc not in ("DownloadDataFiles", "GetKernel"):
            self._json(404, {"code": 404, "message": f"no RPC {rpc}"})
        elif not self._authorized():
            self._json(401, {"code": 401, "message": "Unauthenticated"})
        elif rpc == "GetKernel":
            self._kernel(f"{body.get('userName')}/{body.get('kernelSlug')}")
        else:
            name = body.get("competitionName", "")
            state = self.server.competitions.get(name)
            if state is None:
                self._json(404, {"code": 404, "message": "Competition not found"})
            elif state == "rules":
                self._json(403, {"code": 403, "message": RULES_MESSAGE})
            else:  # like Kaggle: a redirect to a signed storage URL
                self._send(302, headers={"Location": f"{self.server.url}/files/{name}.zip?X-Goog-Signature=fake"})

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
        body = ARCHIVE[start:]
        self.send_response(206 if start else 200)
        self.send_header("Content-Type", "application/zip")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("ETag", ETAG)
        self.send_header("Last-Modified", LAST_MODIFIED)
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(ARCHIVE) - 1}/{len(ARCHIVE)}")
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


@pytest.fixture
def comp() -> Competition:
    return registry.get("spaceship-titanic")


# --- credentials -------------------------------------------------------------------------------


def test_missing_credentials_name_every_way_and_from(server: FakeKaggle, comp: Competition, tmp_path: Path) -> None:
    with pytest.raises(PrepareError) as info:
        kaggle.credentials_source()
    message = str(info.value)
    for way in ("KAGGLE_API_TOKEN", "KAGGLE_USERNAME", "KAGGLE_KEY", "--from PATH"):
        assert way in message
    # one line, naming the kaggle.json the client reads once it is written (issue 29 item 7)
    assert "\n" not in message and f"to {tmp_path / 'home' / '.kaggle' / 'kaggle.json'}," in message
    assert ".config" not in message
    with pytest.raises(PrepareError, match="no Kaggle credentials"):
        kaggle.preflight(["spaceship-titanic"])
    with pytest.raises(PrepareError, match="no Kaggle credentials"):
        kaggle.download(comp, CompetitionPaths(tmp_path / "data", comp.id))
    assert server.seen == []  # nothing was asked of Kaggle


@pytest.mark.parametrize("way", ["env-key", "env-token", "token-file", "kaggle-json", "config-dir", "oauth"])
def test_each_way_of_providing_credentials_is_found(
    way: str, home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    key_json = json.dumps({"username": USER, "key": KEY})
    if way == "env-key":
        monkeypatch.setenv("KAGGLE_USERNAME", USER)
        monkeypatch.setenv("KAGGLE_KEY", KEY)
    elif way == "env-token":
        monkeypatch.setenv("KAGGLE_API_TOKEN", TOKEN)
    elif way == "token-file":
        (home / ".kaggle").mkdir()
        (home / ".kaggle" / "access_token").write_text(TOKEN + "\n")
    elif way == "kaggle-json":
        (home / ".kaggle").mkdir()
        (home / ".kaggle" / "kaggle.json").write_text(key_json)
    elif way == "config-dir":
        monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(tmp_path / "cfg"))
        (tmp_path / "cfg").mkdir()
        (tmp_path / "cfg" / "kaggle.json").write_text(key_json)
    else:
        (home / ".kaggle").mkdir()
        (home / ".kaggle" / "credentials.json").write_text(json.dumps({"refresh_token": "r"}))
    assert kaggle.credentials_source()


def test_a_kaggle_json_without_a_key_is_not_credentials(home: Path) -> None:
    (home / ".kaggle").mkdir()
    (home / ".kaggle" / "kaggle.json").write_text(json.dumps({"username": USER}))
    with pytest.raises(PrepareError, match="no Kaggle credentials"):
        kaggle.credentials_source()


def test_the_missing_credentials_name_the_kaggle_json_the_client_reads(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where ~/.kaggle is absent, a kaggle.json already under ~/.config/kaggle is the one read, so it is named;
    with KAGGLE_CONFIG_DIR, the one in it."""
    (home / ".config" / "kaggle").mkdir(parents=True)
    (home / ".config" / "kaggle" / "kaggle.json").write_text("{}")
    with pytest.raises(PrepareError, match=f"to {re.escape(str(home / '.config' / 'kaggle' / 'kaggle.json'))},"):
        kaggle.credentials_source()
    monkeypatch.setenv("KAGGLE_CONFIG_DIR", str(home / "cfg"))
    with pytest.raises(PrepareError, match=f"to {re.escape(str(home / 'cfg' / 'kaggle.json'))},"):
        kaggle.credentials_source()


def test_a_wrong_key_is_reported_with_the_fix(server: FakeKaggle, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAGGLE_USERNAME", USER)
    monkeypatch.setenv("KAGGLE_KEY", "wrong")
    with pytest.raises(PrepareError, match=r"rejected the credentials from KAGGLE_USERNAME/KAGGLE_KEY.*401") as info:
        kaggle.preflight(["spaceship-titanic"])
    assert "settings/api" in str(info.value)


def test_a_wrong_token_is_reported_not_exited(server: FakeKaggle, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAGGLE_API_TOKEN", "wrong")
    with pytest.raises(PrepareError, match="rejected the credentials from KAGGLE_API_TOKEN"):
        kaggle.preflight(["spaceship-titanic"])


def test_a_good_token_is_used(server: FakeKaggle, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("KAGGLE_API_TOKEN", TOKEN)
    assert kaggle.preflight(["spaceship-titanic"]) == []


# --- preflight ---------------------------------------------------------------------------------


def test_preflight_lists_exactly_the_competitions_whose_rules_need_accepting(
    server: FakeKaggle, key: None, capsys: pytest.CaptureFixture[str]
) -> None:
    pending = kaggle.preflight(["spaceship-titanic", "rules-comp", "open-two"])
    assert [p.competition_id for p in pending] == ["rules-comp"]
    assert pending[0].rules_url == "https://www.kaggle.com/c/rules-comp/rules"
    assert "accept" in pending[0].message
    assert "rules-comp: https://www.kaggle.com/c/rules-comp/rules" in kaggle.rules_message(pending)
    calls = [path for method, path, _ in server.seen if method == "POST"]
    assert len(calls) == 3  # one call per competition
    assert capsys.readouterr().out == ""  # everything the client says goes to stderr


def test_preflight_names_unknown_competitions(server: FakeKaggle, key: None) -> None:
    with pytest.raises(PrepareError, match=r"no competition named no-such-comp \(HTTP 404\).*rules-comp"):
        kaggle.preflight(["spaceship-titanic", "no-such-comp", "rules-comp"])


# --- download ----------------------------------------------------------------------------------


def test_download_writes_the_zip_and_it_extracts(
    server: FakeKaggle, key: None, comp: Competition, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    paths = CompetitionPaths(tmp_path / "data", comp.id)
    archive = kaggle.download(comp, paths)
    assert archive == paths.zip and archive.read_bytes() == ARCHIVE
    assert not Path(f"{archive}.kaggle-partial").exists()
    with zipfile.ZipFile(archive) as handle:
        handle.extractall(tmp_path / "out")
    assert (tmp_path / "out" / "train.csv").read_text().startswith("id,target")
    assert capsys.readouterr().out == ""
    assert kaggle.download(comp, paths) == paths.zip  # a complete zip is kept: the client skips it
    assert "Skipping" in capsys.readouterr().err
    assert archive.read_bytes() == ARCHIVE and server.ranges() == []


def test_download_refused_for_rules_names_the_url(server: FakeKaggle, key: None, tmp_path: Path) -> None:
    comp = dataclasses.replace(registry.get("spaceship-titanic"), id="rules-comp")
    with pytest.raises(PrepareError, match=r"https://www.kaggle.com/c/rules-comp/rules"):
        kaggle.download(comp, CompetitionPaths(tmp_path / "data", comp.id))


def test_a_storage_403_is_a_failed_transfer_not_unaccepted_rules(
    server: FakeKaggle, key: None, comp: Competition, tmp_path: Path
) -> None:
    server.storage_status = 403
    with pytest.raises(PrepareError, match="the download failed") as info:
        kaggle.download(comp, CompetitionPaths(tmp_path / "data", comp.id))
    assert "rules" not in str(info.value)


def test_a_dropped_transfer_is_resumed_within_the_call(
    server: FakeKaggle, key: None, comp: Competition, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(time, "sleep", lambda seconds: None)  # the client's retry backoff
    server.cut_next_after = len(ARCHIVE) // 2
    paths = CompetitionPaths(tmp_path / "data", comp.id)
    assert kaggle.download(comp, paths).read_bytes() == ARCHIVE
    assert len(server.ranges()) == 1 and server.ranges()[0] != "bytes=0-"


class Interrupted(BaseException):
    """Stands for Ctrl-C or a killed process."""


def test_an_interrupted_download_resumes_on_the_next_call(
    server: FakeKaggle, key: None, comp: Competition, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def interrupt(seconds: float) -> None:
        raise Interrupted  # the run is stopped while the client waits to retry

    monkeypatch.setattr(time, "sleep", interrupt)
    server.cut_next_after = len(ARCHIVE) // 2
    paths = CompetitionPaths(tmp_path / "data", comp.id)
    with pytest.raises(Interrupted):
        kaggle.download(comp, paths)
    partial = paths.zip.stat().st_size
    assert 0 < partial < len(ARCHIVE)
    assert Path(f"{paths.zip}.kaggle-partial").exists()
    assert server.ranges() == []

    assert kaggle.download(comp, paths).read_bytes() == ARCHIVE
    assert server.ranges() == [f"bytes={partial}-"]
    with zipfile.ZipFile(paths.zip) as handle:
        assert handle.testzip() is None


def test_an_md5_mismatch_names_both_sums_and_keeps_the_zip_aside(
    server: FakeKaggle, key: None, comp: Competition, tmp_path: Path
) -> None:
    actual = hashlib.md5(ARCHIVE).hexdigest()
    paths = CompetitionPaths(tmp_path / "data", comp.id)
    wrong = dataclasses.replace(comp, prepare={**comp.prepare, "zip_md5": "0" * 32})
    with pytest.raises(PrepareError) as info:
        kaggle.download(wrong, paths)
    assert actual in str(info.value) and "0" * 32 in str(info.value)
    assert not paths.zip.exists()
    aside = paths.root / f"{paths.zip.name}.md5-{actual[:12]}"
    assert aside.read_bytes() == ARCHIVE

    right = dataclasses.replace(comp, prepare={**comp.prepare, "zip_md5": actual.upper()})
    assert kaggle.download(right, paths).read_bytes() == ARCHIVE  # downloaded afresh, then verified

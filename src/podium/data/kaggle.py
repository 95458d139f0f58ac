"""Downloading a competition's zip from Kaggle with the official client (``kaggle`` + ``kagglesdk``).

    credentials_source()           where the client will find credentials; PrepareError if nowhere
    preflight(ids)                 one call per competition before any download: the ones whose
                                   rules still need accepting (401 and 404 raise PrepareError)
    download(competition, paths)   DIR/ID/ID.zip, resumed if a partial is there, md5-checked if
                                   the competition records ``prepare.zip_md5``

The client is imported lazily and only after credentials are known to exist: importing any part
of ``kaggle`` runs ``kaggle/__init__.py``, which authenticates at import time, and
``KaggleApi.authenticate()`` calls ``exit(1)`` when it finds nothing. Whatever the client prints
goes to stderr, so podium's stdout stays clean.

Resuming is the client's own: ``download_file`` writes ``ID.zip.kaggle-partial`` beside the zip
(the server's ETag or Last-Modified and the size); a later call that finds both resumes with an
HTTP ``Range`` request, and a failed read is retried (five times, with backoff) within the call.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from podium.competition import Competition
from podium.errors import PrepareError
from podium.paths import CompetitionPaths
from podium.untrusted import loads

__all__ = [
    "RulesNotAccepted",
    "credentials_source",
    "download",
    "download_zip",
    "kaggle_client",
    "preflight",
    "rejected_credentials",
    "rules_message",
    "status_of",
    "verify_zip_md5",
]

SETTINGS_URL = "https://www.kaggle.com/settings/api"


def _rules_url(competition_id: str) -> str:
    return f"https://www.kaggle.com/c/{competition_id}/rules"


@dataclass(frozen=True)
class RulesNotAccepted:
    """A competition whose data Kaggle refuses (HTTP 403) until its rules are accepted."""

    competition_id: str
    message: str = ""  # what Kaggle said

    @property
    def rules_url(self) -> str:
        return _rules_url(self.competition_id)


def rules_message(pending: Iterable[RulesNotAccepted]) -> str:
    """One list of every competition whose rules still need accepting, each with its URL."""
    lines = [f"  {item.competition_id}: {item.rules_url}" for item in pending]
    return "\n".join(
        [
            "Accept the rules of these competitions on Kaggle (signed in as the account whose credentials "
            "podium uses), then run the command again:",
            *lines,
        ]
    )


# --- credentials -------------------------------------------------------------------------------


def _config_dir() -> Path:
    """The folder the client reads kaggle.json from (KaggleApi.config_dir, evaluated now)."""
    configured = os.environ.get("KAGGLE_CONFIG_DIR")
    if configured:
        return Path(configured)
    legacy = Path.home() / ".kaggle"
    if sys.platform.startswith("linux") and not legacy.exists():
        return Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "kaggle"
    return legacy


def _read_json(path: Path) -> dict[str, Any]:
    try:
        data = loads(path.read_bytes(), what=str(path))  # the user's own file, which may be a link
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _has_text(path: Path) -> bool:
    try:
        return bool(path.read_text(encoding="utf-8").strip())
    except (OSError, UnicodeDecodeError):
        return False


def _key_file() -> Path:
    """The kaggle.json to name: the one the client reads now if it is there, else the one it will read once
    written (``~/.kaggle/kaggle.json``: writing it creates the folder the client prefers)."""
    read_now = _config_dir() / "kaggle.json"
    if os.environ.get("KAGGLE_CONFIG_DIR") or read_now.exists():
        return read_now
    return Path.home() / ".kaggle" / "kaggle.json"


def _missing_message() -> str:
    return (
        f'no Kaggle credentials: write {{"username": ..., "key": ...}} (from {SETTINGS_URL}) to {_key_file()}, '
        "or export KAGGLE_API_TOKEN (or KAGGLE_USERNAME and KAGGLE_KEY); or pass --from PATH with the "
        "competition's Kaggle zip, which needs none"
    )


def credentials_source() -> str:
    """Where the Kaggle client will find credentials, checked in the client's own order.

    Reads only local files and environment variables; raises PrepareError, one line naming the
    kaggle.json that is read and the other ways, when there are none.
    """
    token = os.environ.get("KAGGLE_API_TOKEN")
    if token and not (Path(token).is_file() and not _has_text(Path(token))):
        return "KAGGLE_API_TOKEN"
    for name in ("access_token", "access_token.txt"):
        path = Path.home() / ".kaggle" / name
        if _has_text(path):
            return str(path)
    config = _config_dir() / "kaggle.json"
    stored = _read_json(config)
    username = os.environ.get("KAGGLE_USERNAME") or stored.get("username")
    key = os.environ.get("KAGGLE_KEY") or stored.get("key")
    if username and key:
        if os.environ.get("KAGGLE_USERNAME") and os.environ.get("KAGGLE_KEY"):
            return "KAGGLE_USERNAME/KAGGLE_KEY"
        return str(config)
    oauth = Path.home() / ".kaggle" / "credentials.json"
    if _read_json(oauth).get("refresh_token"):
        return f"{oauth} (kaggle auth login)"
    raise PrepareError(_missing_message())


def rejected_credentials(source: str, detail: str) -> PrepareError:
    """The error for credentials Kaggle refused, with where they came from and the fix."""
    return PrepareError(
        f"Kaggle rejected the credentials from {source} ({detail}). Check the username and key, or create a new "
        f"token at {SETTINGS_URL}; or pass --from PATH with the competition's Kaggle zip, which needs no credentials"
    )


def kaggle_client() -> tuple[Any, str]:
    """An authenticated ``KaggleApi`` and where its credentials came from."""
    source = credentials_source()
    with contextlib.redirect_stdout(sys.stderr):
        try:
            import requests
            from kaggle.api.kaggle_api_extended import KaggleApi  # runs kaggle/__init__.py: authenticates too
        except ImportError as exc:
            raise PrepareError(
                f"the Kaggle client is not installed ({exc}): pip install 'podium[prepare]', or pass --from PATH"
            ) from exc
        api = KaggleApi()
        # The class fixes its config folder when first imported; read kaggle.json from where we looked.
        api.config_dir = str(_config_dir())
        api.config = str(_config_dir() / "kaggle.json")
        try:
            api.authenticate()
        except SystemExit:  # the client's "nothing usable found": an access token it could not validate
            raise rejected_credentials(source, "the token is invalid or expired") from None
        except requests.HTTPError as exc:
            raise rejected_credentials(source, f"HTTP {status_of(exc)}: {exc}") from exc
        except requests.RequestException as exc:
            raise PrepareError(f"cannot reach Kaggle to check the credentials from {source}: {exc}") from exc
    return api, source


def status_of(exc: BaseException) -> int | None:
    """The HTTP status of a client error; Kaggle's JSON ``code`` when the HTTP status says less."""
    response = getattr(exc, "response", None)
    if response is None:
        return None
    status: int = response.status_code
    if status < 400:
        with contextlib.suppress(Exception):
            code = response.json().get("code")
            if isinstance(code, int):
                return code
    return status


def _request_method(exc: BaseException) -> str | None:
    request = getattr(getattr(exc, "response", None), "request", None)
    method = getattr(request, "method", None)
    return method if isinstance(method, str) else None


# --- preflight ---------------------------------------------------------------------------------


def preflight(competition_ids: Iterable[str]) -> list[RulesNotAccepted]:
    """Ask Kaggle once per competition, before any download, whether its data may be downloaded.

    Returns every competition whose rules still need accepting (HTTP 403). Raises PrepareError
    when credentials are missing or rejected (401) or when Kaggle knows none of some ids (404).

    The call is the download RPC itself, whose response is closed after its headers: listing a
    competition's files succeeds without accepted rules, so it cannot tell.
    """
    ids = list(dict.fromkeys(competition_ids))
    if not ids:
        return []
    api, source = kaggle_client()
    import requests
    from kagglesdk.competitions.types.competition_api_service import ApiDownloadDataFilesRequest

    pending: list[RulesNotAccepted] = []
    unknown: list[str] = []
    with contextlib.redirect_stdout(sys.stderr), api.build_kaggle_client() as client:
        for i, competition_id in enumerate(ids, start=1):
            request = ApiDownloadDataFilesRequest()
            request.competition_name = competition_id
            try:
                response = client.competitions.competition_api_client.download_data_files(request)
            except requests.HTTPError as exc:
                status = status_of(exc)
                if status == 401:
                    raise rejected_credentials(source, f"HTTP 401: {exc}") from exc
                if status == 403:
                    pending.append(RulesNotAccepted(competition_id, str(exc)))
                    print(f"[{i}/{len(ids)}] {competition_id}: rules not accepted", file=sys.stderr)
                    continue
                if status == 404:
                    unknown.append(competition_id)
                    continue
                raise PrepareError(f"Kaggle answered HTTP {status} for {competition_id}: {exc}") from exc
            except requests.RequestException as exc:
                raise PrepareError(f"cannot reach Kaggle to check {competition_id}: {exc}") from exc
            size = response.headers.get("Content-Length")
            response.close()
            detail = f" ({int(size) / 1e9:.2f} GB)" if size and size.isdigit() else ""
            print(f"[{i}/{len(ids)}] {competition_id}: ok{detail}", file=sys.stderr)
    if unknown:
        also = f" ({len(pending)} more need their rules accepted: {', '.join(p.competition_id for p in pending)})"
        raise PrepareError(
            f"Kaggle knows no competition named {', '.join(unknown)} (HTTP 404)" + (also if pending else "")
        )
    return pending


# --- download ----------------------------------------------------------------------------------


def _md5(path: Path) -> str:
    digest = hashlib.md5(usedforsecurity=False)
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify_zip_md5(competition: Competition, archive: Path) -> None:
    """Check the zip against ``prepare.zip_md5`` when the competition records one.

    On a mismatch the zip is renamed aside (``ID.zip.md5-<first 12 hex digits>``), never deleted,
    so the next run downloads afresh and the bad file can still be inspected.
    """
    expected = competition.prepare.get("zip_md5")
    if not expected:
        return
    expected = str(expected).strip().lower()
    print(f"{competition.id}: checking the md5 of {archive.name}", file=sys.stderr)
    actual = _md5(archive)
    if actual == expected:
        return
    aside = archive.with_name(f"{archive.name}.md5-{actual[:12]}")
    os.replace(archive, aside)
    raise PrepareError(
        f"{competition.id}: the downloaded zip has md5 {actual}, but {expected} is recorded; it was moved aside to "
        f"{aside} (not deleted). Run again to download it afresh; if the md5 differs again, Kaggle's files have "
        "changed and the split may no longer reproduce the benchmark's"
    )


def download(competition: Competition, paths: CompetitionPaths) -> Path:
    """Download the competition's zip to ``paths.zip`` (DIR/ID/ID.zip) and return its path.

    A partial zip left by an interrupted run is resumed; a complete one is kept. Progress goes to
    stderr. Raises PrepareError on missing or rejected credentials, rules not accepted, an
    unknown competition, a failed transfer (the partial file is kept for the next run) or an md5
    mismatch.
    """
    archive = download_zip(competition.id, paths)
    verify_zip_md5(competition, archive)
    return archive


def download_zip(competition_id: str, paths: CompetitionPaths) -> Path:
    """:func:`download` of a competition podium does not declare yet (``podium new``): the zip, resumed, unchecked."""
    api, source = kaggle_client()
    import requests

    paths.root.mkdir(parents=True, exist_ok=True)
    print(f"{competition_id}: downloading from Kaggle to {paths.zip}", file=sys.stderr)
    try:
        with contextlib.redirect_stdout(sys.stderr):
            api.competition_download_files(competition_id, path=str(paths.root), quiet=False)
    except requests.HTTPError as exc:
        # Kaggle's own RPCs are POSTs; an error from the storage URL it redirects to (a GET) is a failed transfer.
        status = status_of(exc) if _request_method(exc) == "POST" else None
        if status == 401:
            raise rejected_credentials(source, f"HTTP 401: {exc}") from exc
        if status == 403:
            raise PrepareError(
                f"{competition_id}: Kaggle refuses the download ({exc}). Accept the competition's rules at "
                f"{_rules_url(competition_id)}, then run again"
            ) from exc
        if status == 404:
            raise PrepareError(f"Kaggle knows no competition named {competition_id} (HTTP 404)") from exc
        raise _failed(competition_id, paths, exc) from exc
    except (requests.RequestException, OSError, ValueError) as exc:  # ValueError: the size did not match
        raise _failed(competition_id, paths, exc) from exc
    if not paths.zip.is_file():
        found = sorted(p.name for p in paths.root.iterdir() if p.is_file() and p != paths.prepare_lock)
        raise PrepareError(
            f"{competition_id}: Kaggle served no {paths.zip.name} (found in {paths.root}: {', '.join(found) or 'nothing'})"
        )
    return paths.zip


def _failed(competition_id: str, paths: CompetitionPaths, exc: BaseException) -> PrepareError:
    kept = ""
    if paths.zip.is_file():
        kept = f" {paths.zip} ({paths.zip.stat().st_size} bytes so far) is kept; the next run resumes from it."
    return PrepareError(f"{competition_id}: the download failed ({type(exc).__name__}: {exc}).{kept}")

"""The Kaggle download, run with the real ``kaggle`` client against the fake Kaggle on loopback of
tests/kaggle_fake.py (which says how no request leaves 127.0.0.1 and no credential of the developer is read).
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import time
import zipfile
from pathlib import Path

import pytest

pytest.importorskip("kaggle")
pytest.importorskip("kagglesdk")

from kaggle_fake import ARCHIVE, KEY, TOKEN, USER, FakeKaggle, home, key, server  # noqa: F401  (fixtures)
from podium import registry
from podium.competition import Competition
from podium.data import kaggle
from podium.data.prepare import PrepareError
from podium.paths import CompetitionPaths


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

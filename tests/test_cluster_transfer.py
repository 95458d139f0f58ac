"""The cluster's pieces that need no Ray: addresses, resources, folders as tar bytes, the node's data cache."""

from __future__ import annotations

import io
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

from podium.cluster import parse_cluster, parse_resource, public_digest
from podium.cluster.transfer import cache_public, check_public, pack, unpack
from podium.data.checksums import digest_tree
from podium.errors import HarnessError, UsageError


def test_cluster_addresses() -> None:
    assert parse_cluster("ray", {}) == "auto"
    assert parse_cluster("ray", {"RAY_ADDRESS": "10.0.0.1:6379"}) == "10.0.0.1:6379"
    assert parse_cluster("ray://head:10001", {}) == "ray://head:10001"
    assert parse_cluster("ray:head:6379", {}) == "head:6379"
    for bad in ("slurm", "ray://head", "ray:head:port", "ray://:10001"):
        with pytest.raises(UsageError, match="is not a Ray cluster"):
            parse_cluster(bad, {})


def test_custom_resources() -> None:
    assert parse_resource("h100") == ("h100", 1.0)
    assert parse_resource("accel=0.5") == ("accel", 0.5)
    for bad in ("h100=0", "=2", "a b", "h100=-1"):
        with pytest.raises(UsageError, match="NAME or NAME=N"):
            parse_resource(bad)
    with pytest.raises(UsageError, match="Ray's own"):
        parse_resource("GPU=1")


def _tar(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def _file(name: str, data: bytes = b"x") -> tuple[tarfile.TarInfo, bytes]:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _link(name: str, target: str) -> tuple[tarfile.TarInfo, None]:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = tarfile.SYMTYPE, target
    return info, None


def test_a_run_folder_round_trips_with_links_kept_as_links(tmp_path: Path) -> None:
    source = tmp_path / "run"
    (source / "code").mkdir(parents=True)
    (source / "code" / "main.py").write_text("print(1)\n")
    (source / "code" / "alias").symlink_to("main.py")
    (source / "skip").mkdir()
    (source / "skip" / "big").write_text("no")
    (source / ".hidden").write_text("no")
    out = tmp_path / "out"
    out.mkdir()
    unpack(pack(source, skip=[source / "skip"], hidden=False), out)
    assert (out / "code" / "main.py").read_text() == "print(1)\n"
    assert (out / "code" / "alias").is_symlink() and not (out / "skip").exists() and not (out / ".hidden").exists()


@pytest.mark.parametrize(
    "member",
    [_file("../escape"), _link("out", "/etc/passwd"), _link("up", "../../x")],
    ids=["dot-dot", "link-absolute", "link-up"],
)
def test_hostile_tar_members_are_refused(tmp_path: Path, member) -> None:
    into = tmp_path / "into"
    into.mkdir()
    with pytest.raises(HarnessError, match="could not be unpacked"):
        unpack(_tar(member), into)
    assert not (tmp_path / "escape").exists() and not (into / "out").exists() and not (into / "up").exists()


def test_an_absolute_name_lands_inside_the_folder(tmp_path: Path) -> None:
    unpack(_tar(_file("/etc/podium-escape")), tmp_path)
    assert (tmp_path / "etc" / "podium-escape").is_file() and not Path("/etc/podium-escape").exists()


def _public(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    prepared = tmp_path / "data" / "comp" / "prepared"
    (prepared / "public" / "images").mkdir(parents=True)
    (prepared / "public" / "train.csv").write_text("id,y\n1,2\n")
    (prepared / "public" / "images" / "a.png").write_bytes(b"png")
    return prepared, digest_tree(prepared, sides=("public",))


def test_the_node_caches_shipped_data_by_checksum_and_refuses_other_bytes(tmp_path: Path) -> None:
    prepared, checksums = _public(tmp_path)
    digest = public_digest(checksums)
    root = cache_public(pack(prepared / "public"), tmp_path / "cache", "comp", digest, checksums)
    assert (root / "comp" / "prepared" / "public" / "images" / "a.png").read_bytes() == b"png"
    assert cache_public(b"not read again", tmp_path / "cache", "comp", digest, checksums) == root
    (prepared / "public" / "train.csv").write_text("id,y\n1,3\n")
    with pytest.raises(HarnessError, match="differs from its recorded checksums"):
        cache_public(pack(prepared / "public"), tmp_path / "other", "comp", digest, checksums)
    assert not list((tmp_path / "other").rglob("train.csv")), "nothing unverified is left in the cache"


def test_a_shared_folder_is_checked_and_a_change_is_seen(tmp_path: Path) -> None:
    prepared, checksums = _public(tmp_path)
    verified = tmp_path / "verified"
    check_public(prepared, checksums, "comp", verified=verified)
    assert len(list(verified.iterdir())) == 1
    check_public(prepared, checksums, "comp", verified=verified)  # the listing matches: not hashed again
    (prepared / "public" / "train.csv").write_text("id,y\n1,9\n")
    with pytest.raises(HarnessError, match=r"changed: public/train\.csv"):
        check_public(prepared, checksums, "comp", verified=verified)


def test_cluster_options_without_a_cluster_are_refused() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "podium", "run", "--ray-resource", "h100", "--competitions", "practice-wine"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "go with --cluster" in result.stderr

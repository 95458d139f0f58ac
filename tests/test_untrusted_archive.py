"""The one reader for hostile archives (podium.untrusted.archive), attacked through each of its users: a bundle
(publish.tarstream.members), a node's tar (cluster.tarball.unpack_fresh) and the extractor itself. Each archive
is built here byte by byte where tarfile would not write it, and compared with what tarfile and GNU tar make of
it."""

from __future__ import annotations

import gzip
import io
import shutil
import subprocess
import tarfile
from pathlib import Path

import pytest

from podium.cluster.packing import pack
from podium.cluster.tarball import UnpackRefused, unpack_fresh
from podium.publish.tarstream import ArchiveError, members
from podium.untrusted.archive import BUNDLE, RUN_FOLDER, ArchivePolicy, read_members
from podium.untrusted.extract import extract_fresh
from podium.untrusted.tarheaders import ArchiveRefused

RECORD = "podium-bundle/runs/g/comp/0/record.json"
GOLD = b'{"medal": "gold"}\n'


def header(name: str, size: int = 0, flag: bytes = b"0", link: str = "") -> bytes:
    """One ustar header block with a valid checksum."""
    block = bytearray(512)
    block[0:100] = name.encode().ljust(100, b"\0")[:100]
    block[100:108] = b"0000644\0"
    block[108:124] = b"0000000\0" * 2
    block[124:136] = f"{size:011o}\0".encode()
    block[136:148] = b"00000000000\0"
    block[156:157] = flag
    block[157:257] = link.encode().ljust(100, b"\0")[:100]
    block[257:265] = b"ustar\x0000"
    block[148:156] = b" " * 8
    block[148:156] = f"{sum(block):06o}\0 ".encode()
    return bytes(block)


def padded(data: bytes) -> bytes:
    return data + bytes(-len(data) % 512)


def member(name: str, data: bytes = b"", flag: bytes = b"0", link: str = "") -> bytes:
    return header(name, len(data), flag, link) + padded(data)


def pax(records: dict[str, str], flag: bytes = b"x") -> bytes:
    body = b""
    for key, value in records.items():
        text = f" {key}={value}\n".encode()
        length = len(text) + len(str(len(text)))
        length += len(str(length)) - len(str(len(text)))
        body += str(length).encode() + text
    return member("././@PaxHeader", body, flag)


def archive(*parts: bytes) -> bytes:
    return b"".join(parts) + bytes(1024)


def bundle_names(data: bytes, cap: int = 1 << 30) -> list[tuple[str, str | None]]:
    """What ``podium bundle verify`` sees: each member's name and why it is refused."""
    return [(m.name, m.refused) for m in members(io.BytesIO(gzip.compress(data)), cap)]


def _sparse_record() -> bytes:
    """A pax member named notes.txt whose GNU sparse 1.0 keys rename it to a gold-medal record.json."""
    body = padded(b"1\n0\n%d\n" % len(GOLD)) + GOLD
    keys = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": RECORD}
    return archive(member("podium-bundle/", flag=b"5"), pax({**keys, "GNU.sparse.realsize": str(len(GOLD))}),
                   member("podium-bundle/notes.txt", body))  # fmt: skip


def test_the_gnu_sparse_rename_is_refused_where_tarfile_and_gnu_tar_write_record_json(tmp_path: Path) -> None:
    data = _sparse_record()
    bundle = tmp_path / "forged.tar.gz"
    bundle.write_bytes(gzip.compress(data))
    with tarfile.open(bundle) as tar:  # what Python's tarfile makes of it
        assert [m.name for m in tar.getmembers()] == ["podium-bundle", RECORD]
    if shutil.which("tar"):  # and GNU tar: lists and writes record.json, with the forged content
        listing = subprocess.run(["tar", "tzf", str(bundle)], capture_output=True, text=True, check=True).stdout
        assert RECORD in listing
        (tmp_path / "x").mkdir()
        subprocess.run(["tar", "xzf", str(bundle), "-C", str(tmp_path / "x")], check=True)
        assert (tmp_path / "x" / RECORD).read_bytes() == GOLD
    with pytest.raises(ArchiveError, match=r"GNU\.sparse\.major.*a sparse file"):
        bundle_names(data)
    with pytest.raises(UnpackRefused, match="a sparse file"):
        unpack_fresh(lambda: io.BytesIO(data), tmp_path / "node")
    assert not (tmp_path / "node").exists()


@pytest.mark.parametrize(
    "key",
    ["SCHILY.xattr.user.x", "LIBARCHIVE.xattr.user.x", "hdrcharset", "comment", "GNU.sparse.name", "linkpath",
     "SCHILY.devmajor", "charset"],
)  # fmt: skip
def test_a_pax_key_off_the_allowlist_refuses_the_bundle(key: str) -> None:
    data = archive(pax({key: "BINARY" if key == "hdrcharset" else "x"}), member("podium-bundle/a.txt", b"a"))
    with pytest.raises(ArchiveError, match="podium never writes it"):
        bundle_names(data)


def test_metadata_keys_are_accepted_and_ignored_and_path_size_applied() -> None:
    keys = {"mtime": "1.5", "uid": "7", "gname": "x", "path": "podium-bundle/long-" + "n" * 150}
    data = archive(pax(keys), member("podium-bundle/short", b"abc"))
    assert bundle_names(data) == [("podium-bundle/long-" + "n" * 150, None)]


def test_two_pax_headers_in_a_row_are_refused_where_readers_disagree(tmp_path: Path) -> None:
    """tarfile takes the first pax header, podium's earlier reader took the last: the same bytes, two names."""
    data = archive(pax({"path": "podium-bundle/a.txt"}), pax({"path": RECORD}), member("podium-bundle/x", GOLD))
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        assert tar.getnames() == ["podium-bundle/a.txt"]
    with pytest.raises(ArchiveError, match="two pax headers in a row"):
        bundle_names(data)
    with pytest.raises(UnpackRefused, match="two pax headers in a row"):
        unpack_fresh(lambda: io.BytesIO(data), tmp_path / "node")


def test_a_pax_header_with_no_member_a_global_header_and_gnu_long_names_are_refused() -> None:
    with pytest.raises(ArchiveError, match="ends after a pax header"):
        bundle_names(archive(pax({"path": "podium-bundle/a"})))
    refused = dict(bundle_names(archive(pax({"comment": "x"}, flag=b"g"), member("podium-bundle/a", b"a"))))
    assert "a global pax header" in str(refused)
    long_name = archive(member("././@LongLink", RECORD.encode() + b"\0", b"L"), member("podium-bundle/x", GOLD))
    seen = bundle_names(long_name)
    assert all(why is not None for _, why in seen), seen
    assert "a GNU long name" in str(seen) and "follows a GNU long name" in str(seen)


def test_a_duplicate_name_and_a_file_where_a_folder_is_are_refused(tmp_path: Path) -> None:
    twice = archive(member("podium-bundle/r.json", b"{}"), member("podium-bundle/r.json", GOLD))
    assert bundle_names(twice)[1] == ("podium-bundle/r.json", "a second member of the same name")
    below = archive(member("podium-bundle/a", b"file"), member("podium-bundle/a/b", b"below a file"))
    assert "lies below 'podium-bundle/a'" in str(bundle_names(below)[1][1])
    folder_then_file = archive(member("podium-bundle/d/x", b"1"), member("podium-bundle/d", b"2"))
    assert bundle_names(folder_then_file)[1][1] == "a second member of the same name"
    link_then_below = archive(member("l", flag=b"2", link="/etc"), member("l/passwd", b"x"))
    with pytest.raises(UnpackRefused, match="lies below 'l', which is a symbolic link"):
        unpack_fresh(lambda: io.BytesIO(link_then_below), tmp_path / "node")


def test_the_bundle_member_cap_is_twenty_thousand() -> None:
    empty = member("podium-bundle/f", b"")
    many = b"".join(header(f"podium-bundle/{i}") for i in range(BUNDLE.max_members + 1))
    assert len(gzip.compress(archive(many))) < 1 << 20
    with pytest.raises(ArchiveError, match="more than 20,000 members"):
        bundle_names(archive(many))
    assert len(bundle_names(archive(empty))) == 1


def test_names_with_control_characters_are_withheld_by_pack_and_refused_by_unpack(tmp_path: Path) -> None:
    source = tmp_path / "run"
    source.mkdir()
    (source / "ok.txt").write_text("ok")
    (source / "two\nlines").write_text("x")
    packed = pack(source, tmp_path / "run.tar")
    assert packed.withheld == ["'two\\nlines': a backslash or control character in its name; not sent"]
    data = (tmp_path / "run.tar").read_bytes()
    assert unpack_fresh(lambda: io.BytesIO(data), tmp_path / "out") == 1
    bad = archive(member("a\x1b[2Jb", b"x"))
    with pytest.raises(UnpackRefused, match="control character"):
        unpack_fresh(lambda: io.BytesIO(bad), tmp_path / "bad")


def test_a_gzip_bomb_stops_at_the_cap_and_nothing_stays(tmp_path: Path) -> None:
    bomb = gzip.compress(archive(member("podium-bundle/zeros", bytes(16 << 20))))
    assert len(bomb) < 100_000
    with pytest.raises(ArchiveError, match="more than 1048576 bytes"):
        for found in members(io.BytesIO(bomb), 1 << 20):
            b"".join(found.chunks())
    with pytest.raises(ArchiveRefused, match="more than 1048576 bytes"):
        extract_fresh(lambda: gzip.GzipFile(fileobj=io.BytesIO(bomb)), tmp_path / "x", BUNDLE, cap=1 << 20)
    assert not (tmp_path / "x").exists()


def test_the_extractor_writes_exactly_the_accepted_members_or_nothing(tmp_path: Path) -> None:
    good = archive(member("podium-bundle/", flag=b"5"), member("podium-bundle/runs/a.json", b"{}"),
                   member("podium-bundle/index.html", b"<p>"))  # fmt: skip
    out = tmp_path / "good"
    assert extract_fresh(lambda: io.BytesIO(good), out, BUNDLE) == 3
    found = sorted(str(p.relative_to(out)) for p in out.rglob("*"))
    assert found == ["podium-bundle", "podium-bundle/index.html", "podium-bundle/runs", "podium-bundle/runs/a.json"]
    assert (out / "podium-bundle" / "runs" / "a.json").read_bytes() == b"{}"
    for bad, why in [
        (good[:-1024] + member("podium-bundle/link", flag=b"2", link="/etc/passwd") + bytes(1024), "symbolic link"),
        (good[:-1024] + member("podium-bundle/../x", b"x") + bytes(1024), "'..' in its name"),
        (good[:-1024] + member("podium-bundle/index.html", b"again") + bytes(1024), "second member"),
        (good[:-1024] + pax({"GNU.sparse.name": RECORD}) + member("podium-bundle/y", GOLD) + bytes(1024), "sparse"),
    ]:
        with pytest.raises(ArchiveRefused, match=why):
            extract_fresh(lambda bad=bad: io.BytesIO(bad), tmp_path / "bad", BUNDLE)
        assert not (tmp_path / "bad").exists() and not (tmp_path / "x").exists()


def test_a_policy_caps_file_bytes_and_links_only_where_kept() -> None:
    data = archive(member("a", b"1" * 600), member("b", b"2" * 600), member("l", flag=b"2", link="a"))
    with pytest.raises(ArchiveRefused, match="pass their cap of 1,000 bytes"):
        list(read_members(io.BytesIO(data), ArchivePolicy(max_bytes=1000), None))
    kinds = [(m.kind, m.refused) for m in read_members(io.BytesIO(data), ArchivePolicy(), None)]
    assert kinds[:2] == [("file", None), ("file", None)] and kinds[2][0] == "refused"
    linked = [(m.kind, m.linkname) for m in read_members(io.BytesIO(data), RUN_FOLDER, None)]
    assert linked[2] == ("link", "a")

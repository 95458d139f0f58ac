"""The cluster's pieces that need no cluster: addresses, resources, folders as tars on disk and back (a
crafted tar refused member by member, whatever the interpreter's tarfile lets through), the node's data
cache and outbox, and a dead address refused at once."""

from __future__ import annotations

import hashlib
import io
import os
import re
import subprocess
import sys
import tarfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from podium.cluster import UnpackRefused, parse_cluster, parse_resource, public_digest
from podium.cluster.node import OUTBOX_TTL_S, _sweep_outbox, drop_part, node_cache, outbox, read_part
from podium.cluster.packing import MAX_DEPTH, Packed, file_chunks, pack, tar_bound
from podium.cluster.tarball import ChunkStream, unpack, unpack_fresh
from podium.cluster.transfer import cache_public, check_public, unpack_once
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


Member = tuple[tarfile.TarInfo, bytes | None]


def _tar(*members: Member, fmt: int = tarfile.PAX_FORMAT) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=fmt) as tar:
        for info, data in members:
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buffer.getvalue()


def _file(name: str, data: bytes = b"x") -> Member:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    return info, data


def _typed(name: str, kind: bytes, target: str = "") -> Member:
    info = tarfile.TarInfo(name)
    info.type, info.linkname = kind, target
    return info, None


def _link(name: str, target: str) -> Member:
    return _typed(name, tarfile.SYMTYPE, target)


def _dir(name: str) -> Member:
    return _typed(name, tarfile.DIRTYPE)


def _packed(folder: Path, out: Path, **options) -> tuple[Packed, bytes]:
    packed = pack(folder, out, **options)
    return packed, out.read_bytes()


def _unpacked(data: bytes, into: Path, **caps) -> int:
    return unpack(io.BytesIO(data), into, **caps)


def test_a_run_folder_round_trips_with_links_kept_as_links(tmp_path: Path) -> None:
    """AIDE's `code/.../input/* -> /home/data/*` (absolute, dangling here) lands as a link, as it does locally."""
    source = tmp_path / "run"
    (source / "code" / "aide" / "0-exp" / "input").mkdir(parents=True)
    (source / "code" / "main.py").write_text("print(1)\n")
    (source / "code" / "main.py").chmod(0o4755)  # setuid: dropped on the way
    (source / "code" / "alias").symlink_to("main.py")
    (source / "code" / "aide" / "0-exp" / "input" / "train.csv").symlink_to("/home/data/train.csv")
    (source / "code" / "passwd").symlink_to("/etc/passwd")
    (source / "code" / os.fsdecode(b"caf\xe9.txt")).write_text("latin-1 name\n")  # not UTF-8
    (source / "skip").mkdir()
    (source / "skip" / "big").write_text("no")
    (source / ".hidden").write_text("no")
    packed, _ = _packed(source, tmp_path / "run.tar", skip=[source / "skip"], hidden=False)
    assert packed.withheld == [] and packed.members == 9
    out = tmp_path / "out"
    out.mkdir()
    assert _unpacked((tmp_path / "run.tar").read_bytes(), out) == packed.members
    assert (out / "code" / "main.py").read_text() == "print(1)\n"
    assert (out / "code" / "main.py").stat().st_mode & 0o7777 == 0o755
    assert os.readlink(out / "code" / "alias") == "main.py"
    assert os.readlink(out / "code" / "aide" / "0-exp" / "input" / "train.csv") == "/home/data/train.csv"
    assert os.readlink(out / "code" / "passwd") == "/etc/passwd"  # kept, never followed: not a copy of the file
    assert (out / "code" / os.fsdecode(b"caf\xe9.txt")).read_text() == "latin-1 name\n"
    assert not (out / "skip").exists() and not (out / ".hidden").exists()


def _escape_tar(outside: str, comp: str = "d" * 247) -> bytes:
    """The 2025 tarfile bypass (CVE-2025-4517 and its kin): symbolic links through folders whose resolved
    path passes PATH_MAX, so the `data` filter's realpath stops checking; then a file written through the
    escape and a hard link to a host file beside it."""
    steps = "abcdefghijklmnop"
    members: list[Member] = []
    path = ""
    for step in steps:
        members += [_dir(os.path.join(path, comp)), _link(os.path.join(path, step), comp)]
        path = os.path.join(path, comp)
    deep = os.path.join(*steps, "l" * 254)
    members += [_link(deep, "../" * len(steps)), _link("escape", f"{deep}/../{outside}")]
    members += [_file("escape/pwned", b"written outside\n"), _typed("code/leak.py", tarfile.LNKTYPE, "escape/secret")]
    return _tar(*members)


@pytest.mark.parametrize(
    ("comp", "why"),
    [("d" * 247, "a path of more than 3072 bytes"), ("d" * 100, "lies below 'a', which is a symbolic link")],
    ids=["as-published", "shorter-folders"],
)
def test_the_crafted_escape_tar_is_refused_and_nothing_lands_outside(tmp_path: Path, comp: str, why: str) -> None:
    """On Python 3.11.7 the `data` filter let this tar write outside and hard-link a host file (issue 28 §1).
    With folders short enough to pass the path limit, the chain is refused where it first goes through a link."""
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "secret").write_text("host secret\n")
    into = tmp_path / "into"
    with pytest.raises(UnpackRefused, match="member .*" + re.escape(why)):
        unpack_fresh(lambda: io.BytesIO(_escape_tar("outside", comp)), into)
    assert sorted(os.listdir(tmp_path / "outside")) == ["secret"]
    assert (tmp_path / "outside" / "secret").stat().st_nlink == 1
    assert not into.exists(), "nothing half-written stays"


@pytest.mark.parametrize(
    ("members", "why"),
    [
        ([_file("../escape")], "'..' in its name"),
        ([_file("/etc/podium-escape")], "an absolute name"),
        ([_dir("code"), _typed("code/leak.py", tarfile.LNKTYPE, "/etc/hostname")], "a hard link to '/etc/hostname'"),
        ([_typed("console", tarfile.CHRTYPE)], "a character device"),
        ([_typed("disk", tarfile.BLKTYPE)], "a block device"),
        ([_typed("pipe", tarfile.FIFOTYPE)], "a FIFO"),
        ([_file("n" * 256)], "a name of 256 bytes"),
        ([_file("/".join(["p" * 200] * 16))], "a path of more than 3072 bytes"),
        ([_file("/".join(["d"] * (MAX_DEPTH + 1)))], f"more than {MAX_DEPTH} folders deep"),
        ([_link("up", "/tmp"), _file("up/x")], "lies below 'up', which is a symbolic link"),
        ([_link("a", "."), _link("a/b", "/etc"), _file("a/b/x")], "lies below 'a', which is a symbolic link"),
        ([_file("x/y")], "its folder 'x' was not made by an earlier member"),
        ([_file("code.py"), _file("code.py", b"again")], "a second member of the same name"),
        ([_file("code.py"), _link("code.py", "/etc/shadow")], "a second member of the same name"),
        ([_file("record.json", b"{}")], "record.json is written by podium"),
        ([_link("empty", "")], "a symbolic link with an empty or too long target"),
    ],
    ids=[
        "dot-dot", "absolute", "hardlink", "char-device", "block-device", "fifo", "long-name", "long-path", "deep",
        "below-link", "link-chain", "no-parent", "duplicate", "file-then-link", "reserved", "empty-link",
    ],
)  # fmt: skip
def test_each_hostile_member_is_refused_by_name_with_its_reason(
    tmp_path: Path, members: list[Member], why: str
) -> None:
    into = tmp_path / "into"
    with pytest.raises(UnpackRefused, match="member .*" + re.escape(why)):
        unpack_fresh(lambda: io.BytesIO(_tar(*members)), into, reserved={"record.json"})
    assert not into.exists() and sorted(os.listdir(tmp_path)) == []


def test_sparse_members_and_oversized_headers_are_refused_before_tarfile_reads_them(tmp_path: Path) -> None:
    sparse = tarfile.TarInfo("holes")
    sparse.type, sparse.size = tarfile.GNUTYPE_SPARSE, 0
    info = tarfile.TarInfo("x")
    info.pax_headers = {"comment": "c" * (1 << 20)}  # a 1 MiB PAX header: tarfile would read it whole
    pax_sparse = tarfile.TarInfo("y")
    pax_sparse.pax_headers = {"GNU.sparse.major": "1", "GNU.sparse.minor": "0", "GNU.sparse.name": "y"}
    for data, why in [
        (_tar((sparse, None), fmt=tarfile.GNU_FORMAT), "a sparse file"),
        (_tar((info, b"")), "a header of"),
        (_tar((pax_sparse, b"")), "a sparse file"),
    ]:
        into = tmp_path / "into"
        with pytest.raises(UnpackRefused, match=why):
            unpack_fresh(lambda data=data: io.BytesIO(data), into)
        assert not into.exists()


def test_caps_on_bytes_and_members_are_applied_while_unpacking(tmp_path: Path) -> None:
    data = _tar(_file("a", b"1" * 600), _file("b", b"2" * 600))
    with pytest.raises(UnpackRefused, match="pass their cap of 1,000 bytes"):
        unpack_fresh(lambda: io.BytesIO(data), tmp_path / "one", max_bytes=1000)
    with pytest.raises(UnpackRefused, match="more than 1 members"):
        unpack_fresh(lambda: io.BytesIO(data), tmp_path / "two", max_members=1)
    assert unpack_fresh(lambda: io.BytesIO(data), tmp_path / "three", max_bytes=1200, max_members=2) == 2


def _folder_with(tmp_path: Path) -> Path:
    folder = tmp_path / "run"
    (folder / "code").mkdir(parents=True)
    (folder / "submission").mkdir()
    (folder / "submission" / "submission.csv").write_text("id,y\n1,0\n")
    return folder


def test_a_sparse_terabyte_is_withheld_with_its_reason_not_packed(tmp_path: Path) -> None:
    """`truncate -s 1T code/x` takes no blocks, so --disk's block count let it through; the pack caps apparent
    bytes and withholds sparse files, and the tar is written to disk as it goes, never held in memory."""
    folder = _folder_with(tmp_path)
    with open(folder / "code" / "x", "wb") as handle:
        handle.truncate(1 << 40)
    packed, data = _packed(folder, tmp_path / "run.tar", max_bytes=1 << 30)
    assert packed.size == len(data) < 1 << 20
    assert packed.withheld == [f"'code/x': a sparse file ({1 << 40:,} bytes apparent, 0 allocated); not sent"]
    assert packed.sha256 == hashlib.sha256(data).hexdigest()
    out = tmp_path / "out"
    out.mkdir()
    _unpacked(data, out)
    assert (out / "submission" / "submission.csv").read_text() == "id,y\n1,0\n" and not (out / "code" / "x").exists()


def test_files_past_the_disk_cap_in_apparent_bytes_are_withheld_the_submission_first(tmp_path: Path) -> None:
    folder = _folder_with(tmp_path)
    (folder / "code" / "a.bin").write_bytes(b"a" * 4000)
    (folder / "code" / "b.bin").write_bytes(b"b" * 4000)
    packed, _ = _packed(folder, tmp_path / "run.tar", max_bytes=6000, first=("submission",))
    assert packed.file_bytes == 4000 + len("id,y\n1,0\n")
    assert packed.withheld_count == 1 and packed.withheld[0].startswith("'code/b.bin': 4,000 bytes would take")
    assert "--disk" in packed.withheld[0]
    packed, _ = _packed(folder, tmp_path / "full.tar", max_bytes=8000, first=("submission",))
    assert packed.withheld[0].startswith("'code/b.bin'"), "the submission went first, the code's last file out"


def test_a_hard_link_to_a_host_file_is_withheld_and_its_content_never_sent(tmp_path: Path) -> None:
    folder = _folder_with(tmp_path)
    (tmp_path / "host-secret").write_text("HOST-SECRET-CONTENT\n")
    os.link(tmp_path / "host-secret", folder / "code" / "leak.py")
    os.mkfifo(folder / "code" / "pipe")
    packed, data = _packed(folder, tmp_path / "run.tar")
    assert b"HOST-SECRET-CONTENT" not in data
    assert packed.withheld == [
        "'code/leak.py': a hard link (2 names for one file, which may lie outside the folder); not sent",
        "'code/pipe': a FIFO, not a regular file; not sent",
    ]
    # podium's own folders (prepared data, the user's agent) send a hard link as the file it reads as
    trusted, data = _packed(folder, tmp_path / "trusted.tar", hostile=False)
    assert b"HOST-SECRET-CONTENT" in data and trusted.withheld == ["'code/pipe': a FIFO, not a regular file; not sent"]


def test_withheld_entries_are_named_then_counted(tmp_path: Path) -> None:
    folder = _folder_with(tmp_path)
    for index in range(105):
        os.mkfifo(folder / "code" / f"p{index:03d}")
    packed, _ = _packed(folder, tmp_path / "run.tar")
    summary = packed.withheld_summary()
    assert len(summary) == 101 and summary[-1] == "... and 5 more withheld"


def _pieces(data: bytes, size: int = 7) -> Iterator[bytes]:
    for at in range(0, len(data), size):
        yield data[at : at + size]


def test_a_chunked_stream_must_be_the_size_and_digest_announced(tmp_path: Path) -> None:
    data = _tar(_file("a", b"hello"))
    digest = hashlib.sha256(data).hexdigest()
    assert unpack(ChunkStream(_pieces(data), len(data), digest), tmp_path) == 1
    for stream, why in [
        (ChunkStream(_pieces(data), len(data) - 1, digest), "runs past"),
        (ChunkStream(_pieces(data[:-512]), len(data), digest), "ended after"),
        (ChunkStream(_pieces(data), len(data), "0" * 64), "sha256 differs"),
    ]:
        with pytest.raises(UnpackRefused, match=why):
            unpack_fresh(lambda stream=stream: stream, tmp_path / "fresh")
    assert tar_bound(0, 1) > len(data)


def test_the_node_outbox_serves_parts_of_its_own_tars_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PODIUM_NODE_CACHE", str(tmp_path / "cache"))
    outbox().mkdir(parents=True)
    (outbox() / "run.tar").write_bytes(b"0123456789")
    assert read_part("run.tar", 3, 4) == b"3456" and read_part("run.tar", 8, 100) == b"89"
    for bad in ("../run.tar", "/etc/passwd", "run", ".run.tar"):
        with pytest.raises(ValueError, match="not a tar of the outbox"):
            read_part(bad, 0, 1)
    (outbox() / "old.tar").write_bytes(b"left by a killed driver")
    os.utime(outbox() / "old.tar", (time.time() - OUTBOX_TTL_S - 60,) * 2)
    _sweep_outbox()
    assert sorted(os.listdir(outbox())) == ["run.tar"]
    drop_part("run.tar")
    assert os.listdir(outbox()) == []


def test_the_node_cache_is_the_users_own(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Issue 29 §10: /tmp/podium-node-cache was shared by every user of a node."""
    monkeypatch.delenv("PODIUM_NODE_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert node_cache() == tmp_path / "xdg" / "podium" / "node"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert node_cache() == tmp_path / "home" / ".cache" / "podium" / "node"


def _opener(folder: Path, out: Path):
    pack(folder, out)
    return lambda: open(out, "rb")


def _public(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    prepared = tmp_path / "data" / "comp" / "prepared"
    (prepared / "public" / "images").mkdir(parents=True)
    (prepared / "public" / "train.csv").write_text("id,y\n1,2\n")
    (prepared / "public" / "images" / "a.png").write_bytes(b"png")
    return prepared, digest_tree(prepared, sides=("public",))


def test_the_node_caches_shipped_data_by_checksum_and_refuses_other_bytes(tmp_path: Path) -> None:
    prepared, checksums = _public(tmp_path)
    digest = public_digest(checksums)
    shipped = _opener(prepared / "public", tmp_path / "public.tar")
    root = cache_public(shipped, tmp_path / "cache", "comp", digest, checksums)
    assert (root / "comp" / "prepared" / "public" / "images" / "a.png").read_bytes() == b"png"

    def never() -> io.BytesIO:
        raise AssertionError("a cached folder is not read again")

    assert cache_public(never, tmp_path / "cache", "comp", digest, checksums) == root
    (prepared / "public" / "train.csv").write_text("id,y\n1,3\n")
    changed = _opener(prepared / "public", tmp_path / "changed.tar")
    with pytest.raises(HarnessError, match="differs from its recorded checksums"):
        cache_public(changed, tmp_path / "other", "comp", digest, checksums)
    assert not list((tmp_path / "other").rglob("train.csv")), "nothing unverified is left in the cache"
    agent = unpack_once(shipped, tmp_path / "agents" / "abc")
    assert (agent / "train.csv").is_file() and unpack_once(never, tmp_path / "agents" / "abc") == agent
    pieces = [len(piece) for piece in file_chunks(tmp_path / "public.tar", 4096)]
    assert pieces[:-1] == [4096] * (len(pieces) - 1) and sum(pieces) == (tmp_path / "public.tar").stat().st_size


def test_a_shared_folder_is_checked_and_a_change_is_seen(tmp_path: Path) -> None:
    prepared, checksums = _public(tmp_path)
    verified = tmp_path / "verified"
    check_public(prepared, checksums, "comp", verified=verified)
    assert len(list(verified.iterdir())) == 1
    check_public(prepared, checksums, "comp", verified=verified)  # the listing matches: not hashed again
    (prepared / "public" / "train.csv").write_text("id,y\n1,9\n")
    with pytest.raises(HarnessError, match=r"changed: public/train\.csv"):
        check_public(prepared, checksums, "comp", verified=verified)


def test_a_dead_address_is_refused_within_seconds_with_the_fix(tmp_path: Path) -> None:
    """Issue 29 §2: `--cluster ray:127.0.0.1:1` printed 61 warnings and its error after 822 s."""
    started = time.monotonic()
    result = subprocess.run(
        [sys.executable, "-m", "podium", "run", "--cluster", "ray:127.0.0.1:1", "--competitions", "practice-wine",
         "--data-dir", str(tmp_path / "data"), "--runs-dir", str(tmp_path / "runs")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    [line] = result.stderr.strip().splitlines()
    assert "no Ray cluster answers at '127.0.0.1:1'" in line and "127.0.0.1:1: [Errno 111]" in line
    assert "ray start --head --port 6379" in line and "--cluster ray:127.0.0.1:6379" in line
    assert not (tmp_path / "data").exists(), "refused before anything was prepared"
    assert time.monotonic() - started < 60


def test_a_ray_client_session_the_head_could_not_start_is_asked_again(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """CI: `--cluster ray://...` failed once with "Initialization failure from server:" (the head's Ray Client
    server starts a process per session and, under load, missed its own deadline), shown as "no Ray cluster
    answers" with the reason cut to its first line. Such a failure is asked again; its reason is shown whole."""
    ray = pytest.importorskip("ray")
    from podium.cluster import session

    failure = (
        "Initialization failure from server:\nTraceback (most recent call last):\n  ...\nRuntimeError: Proxy failed"
    )
    calls: list[str] = []

    def failing(times: int, error: Exception):
        def init(address: str, **_: object) -> None:
            calls.append(address)
            if len(calls) <= times:
                raise error

        return init

    monkeypatch.setattr(session, "_probe", lambda address: None)
    monkeypatch.setattr(session.time, "sleep", lambda seconds: None)
    monkeypatch.setattr(ray, "is_initialized", lambda: False)
    monkeypatch.setattr(ray, "shutdown", lambda: None)
    monkeypatch.setattr(ray, "init", failing(2, ConnectionAbortedError(failure)))
    assert session.connect("ray://127.0.0.1:10001") is ray and len(calls) == 3
    assert capsys.readouterr().err.splitlines() == [
        "the Ray Client server at ray://127.0.0.1:10001 could not start a session (Initialization failure from "
        f"server: RuntimeError: Proxy failed); trying again ({n} of 3)"
        for n in (2, 3)
    ]
    calls.clear()
    monkeypatch.setattr(ray, "init", failing(99, ConnectionAbortedError(failure)))
    with pytest.raises(UsageError, match=r"answered but could not start a session .* in 3 attempts .*Proxy failed"):
        session.connect("ray://127.0.0.1:10001")
    assert len(calls) == 3
    calls.clear()
    monkeypatch.setattr(ray, "init", failing(99, ConnectionError("refused\nmore")))
    with pytest.raises(UsageError, match=r"no Ray cluster answers at '127\.0\.0\.1:6379' \(refused: more\)"):
        session.connect("127.0.0.1:6379")
    assert len(calls) == 1, "a head's own address is asked once"


def test_a_stale_address_file_of_this_machine_is_refused_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--cluster ray with no RAY_ADDRESS: the cluster this machine last started, as Ray's address file names it."""
    from podium.cluster.session import _probe

    (tmp_path / "ray").mkdir()
    (tmp_path / "ray" / "ray_current_cluster").write_text("127.0.0.1:1\n")
    monkeypatch.setenv("RAY_TMPDIR", str(tmp_path))
    with pytest.raises(UsageError, match=r"at auto \(this machine's last cluster, 127\.0\.0\.1:1\) \("):
        _probe("auto")
    (tmp_path / "ray" / "ray_current_cluster").unlink()
    _probe("auto")  # no file: Ray itself says at once that there is no cluster


def test_cluster_options_without_a_cluster_are_refused() -> None:
    result = subprocess.run(
        [sys.executable, "-m", "podium", "run", "--ray-resource", "h100", "--competitions", "practice-wine"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2 and "go with --cluster" in result.stderr


def test_the_driver_keeps_what_the_run_is_whatever_the_node_says() -> None:
    """A compromised node's record cannot rename the agent, point the audit at another agent folder, change the
    limits the run had or bring its own grade; what it observed (its result, its GPUs) stays the node's."""
    from podium.cluster.driver import _from_node
    from podium.records import RunRecord

    ours = RunRecord(
        "g", "practice-wine", 1, 0, "baseline", agent_hash="a" * 64, agent_folder="/opt/agents/baseline",
        limits={"cpus": 2, "memory_bytes": 4 << 30, "gpu_ids": []},
    )  # fmt: skip
    node = RunRecord(
        "g", "practice-titanic", 1, 5, "dummy", agent_hash="b" * 64, agent_folder="/",
        limits={"cpus": 64, "memory_bytes": 1 << 40, "gpu_ids": [1]}, agent_result={"exit_code": 0},
        isolation={"network_observed": {"interfaces": []}},
    ).to_dict()  # fmt: skip
    node["grade"] = {"competition_id": "practice-titanic", "score": 1.0, "gold_medal": True}
    landed = _from_node(node, ours)
    assert (landed.competition_id, landed.seed, landed.agent) == ("practice-wine", 0, "baseline")
    assert (landed.agent_hash, landed.agent_folder) == ("a" * 64, "/opt/agents/baseline")
    assert landed.limits == {"cpus": 2, "memory_bytes": 4 << 30, "gpu_ids": [1]} and landed.grade is None
    assert landed.agent_result == {"exit_code": 0} and landed.isolation == {"network_observed": {"interfaces": []}}
    with pytest.raises(HarnessError, match="not a JSON object"):
        _from_node(["not", "a", "record"], ours)

"""Everything a run's mounts come from, staged per run: ids, neutral sources, the writable filesystem.

When podium runs as root, each run gets a *stage*, a small tmpfs at ``/run/podium-sandbox/<run>``
(mode 0750, group = the agent's id) from which both isolating sandboxes take every mount:

* ``etc/``: the generated ``passwd``, ``group`` and ``hosts``, an empty file (laid over what the
  sandbox covers), and with a memory cap the run's
  ``meminfo`` (shown at ``/proc/meminfo``, :mod:`podium.sandbox._limits`);
* ``m/<i>``: mount ``i``. A read-only folder is a read-only overlay whose only layer is the folder,
  given to the kernel as ``/proc/self/fd/N``: the sandbox's ``/proc/self/mountinfo`` then shows
  ``/`` and ``lowerdir=/proc/self/fd/N``, not where the folder lies on the host (a bind mount would
  show its host path). A read-only file comes from such an overlay of its folder. A writable folder
  is a folder of the run's own filesystem (``rw/``, :mod:`podium.sandbox._disk`): what the host
  folder holds is moved in before the run and moved back out after it (where a file of the same
  name appeared meanwhile in the host folder, such as the harness's logs, the harness's is kept).
  Without that filesystem (no loop devices) it is the host folder itself, bind-mounted. A socket
  is bind-mounted (its host path shows);
* ``py/<j>``: read-only binds of the host Python's folders and files (:mod:`podium.sandbox._python`), so
  that bwrap, which runs as the agent's unprivileged id, can reach them wherever they lie (``/root`` is
  mode 0700).

The agent's id (:mod:`podium.sandbox._ids`) owns the writable folders during the run; afterwards
:func:`podium.sandbox._handback.hand_over` gives them to the harness's user, stripped of anything but
plain files, folders and symlinks. When the stage ends it is unmounted and removed; the stage of a
harness that was killed (its ``owner`` file names a pid and start time that no longer match a live
process) is unmounted and removed by the next run that stages.

Without root nothing can be mounted: the mounts keep their host sources (which the sandbox's
mountinfo then shows), the agent runs as the harness's user, the generated files live in a
temporary folder, and the disk cap is a periodic check.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import stat
import tempfile
import time
import uuid
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from podium import owner
from podium.errors import PodiumError
from podium.sandbox import _disk
from podium.sandbox._handback import copy_tree, empty_folder, hand_over, harness_ids
from podium.sandbox._ids import agent_ids
from podium.sandbox._limits import write_meminfo
from podium.sandbox._types import Limits, Mount

STAGE_ROOT = Path("/run/podium-sandbox")
HOSTNAME = "podium"
EMPTY_FILE = "empty"
HOME = "/home"
_STAGE_TMPFS = "size=8m,nr_inodes=4096"
_MS_RDONLY, _MS_NOSUID, _MS_NODEV, _MS_REMOUNT, _MS_BIND, _MS_REC = 1, 2, 4, 32, 4096, 16384
_MNT_DETACH = 2
_SWEEP_MIN_AGE_SECONDS = 60.0


def generated_etc(uid: int, gid: int) -> dict[str, str]:
    """The sandbox's passwd, group and hosts: root, the agent (its own id), nobody; localhost only."""
    return {
        "passwd": "root:x:0:0:root:/root:/usr/sbin/nologin\n"
        f"agent:x:{uid}:{gid}:agent:{HOME}:/bin/sh\n"
        "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n",
        "group": f"root:x:0:\nagent:x:{gid}:\nnogroup:x:65534:\n",
        "hosts": f"127.0.0.1 localhost {HOSTNAME}\n::1 localhost\n",
    }


@dataclass
class Staged:
    """Where a run's mounts come from now, and as whom it runs."""

    mounts: list[Mount]  # the run's mounts, their sources replaced by stage paths when staged
    etc_dir: Path  # passwd, group, hosts
    prefixes: list[tuple[str, str]]  # (source, target) of the host Python's folders and files
    uid: int
    gid: int
    disk: _disk.DiskWatch | None = None  # the periodic check, where the kernel does not enforce the cap
    warnings: list[str] = field(default_factory=list)
    root: Path | None = None  # the stage, when there is one

    @property
    def empty_file(self) -> Path:
        """An empty regular file, laid over each file the sandbox covers (a device node such as /dev/null cannot be
        opened on the sandbox's ``nodev`` binds)."""
        return self.etc_dir / EMPTY_FILE

    meminfo: Path | None = None  # the run's /proc/meminfo, with a memory cap (:mod:`podium.sandbox._limits`)


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _mount(source: str | None, target: Path, fstype: str | None, flags: int, data: str | None = None) -> None:
    libc = _libc()
    encode = lambda s: None if s is None else os.fsencode(s)  # noqa: E731
    if libc.mount(encode(source), os.fsencode(target), encode(fstype), flags, encode(data)) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"mount {fstype or 'bind'} at {target}: {os.strerror(code)}")


def _bind(source: Path, target: Path, *, read_only: bool) -> None:
    _mount(str(source), target, None, _MS_BIND | _MS_REC)
    if read_only:
        _mount(None, target, None, _MS_REMOUNT | _MS_BIND | _MS_RDONLY | _MS_NOSUID | _MS_NODEV)


def _overlay(folder: Path, target: Path, empty: Path) -> None:
    """A read-only overlay of ``folder`` at ``target`` whose options name no host path."""
    lower = os.open(folder, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)
    second = os.open(empty, os.O_PATH | os.O_DIRECTORY | os.O_CLOEXEC)  # an overlay without upper needs two layers
    try:
        options = f"lowerdir=/proc/self/fd/{lower}:/proc/self/fd/{second}"
        _mount("overlay", target, "overlay", _MS_RDONLY | _MS_NOSUID | _MS_NODEV, options)
    finally:
        os.close(lower)
        os.close(second)


def _unmount_below(root: Path) -> None:
    """Detach every mount at or below ``root`` (deepest first)."""
    libc = _libc()
    prefix = str(root)
    for point in sorted((p for p in _mount_points() if p == prefix or p.startswith(prefix + "/")), reverse=True):
        libc.umount2(os.fsencode(point), _MNT_DETACH)


def _mount_points() -> list[str]:
    """Mount points as /proc/self/mountinfo writes them (stage paths have no characters it escapes)."""
    with contextlib.suppress(OSError):
        lines = Path("/proc/self/mountinfo").read_bytes().decode("utf-8", "surrogateescape").splitlines()
        return [line.split(" ")[4] for line in lines if line.count(" ") > 4]
    return []


def _start_time(pid: int) -> str | None:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rindex(")") + 2 :].split()[19]


def sweep(base: Path = STAGE_ROOT) -> None:
    """Unmount and remove the stages of harnesses that no longer run (killed with SIGKILL)."""
    if not base.is_dir():
        return
    for stage in base.iterdir():
        if stage.name == "ids" or not stage.is_dir() or stage.is_symlink():
            continue
        try:
            pid, started = (stage / "owner").read_text().split()
            alive = _start_time(int(pid)) == started
        except (OSError, ValueError):
            alive = True
            with contextlib.suppress(OSError):  # no owner yet: being made right now, unless it is old
                alive = time.time() - stage.stat().st_mtime < _SWEEP_MIN_AGE_SECONDS
        if not alive:
            _remove_stage(stage)


def _remove_stage(stage: Path) -> None:
    _unmount_below(stage)
    with contextlib.suppress(OSError):
        stage.rmdir()  # only once nothing is mounted there: never delete through a leftover mount


def _base() -> Path:
    """The folder the stages live in: root's own, never a link or a folder others may write."""
    STAGE_ROOT.mkdir(mode=0o755, parents=True, exist_ok=True)
    info = STAGE_ROOT.lstat()
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != 0 or info.st_mode & 0o022:
        raise PodiumError(f"{STAGE_ROOT} is not a folder owned by root that only root may write. Fix: remove it.")
    return STAGE_ROOT


@contextlib.contextmanager
def staged(mounts: Sequence[Mount], limits: Limits, prefixes: Sequence[str]) -> Iterator[Staged]:
    """The run's mounts made ready for an isolating sandbox; when the run is over, its writable folders are
    back in their host folders, owned by the harness's user, and the stage is gone."""
    if os.getuid() != 0:
        with _unstaged(mounts, limits, prefixes) as result:
            yield result
        return
    base = _base()
    sweep(base)
    with contextlib.ExitStack() as stack:
        uid, gid = stack.enter_context(agent_ids(base / "ids"))
        root = base / uuid.uuid4().hex[:12]
        root.mkdir(mode=0o750)
        stack.callback(_remove_stage, root)
        _mount("tmpfs", root, "tmpfs", _MS_NOSUID | _MS_NODEV, f"{_STAGE_TMPFS},mode=0750,uid=0,gid={gid}")
        (root / "owner").write_text(f"{os.getpid()} {_start_time(os.getpid())}\n")
        result = Staged(mounts=[], etc_dir=root / "etc", prefixes=[], uid=uid, gid=gid, root=root)
        _write_etc(result.etc_dir, uid, gid)
        result.meminfo = write_meminfo(result.etc_dir, limits)
        for name in ("m", "py", "empty"):
            (root / name).mkdir(mode=0o755)
        writable = [m for m in mounts if m.writable and m.source.is_dir()]
        disk_root = _writable_filesystem(root, writable, limits, result.warnings)
        if disk_root is None and limits.disk_bytes is not None:
            result.disk = _disk.disk_watch(mounts, limits)
        for index, mount in enumerate(mounts):
            result.mounts.append(_stage_mount(root, index, mount, disk_root, uid, gid, stack, result))
        for index, prefix in enumerate(prefixes):
            target = root / "py" / str(index)
            _make_point(target, os.stat(prefix))
            _bind(Path(prefix), target, read_only=True)
            result.prefixes.append((str(target), prefix))
        yield result


def _write_etc(folder: Path, uid: int, gid: int) -> None:
    folder.mkdir(mode=0o755, exist_ok=True)
    for name, text in {**generated_etc(uid, gid), EMPTY_FILE: ""}.items():
        (folder / name).write_text(text)
        (folder / name).chmod(0o644)


def _writable_filesystem(root: Path, writable: Sequence[Mount], limits: Limits, warnings: list[str]) -> Path | None:
    """The run's own filesystem, mounted at ``root/rw``; None (and a warning if capped) when it cannot be made."""
    if not writable:
        return None
    problem = _disk.loop_problem()
    if problem is None:
        (root / "rw").mkdir(mode=0o755)
        try:
            _disk.make_filesystem(writable[0].source.resolve().parent, root / "rw", limits.disk_bytes)
            return root / "rw"
        except Exception as error:  # OSError, or CalledProcessError from mkfs
            detail = getattr(error, "stderr", b"") or b""
            problem = f"{error} {detail.decode(errors='replace').strip()}".strip()
    if limits.disk_bytes is not None:
        warnings.append(_disk.check_warning(limits.disk_bytes, problem))
    return None


def _stage_mount(
    root: Path,
    index: int,
    mount: Mount,
    disk_root: Path | None,
    uid: int,
    gid: int,
    stack: contextlib.ExitStack,
    result: Staged,
) -> Mount:
    source = mount.source.resolve()
    target = root / "m" / str(index)
    info = source.stat()
    if mount.writable and stat.S_ISDIR(info.st_mode) and disk_root is not None:
        inside = disk_root / str(index)
        inside.mkdir(mode=0o755)
        os.chown(inside, uid, gid)

        def copy_out() -> None:
            budget = _disk.used_bytes(disk_root) + (1 << 20)
            result.warnings.extend(copy_tree(inside, source, *harness_ids(), budget))

        stack.callback(lambda: result.warnings.extend(hand_over(source, *harness_ids())))
        stack.callback(copy_out)
        # moved in: the host folder stays empty during the run, free for what the harness writes there (the
        # agent's stdout and stderr logs); moved back out after, where the harness's files keep their names
        result.warnings.extend(copy_tree(source, inside, uid, gid))
        empty_folder(source)
        return Mount(inside, mount.target, writable=True)
    if mount.writable:  # no filesystem of its own: the host folder itself, the agent's for the run
        stack.callback(lambda: result.warnings.extend(hand_over(source, *harness_ids())))
        result.warnings.extend(hand_over(source, uid, gid))
        _make_point(target, info)
        _bind(source, target, read_only=False)
        return Mount(target, mount.target, writable=True)
    if stat.S_ISDIR(info.st_mode):
        target.mkdir()
        try:
            _overlay(source, target, root / "empty")
        except OSError:  # a filesystem overlayfs cannot stack on: a bind, whose host path the sandbox can see
            _bind(source, target, read_only=True)
        return Mount(target, mount.target)
    if stat.S_ISREG(info.st_mode):
        target.mkdir()
        try:
            _overlay(source.parent, target, root / "empty")
            return Mount(target / source.name, mount.target)
        except OSError:
            target.rmdir()
    _make_point(target, info)  # a socket (or anything else): bound as it is
    _bind(source, target, read_only=True)
    return Mount(target, mount.target)


def _make_point(target: Path, info: os.stat_result) -> None:
    if stat.S_ISDIR(info.st_mode):
        target.mkdir(exist_ok=True)
    else:
        target.touch(exist_ok=True)


@contextlib.contextmanager
def _unstaged(mounts: Sequence[Mount], limits: Limits, prefixes: Sequence[str]) -> Iterator[Staged]:
    uid, gid = harness_ids()
    with tempfile.TemporaryDirectory(prefix=f"podium-etc-{owner.own_token()}-") as etc_dir:
        resolved = [Mount(m.source.resolve(), m.target, m.writable) for m in mounts]
        result = Staged(resolved, Path(etc_dir), [(p, p) for p in prefixes], uid, gid)
        _write_etc(result.etc_dir, uid, gid)
        result.meminfo = write_meminfo(result.etc_dir, limits)
        os.chmod(etc_dir, 0o755)
        if limits.disk_bytes is not None:
            result.disk = _disk.disk_watch(mounts, limits)
            result.warnings.append(_disk.check_warning(limits.disk_bytes, "podium does not run as root"))
        try:
            yield result
        finally:
            for mount in mounts:
                if mount.writable:
                    result.warnings.extend(hand_over(mount.source.resolve(), uid, gid))

"""The disk cap: a filesystem of the cap's size per run, or (without root or loop devices) a periodic check.

**The kernel's limit** (podium running as root, loop devices and ``mkfs.ext4`` available): each run
gets its own ext4 filesystem on a loop device, ``Limits.disk_bytes`` big (without a cap: as big as
the free space where the run's record lies), with one inode per 64 KiB of it (at least 4,096; at
most 16 M without a cap), so that empty files and folders count too. The run's writable folders
live in it for the run and are copied out into the run record afterwards
(:func:`podium.sandbox._handback.copy_tree`). A write past the cap fails with ENOSPC, as on a
full disk; the run goes on. The image is a sparse file next to the run's writable folders,
unlinked as soon as it is attached, so it takes only the space the agent fills and nothing of it
outlives the loop device; the loop device detaches itself when the filesystem is unmounted
(``LO_FLAGS_AUTOCLEAR``), and the stage that holds the mount (:mod:`podium.sandbox._stage`) is
unmounted by the next run if the harness was killed.

**The check** (the fallback): every 5 s the space allocated and the inodes used below the writable
folders are measured and the run is killed above the cap (``killed_for="disk"``); a burst of writes
can overshoot it between two checks. ``ExecResult.warnings`` says so.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import shutil
import stat
import struct
import subprocess
import uuid
from collections.abc import Sequence
from pathlib import Path

from podium.sandbox._types import Limits, Mount

CHECK_EVERY_SECONDS = 5.0
BYTES_PER_INODE = 64 << 10
MIN_INODES = 4096
MAX_IMAGE_BYTES = 16 << 40  # the largest file ext4 holds with 4 KiB blocks: where the image itself may live

_LOOP_CTL_GET_FREE = 0x4C82
_LOOP_SET_FD = 0x4C00
_LOOP_CLR_FD = 0x4C01
_LOOP_SET_STATUS64 = 0x4C04
_LOOP_CONFIGURE = 0x4C0A
_LO_FLAGS_AUTOCLEAR = 4
_MS_NOSUID, _MS_NODEV = 2, 4
_LOOP_MAJOR = 7


def inode_cap(disk_bytes: int) -> int:
    return max(MIN_INODES, disk_bytes // BYTES_PER_INODE)


def usage(paths: Sequence[Path]) -> tuple[int, int]:
    """Disk space allocated to the files below ``paths`` and how many inodes they use (hard links counted
    once, symlinks not followed)."""
    seen: set[tuple[int, int]] = set()
    total = 0
    todo = [str(p) for p in paths]
    while todo:
        path = todo.pop()
        try:
            info = os.lstat(path)
        except OSError:
            continue
        key = (info.st_dev, info.st_ino)
        if key in seen:
            continue
        seen.add(key)
        total += info.st_blocks * 512
        if stat.S_ISDIR(info.st_mode):
            with contextlib.suppress(OSError):
                todo.extend(entry.path for entry in os.scandir(path))
    return total, len(seen)


def allocated_bytes(paths: Sequence[Path]) -> int:
    """Disk space allocated to the files below ``paths``."""
    return usage(paths)[0]


class DiskWatch:
    """Whether the run's writable mounts hold more than ``cap_bytes`` (or more inodes than ``cap_inodes``);
    measured at most every few seconds."""

    def __init__(
        self, paths: Sequence[Path], cap_bytes: int, every: float = CHECK_EVERY_SECONDS, cap_inodes: int | None = None
    ) -> None:
        self.paths = list(paths)
        self.cap_bytes = cap_bytes
        self.cap_inodes = cap_inodes if cap_inodes is not None else inode_cap(cap_bytes)
        self.every = every
        self.next_check = 0.0
        self.peak_bytes = 0

    def over(self, elapsed: float) -> bool:
        if elapsed < self.next_check:
            return False
        self.next_check = elapsed + self.every
        used, inodes = usage(self.paths)
        self.peak_bytes = max(self.peak_bytes, used)
        return used > self.cap_bytes or inodes > self.cap_inodes


def disk_watch(mounts: Sequence[Mount], limits: Limits) -> DiskWatch | None:
    """The disk check for a run's writable mounts, or None when the run has no disk cap."""
    if limits.disk_bytes is None:
        return None
    return DiskWatch([m.source for m in mounts if m.writable], limits.disk_bytes)


def check_warning(disk_bytes: int, why: str) -> str:
    return (
        f"Limits.disk_bytes={disk_bytes} is a check every {CHECK_EVERY_SECONDS:g} s, not a limit the kernel "
        f"enforces ({why}): a burst of writes can overshoot it until the run is killed. Fix: run podium as "
        "root on a host with loop devices and mkfs.ext4 (e2fsprogs)."
    )


# -- the per-run filesystem -------------------------------------------------------------------------------


def mkfs_ext4() -> str | None:
    path = os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/sbin"])
    return shutil.which("mkfs.ext4", path=path) or None


def loop_problem() -> str | None:
    """Why a per-run filesystem cannot be made here, or None when it can."""
    if os.getuid() != 0:
        return "podium does not run as root"
    if not os.path.exists("/dev/loop-control"):
        return "no /dev/loop-control (no loop devices here)"
    if mkfs_ext4() is None:
        return "mkfs.ext4 not found (apt-get install e2fsprogs)"
    return None


def image_size(disk_bytes: int | None, where: Path) -> tuple[int, int]:
    """(bytes, inodes) of the image for a cap (None: the free space at ``where``): room for ``disk_bytes``
    of data after ext4's own inode tables and bitmaps."""
    inodes_at_most = 2**32 - 1
    if disk_bytes is None:
        info = os.statvfs(where)
        disk_bytes = max(64 << 20, info.f_bavail * info.f_frsize)
        inodes_at_most = 1 << 24  # no cap asked for: inode tables for a whole free disk would be wasted
    inodes = min(inode_cap(disk_bytes), inodes_at_most)
    size = disk_bytes + inodes * 256 + disk_bytes // 1024 + (4 << 20)
    return min(MAX_IMAGE_BYTES, (size + 4095) // 4096 * 4096), inodes


def make_filesystem(where: Path, mountpoint: Path, disk_bytes: int | None) -> None:
    """Create an ext4 filesystem for ``disk_bytes`` of data in an unlinked sparse file in ``where``, attach
    it to a loop device that detaches itself once unmounted, and mount it (nosuid, nodev) at ``mountpoint``.

    Raises OSError (or CalledProcessError) when any step fails; nothing is left behind then.
    """
    mkfs = mkfs_ext4()
    if mkfs is None:
        raise OSError(errno.ENOENT, "mkfs.ext4 not found")
    size, inodes = image_size(disk_bytes, where)
    name = where / f".podium-disk-{uuid.uuid4().hex[:12]}"
    image = os.open(name, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    try:
        os.unlink(name)
        os.ftruncate(image, size)
        subprocess.run(
            [mkfs, "-q", "-F", "-b", "4096", "-I", "256", "-m", "0", "-N", str(inodes),
             "-O", "^has_journal,^resize_inode", "-E", "lazy_itable_init=1,nodiscard,root_owner=0:0",
             f"/proc/self/fd/{image}"],
            check=True, capture_output=True, pass_fds=(image,), timeout=300, env={"PATH": "/usr/sbin:/usr/bin:/sbin:/bin"},
        )  # fmt: skip
        loop, device = _attach(image)
        try:
            _mount(device, mountpoint)
        finally:
            os.close(loop)  # mounted: the mount holds the device; not mounted: autoclear detaches it now
    finally:
        os.close(image)


def _attach(image: int) -> tuple[int, str]:
    """Attach ``image`` to a free loop device with LO_FLAGS_AUTOCLEAR; (device fd, device path)."""
    control = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
    try:
        for _ in range(16):  # another process may take the free device first
            number = fcntl.ioctl(control, _LOOP_CTL_GET_FREE)
            device = f"/dev/loop{number}"
            if not os.path.exists(device):  # a static /dev (some containers): make the node
                os.mknod(device, 0o660 | stat.S_IFBLK, os.makedev(_LOOP_MAJOR, number))
            loop = os.open(device, os.O_RDWR | os.O_CLOEXEC)
            try:
                _configure(loop, image)
                return loop, device
            except OSError as error:
                os.close(loop)
                if error.errno != errno.EBUSY:
                    raise
        raise OSError(errno.EBUSY, "no free loop device")
    finally:
        os.close(control)


def _configure(loop: int, image: int) -> None:
    name = b"podium-run"
    info = struct.pack("=5Q4I64s64s32s2Q", 0, 0, 0, 0, 0, 0, 0, 0, _LO_FLAGS_AUTOCLEAR, name, b"", b"", 0, 0)
    try:
        fcntl.ioctl(loop, _LOOP_CONFIGURE, struct.pack("=2I", image, 0) + info + bytes(64))
    except OSError as error:
        if error.errno not in (errno.EINVAL, errno.ENOTTY):  # kernels before 5.8 lack LOOP_CONFIGURE
            raise
        fcntl.ioctl(loop, _LOOP_SET_FD, image)
        try:
            fcntl.ioctl(loop, _LOOP_SET_STATUS64, info)
        except OSError:
            fcntl.ioctl(loop, _LOOP_CLR_FD, 0)
            raise


def _mount(device: str, mountpoint: Path) -> None:
    libc = ctypes.CDLL(None, use_errno=True)
    flags = _MS_NOSUID | _MS_NODEV
    if libc.mount(device.encode(), os.fsencode(mountpoint), b"ext4", flags, b"noinit_itable") != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"mounting {device} at {mountpoint}: {os.strerror(code)}")


def used_bytes(mountpoint: Path) -> int:
    info = os.statvfs(mountpoint)
    return (info.f_blocks - info.f_bfree) * info.f_frsize

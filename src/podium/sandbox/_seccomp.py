"""podium's seccomp policy, one deny list for both isolating sandboxes: system calls an agent never
needs, refused with EPERM.

The same list is written out two ways: for bwrap, a classic BPF program written here instruction by
instruction (no libseccomp), handed to bubblewrap with ``--seccomp FD`` (bwrap installs it just
before it executes the agent, so it binds the agent and everything it starts); for Docker, a
seccomp profile in Docker's JSON format (:func:`docker_profile`), passed as ``seccomp=<profile>``
in place of Docker's default profile. It follows the spirit of Docker's default profile for an
unprivileged container:

* kernel keyrings (``keyctl``, ``add_key``, ``request_key``), ``bpf``, ``perf_event_open``,
  ``userfaultfd`` and ``io_uring``: large kernel attack surface that ML code does not use;
* new namespaces (``unshare``, ``setns``, and ``clone`` with any namespace flag): no nested user
  namespace, in which the agent would hold capabilities again; ``clone3`` answers ENOSYS, so the
  C library falls back to ``clone``, whose flags the filter can read;
* mounting, module loading, ``kexec``, ``reboot``, swap, accounting, quotas, ``syslog``, and the
  file-handle calls (``open_by_handle_at`` was the classic container escape);
* ``socket(AF_VSOCK, ...)``: network namespaces do not confine vsock, and a virtual machine's host
  agent may listen on it;
* any other architecture's system calls (32-bit ``int 0x80``, the x32 ABI): their numbers differ and
  would slip past the table, so the process that makes one is killed (SIGSYS), as Docker's runtime
  does for an architecture its profile does not list.

Everything else is allowed: the filter is a deny list, so Python, compilers, threads and
subprocesses work as usual.
"""

from __future__ import annotations

import errno
import functools
import json
import os
import platform
import struct

# struct sock_filter codes
_LD_W_ABS = 0x20
_JEQ_K = 0x15
_JGE_K = 0x35
_JSET_K = 0x45
_RET_K = 0x06

_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_X32_SYSCALL_BIT = 0x40000000
# CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET (NEWTIME's bit is the exit signal in clone)
_CLONE_NAMESPACES = 0x00020000 | 0x02000000 | 0x04000000 | 0x08000000 | 0x10000000 | 0x20000000 | 0x40000000

_DENIED = [
    *("keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd"),
    *("io_uring_setup", "io_uring_enter", "io_uring_register", "unshare", "setns"),
    *("mount", "umount2", "pivot_root", "move_mount", "open_tree", "fsopen", "fsconfig", "fsmount", "fspick"),
    *("mount_setattr", "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load"),
    *("reboot", "swapon", "swapoff", "acct", "quotactl", "syslog", "vhangup", "lookup_dcookie"),
    *("name_to_handle_at", "open_by_handle_at", "sethostname", "setdomainname"),
]
# socket(2) address families refused: AF_VSOCK (40) reaches the hypervisor's side, whatever the network namespace.
_DENIED_SOCKET_FAMILIES = (40,)


# System call numbers (arch/x86/entry/syscalls/syscall_64.tbl and include/uapi/asm-generic/unistd.h).
def _numbers(text: str) -> dict[str, int]:
    return {name: int(number) for name, number in (pair.split("=") for pair in text.split())}


_TABLES: dict[str, tuple[int, dict[str, int]]] = {
    "x86_64": (
        0xC000003E,  # AUDIT_ARCH_X86_64
        _numbers(
            "keyctl=250 add_key=248 request_key=249 bpf=321 perf_event_open=298 userfaultfd=323 "
            "io_uring_setup=425 io_uring_enter=426 io_uring_register=427 unshare=272 setns=308 mount=165 "
            "umount2=166 pivot_root=155 move_mount=429 open_tree=428 fsopen=430 fsconfig=431 fsmount=432 "
            "fspick=433 mount_setattr=442 init_module=175 finit_module=313 delete_module=176 kexec_load=246 "
            "kexec_file_load=320 reboot=169 swapon=167 swapoff=168 acct=163 quotactl=179 syslog=103 "
            "vhangup=153 lookup_dcookie=212 name_to_handle_at=303 open_by_handle_at=304 sethostname=170 "
            "setdomainname=171 clone=56 clone3=435 socket=41 "
        ),
    ),
    "aarch64": (
        0xC00000B7,  # AUDIT_ARCH_AARCH64
        _numbers(
            "keyctl=219 add_key=217 request_key=218 bpf=280 perf_event_open=241 userfaultfd=282 "
            "io_uring_setup=425 io_uring_enter=426 io_uring_register=427 unshare=97 setns=268 mount=40 "
            "umount2=39 pivot_root=41 move_mount=429 open_tree=428 fsopen=430 fsconfig=431 fsmount=432 "
            "fspick=433 mount_setattr=442 init_module=105 finit_module=273 delete_module=106 kexec_load=104 "
            "kexec_file_load=294 reboot=142 swapon=224 swapoff=225 acct=89 quotactl=60 syslog=116 vhangup=58 "
            "lookup_dcookie=18 name_to_handle_at=264 open_by_handle_at=265 sethostname=161 setdomainname=162 "
            "clone=220 clone3=435 socket=198 "
        ),
    ),
}


def supported(machine: str | None = None) -> bool:
    return (machine or platform.machine()) in _TABLES


@functools.cache
def program(machine: str | None = None) -> bytes:
    """The filter for this machine's architecture, as the bytes of a ``struct sock_filter`` array."""
    machine = machine or platform.machine()
    if machine not in _TABLES:
        raise ValueError(f"no seccomp table for {machine!r}; known: {sorted(_TABLES)}")
    arch, numbers = _TABLES[machine]
    # Instructions as (code, jump-if-true label or offset, jump-if-false label or offset, k); labels resolved below.
    code: list[tuple[int, str | int, str | int, int]] = [
        (_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        (_JEQ_K, 1, 0, arch),
        (_RET_K, 0, 0, _RET_KILL_PROCESS),  # another ABI
        (_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
    ]
    if machine == "x86_64":
        code.append((_JGE_K, "kill", 0, _X32_SYSCALL_BIT))
    code += [(_JEQ_K, "deny", 0, numbers[name]) for name in _DENIED]
    code += [
        (_JEQ_K, "clone", 0, numbers["clone"]),
        (_JEQ_K, "socket", 0, numbers["socket"]),
        (_JEQ_K, "enosys", 0, numbers["clone3"]),
        (_RET_K, 0, 0, _RET_ALLOW),
    ]
    labels = {"clone": len(code)}
    code += [
        (_LD_W_ABS, 0, 0, 16),  # low 32 bits of seccomp_data.args[0]: clone's flags
        (_JSET_K, "deny", 0, _CLONE_NAMESPACES),
        (_RET_K, 0, 0, _RET_ALLOW),
    ]
    labels["socket"] = len(code)
    code.append((_LD_W_ABS, 0, 0, 16))  # socket's address family
    code += [(_JEQ_K, "deny", 0, family) for family in _DENIED_SOCKET_FAMILIES]
    code.append((_RET_K, 0, 0, _RET_ALLOW))
    labels["enosys"] = len(code)
    code.append((_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS))
    labels["deny"] = len(code)
    code.append((_RET_K, 0, 0, _RET_ERRNO | errno.EPERM))
    labels["kill"] = len(code)
    code.append((_RET_K, 0, 0, _RET_KILL_PROCESS))
    out = bytearray()
    for index, (op, jt, jf, k) in enumerate(code):
        jumps = [labels[j] - index - 1 if isinstance(j, str) else j for j in (jt, jf)]
        if not all(0 <= j <= 255 for j in jumps):
            raise AssertionError(f"seccomp jump out of range at instruction {index}: {jumps}")
        out += struct.pack("=HBBI", op, jumps[0], jumps[1], k)
    return bytes(out)


def program_fd() -> int:
    """A file descriptor (memfd, at offset 0) holding the program, for ``bwrap --seccomp FD``."""
    fd = os.memfd_create("podium-seccomp")  # close-on-exec: only the spawn that passes it on (pass_fds) keeps it
    os.write(fd, program())
    os.lseek(fd, 0, os.SEEK_SET)
    return fd


_DOCKER_ARCHES = {"x86_64": "SCMP_ARCH_X86_64", "aarch64": "SCMP_ARCH_AARCH64"}


@functools.cache
def docker_profile(machine: str | None = None) -> str:
    """The same policy as :func:`program`, as a Docker seccomp profile (JSON) for ``security_opt``.

    Only the native ABI is listed, so the runtime kills a process that calls through another ABI, as the
    BPF program does.
    """
    machine = machine or platform.machine()
    if machine not in _TABLES:
        raise ValueError(f"no seccomp table for {machine!r}; known: {sorted(_TABLES)}")
    eperm = {"action": "SCMP_ACT_ERRNO", "errnoRet": errno.EPERM}
    rules: list[dict[str, object]] = [{"names": list(_DENIED), **eperm}]
    bits = [1 << i for i in range(32) if _CLONE_NAMESPACES >> i & 1]  # one rule per flag: any of them refuses
    rules += [
        {"names": ["clone"], **eperm, "args": [{"index": 0, "value": bit, "valueTwo": bit, "op": "SCMP_CMP_MASKED_EQ"}]}
        for bit in bits
    ]
    rules += [
        {"names": ["socket"], **eperm, "args": [{"index": 0, "value": family, "op": "SCMP_CMP_EQ"}]}
        for family in _DENIED_SOCKET_FAMILIES
    ]
    rules.append({"names": ["clone3"], "action": "SCMP_ACT_ERRNO", "errnoRet": errno.ENOSYS})
    profile = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": [_DOCKER_ARCHES[machine]], "syscalls": rules}
    return json.dumps(profile, separators=(",", ":"))

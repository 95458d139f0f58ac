"""What a network namespace holds: its interfaces (up, loopback, addresses) and its main routing table.

podium runs this with its own interpreter, ``python3 -I -S network_probe.py [PID]``, as a run starts and before
the agent's command does. With a PID it first enters that process's network namespace (and, when not root, the
user namespace that owns it, which its creator may enter), so it sees the network the agent will see; without one
it describes its own (the host's, for the ``local`` sandbox). It reads the kernel's tables through netlink, as
``ip`` does, with the standard library only, and prints one JSON object::

    {"interfaces": [{"name": "lo", "up": true, "loopback": true, "addresses": ["127.0.0.1/8", "::1/128"]}],
     "routes": ["::1/128 dev lo"]}

or ``{"error": "..."}`` when it cannot. Routes are those of the main table, as ``ip route`` and ``ip -6 route``
list them (a namespace's local table only holds its own addresses). A namespace with more than ``LIMIT``
interfaces, addresses or routes is cut there, with ``"truncated": true``.
"""

from __future__ import annotations

import ctypes
import json
import os
import socket
import struct
import sys

CLONE_NEWNET, CLONE_NEWUSER = 0x40000000, 0x10000000
RTM_GETLINK, RTM_GETADDR, RTM_GETROUTE = 18, 22, 26
NLM_F_REQUEST, NLM_F_DUMP = 0x1, 0x300
NLMSG_ERROR, NLMSG_DONE = 2, 3
IFF_UP, IFF_LOOPBACK = 0x1, 0x8
IFLA_IFNAME = 3
IFA_ADDRESS, IFA_LOCAL = 1, 2
RTA_DST, RTA_OIF, RTA_GATEWAY, RTA_TABLE = 1, 4, 5, 15
RT_TABLE_MAIN, RTN_UNICAST = 254, 1
ROUTE_TYPES = {
    2: "local",
    3: "broadcast",
    4: "anycast",
    5: "multicast",
    6: "blackhole",
    7: "unreachable",
    8: "prohibit",
}
LIMIT = 512
HEADER = "=IHHII"  # nlmsghdr: length, type, flags, sequence, port


def enter(pid: int) -> None:
    """Join the network namespace of process ``pid`` (through its user namespace when not root)."""
    libc = ctypes.CDLL(None, use_errno=True)
    net = os.open(f"/proc/{pid}/ns/net", os.O_RDONLY | os.O_CLOEXEC)
    if os.geteuid() != 0 and os.stat(f"/proc/{pid}/ns/user").st_ino != os.stat("/proc/self/ns/user").st_ino:
        user = os.open(f"/proc/{pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
        _setns(libc, user, CLONE_NEWUSER)
    _setns(libc, net, CLONE_NEWNET)


def _setns(libc: ctypes.CDLL, fd: int, kind: int) -> None:
    if libc.setns(fd, kind) != 0:
        code = ctypes.get_errno()
        raise OSError(code, f"setns: {os.strerror(code)}")
    os.close(fd)


def dump(sock: socket.socket, kind: int, body: bytes) -> list[bytes]:
    """The payloads of every answer to a netlink dump request of ``kind``."""
    sock.send(struct.pack(HEADER, 16 + len(body), kind, NLM_F_REQUEST | NLM_F_DUMP, kind, 0) + body)
    found: list[bytes] = []
    while True:
        data = sock.recv(1 << 16)
        if not data:
            return found
        offset = 0
        while offset + 16 <= len(data):
            length, mtype, _, _, _ = struct.unpack_from(HEADER, data, offset)
            if length < 16 or mtype == NLMSG_DONE:
                return found
            if mtype == NLMSG_ERROR:
                code = -struct.unpack_from("=i", data, offset + 16)[0]
                raise OSError(code, f"netlink: {os.strerror(code)}")
            found.append(data[offset + 16 : offset + length])
            offset += (length + 3) & ~3


def attributes(data: bytes, offset: int) -> dict[int, bytes]:
    """The route attributes (type -> value) that follow a message's fixed part."""
    found: dict[int, bytes] = {}
    while offset + 4 <= len(data):
        length, kind = struct.unpack_from("=HH", data, offset)
        if length < 4:
            break
        found.setdefault(kind, data[offset + 4 : offset + length])
        offset += (length + 3) & ~3
    return found


def address(family: int, raw: bytes) -> str:
    try:
        return socket.inet_ntop(family, raw)
    except (OSError, ValueError):
        return raw.hex()


def observe() -> dict[str, object]:
    """The interfaces and main-table routes of this process's network namespace."""
    truncated = False
    with socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, socket.NETLINK_ROUTE) as sock:
        links = dump(sock, RTM_GETLINK, struct.pack("=BxHiII", socket.AF_UNSPEC, 0, 0, 0, 0))
        addresses = dump(sock, RTM_GETADDR, struct.pack("=BBBBI", socket.AF_UNSPEC, 0, 0, 0, 0))
        routes = dump(sock, RTM_GETROUTE, struct.pack("=BBBBBBBBI", socket.AF_UNSPEC, 0, 0, 0, 0, 0, 0, 0, 0))
    interfaces: dict[int, dict[str, object]] = {}
    for message in links:
        _, _, index, flags, _ = struct.unpack_from("=BxHiII", message, 0)
        name = attributes(message, 16).get(IFLA_IFNAME, b"?").rstrip(b"\0").decode("utf-8", "replace")
        interfaces[index] = {"name": name, "up": bool(flags & IFF_UP), "loopback": bool(flags & IFF_LOOPBACK),
                             "addresses": []}  # fmt: skip
    for message in addresses:
        family, prefix, _, _, index = struct.unpack_from("=BBBBI", message, 0)
        found = attributes(message, 8)
        raw = found.get(IFA_LOCAL) or found.get(IFA_ADDRESS)
        listed = interfaces.get(index, {}).get("addresses")
        if raw is not None and isinstance(listed, list):
            listed.append(f"{address(family, raw)}/{prefix}")
    names = {index: str(i["name"]) for index, i in interfaces.items()}
    lines = []
    for message in routes:
        family, length, _, _, table, _, _, kind, _ = struct.unpack_from("=BBBBBBBBI", message, 0)
        found = attributes(message, 12)
        if RTA_TABLE in found:
            table = struct.unpack_from("=I", found[RTA_TABLE])[0]
        if table != RT_TABLE_MAIN:
            continue
        line = f"{address(family, found[RTA_DST])}/{length}" if RTA_DST in found else "default"
        if kind != RTN_UNICAST:
            line = f"{ROUTE_TYPES.get(kind, str(kind))} {line}"
        if RTA_GATEWAY in found:
            line += f" via {address(family, found[RTA_GATEWAY])}"
        if RTA_OIF in found:
            line += f" dev {names.get(struct.unpack_from('=i', found[RTA_OIF])[0], '?')}"
        lines.append(line)
    listed = [interfaces[i] for i in sorted(interfaces)]
    for interface in listed:
        addresses_of = interface["addresses"]
        if isinstance(addresses_of, list) and len(addresses_of) > LIMIT:
            interface["addresses"], truncated = addresses_of[:LIMIT], True
    result: dict[str, object] = {"interfaces": listed[:LIMIT], "routes": lines[:LIMIT]}
    if truncated or len(listed) > LIMIT or len(lines) > LIMIT:
        result["truncated"] = True
    return result


def main(argv: list[str]) -> int:
    try:
        if len(argv) > 1:
            enter(int(argv[1]))
        print(json.dumps(observe()))
    except (OSError, ValueError, struct.error) as error:
        print(json.dumps({"error": f"{type(error).__name__}: {error}"}))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

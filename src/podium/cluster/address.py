"""What ``--cluster`` and ``--ray-resource`` ask for: the Ray cluster to use, and what each run asks of it."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from podium.errors import UsageError

__all__ = ["ClusterSpec", "parse_cluster", "parse_resource"]

_RESOURCE = re.compile(r"([A-Za-z_][A-Za-z0-9_.:-]*)(?:=([0-9]*\.?[0-9]+))?")


@dataclass(frozen=True)
class ClusterSpec:
    """A Ray cluster and what each run asks of it beyond the run's CPUs, memory and GPUs."""

    address: str  # what ray.init is given: "auto", "HOST:PORT" (a head's GCS) or "ray://HOST:PORT" (Ray Client)
    resources: dict[str, float] = field(default_factory=dict)  # custom resources each run asks for
    node_data_dir: Path | None = None  # the prepared data as the nodes see it (a shared path); None: shipped
    max_in_flight: int = 0  # runs submitted to Ray at once (0: twice the cluster's CPUs, at least 8)


def parse_cluster(value: str, environ: dict[str, str] | None = None) -> str:
    """The Ray address of ``--cluster`` ``ray``, ``ray://HOST:PORT`` or ``ray:HOST:PORT`` (a head's GCS port).

    Plain ``ray`` takes ``RAY_ADDRESS`` when it is set, else ``auto`` (the cluster this machine belongs to).
    """
    env = os.environ if environ is None else environ
    text = value.strip()
    if text == "ray":
        return env.get("RAY_ADDRESS") or "auto"
    if text.startswith("ray://") and _host_port(text[len("ray://") :]):
        return text
    if text.startswith("ray:") and _host_port(text[len("ray:") :]):
        return text[len("ray:") :]
    raise UsageError(
        f"--cluster {value!r} is not a Ray cluster. Fix: pass --cluster ray (RAY_ADDRESS or this machine's "
        "cluster), --cluster ray://HOST:10001 (Ray Client) or --cluster ray:HOST:6379 (the head's GCS)"
    )


def _host_port(text: str) -> bool:
    host, _, port = text.rpartition(":")
    return bool(host) and "/" not in host and port.isdigit() and 0 < int(port) < 65536


def parse_resource(value: str) -> tuple[str, float]:
    """``--ray-resource NAME[=N]``: a custom resource each run asks for (N defaults to 1)."""
    match = _RESOURCE.fullmatch(value.strip())
    if match is None or (match.group(2) is not None and not 0 < float(match.group(2)) < float("inf")):
        raise UsageError(
            f"--ray-resource {value!r} is not NAME or NAME=N (N > 0). Fix: e.g. --ray-resource h100=1, naming a "
            "resource the nodes declare (ray start --resources '{\"h100\": 8}')"
        )
    name = match.group(1)
    if name in ("CPU", "GPU", "memory", "object_store_memory"):
        raise UsageError(f"--ray-resource {name} is one of Ray's own. Fix: use --cpus, --gpus or --memory")
    return name, float(match.group(2) or 1)

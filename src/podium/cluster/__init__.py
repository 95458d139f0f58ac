"""`podium run --cluster ray`: a batch's runs on a Ray cluster, with the same records, resume and report.

- :mod:`~podium.cluster.address`: what ``--cluster`` and ``--ray-resource`` ask for (:class:`ClusterSpec`);
- :mod:`~podium.cluster.driver`: the batch as Ray tasks, each run graded and landed on the driver;
- :mod:`~podium.cluster.node`: one run on a node, from its data to its folder's tar in the node's outbox;
- :mod:`~podium.cluster.session`: connecting to a Ray cluster, a dead address refused within seconds;
- :mod:`~podium.cluster.packing`: a folder packed as a tar on disk, what cannot travel withheld;
- :mod:`~podium.cluster.tarball`: a tar unpacked through :mod:`podium.untrusted`'s archive reader;
- :mod:`~podium.cluster.transfer`: tars in chunks through Ray, the public data's checksums and cache.

This package sits above :mod:`podium.run` and the store; nothing below imports it. Ray is optional
(``pip install 'podium[cluster]'``) and imported only when a command uses a cluster.
"""

from __future__ import annotations

from podium.cluster.address import ClusterSpec, parse_cluster, parse_resource
from podium.cluster.driver import run_cluster_batch
from podium.cluster.node import Shipment, node_cache, run_on_node
from podium.cluster.packing import Packed, pack
from podium.cluster.session import connect
from podium.cluster.tarball import UnpackRefused, unpack
from podium.cluster.transfer import Parcel, public_digest

__all__ = [
    "ClusterSpec",
    "Packed",
    "Parcel",
    "Shipment",
    "UnpackRefused",
    "connect",
    "node_cache",
    "pack",
    "parse_cluster",
    "parse_resource",
    "public_digest",
    "run_cluster_batch",
    "run_on_node",
    "unpack",
]

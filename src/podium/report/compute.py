"""The compute each label's runs had, stated in every table's header, and the refusal to compare labels that
had different compute without ``--mixed-hardware``.

A run's profile is :func:`podium.records.compute_profile` of its record's ``compute`` (what it was given:
CPUs, memory, GPUs); a record without it (an older podium's, a grading report) is ``unknown``, a profile
of its own. Runs that failed because of the harness carry none and are left out. A label's profile is its
runs' one profile, or ``mixed: A; B`` where they differ. The report's JSON gains::

    "compute": {"mixed_hardware": false, "profiles": {LABEL: PROFILE}}
    "labels": {LABEL: {"compute": {"profile", "profiles": {PROFILE: runs}, "runs_with_compute",
                                   "used": {"cpu_hours", "peak_memory_bytes", "gpu_hours", "wall_hours"}}}}

``used`` sums what the runs used (``compute.used`` of their records; ``peak_memory_bytes`` is the largest
peak; None where no run says).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from podium.errors import UsageError
from podium.records import compute_profile

__all__ = ["UNKNOWN", "MixedHardwareError", "check_profiles", "label_compute", "profile_lines", "run_compute"]

#: The profile of runs whose records do not say what compute they had.
UNKNOWN = "unknown"
_USED = ("cpu_seconds", "peak_memory_bytes", "gpu_hours", "wall_seconds")


class MixedHardwareError(UsageError):
    """Labels (or one label's runs) had different compute, and ``--mixed-hardware`` was not given."""


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def run_compute(record: Mapping[str, Any]) -> dict[str, Any]:
    """A run row's compute keys from its record: ``compute_profile`` (None without one) and ``compute_used``."""
    compute = record.get("compute")
    if not isinstance(compute, dict):
        return {"compute_profile": None, "compute_used": None}
    used = compute.get("used")
    used = used if isinstance(used, dict) else {}
    return {"compute_profile": compute_profile(compute), "compute_used": {k: _number(used.get(k)) for k in _USED}}


def _total(values: Sequence[float | None], scale: float = 1.0) -> float | None:
    known = [v for v in values if v is not None]
    return sum(known) / scale if known else None


def label_compute(runs: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The compute block of one label (see the module docstring)."""
    counted = [r for r in runs if not r.get("padded") and not r.get("harness_failure")]
    profiles = Counter(r.get("compute_profile") or UNKNOWN for r in counted)
    names = sorted(profiles)
    used = [r.get("compute_used") or {} for r in counted]
    peaks = [u["peak_memory_bytes"] for u in used if u.get("peak_memory_bytes") is not None]
    return {
        "profile": names[0] if len(names) == 1 else ("mixed: " + "; ".join(names) if names else UNKNOWN),
        "profiles": dict(sorted(profiles.items())),
        "runs_with_compute": sum(1 for r in counted if r.get("compute_profile")),
        "used": {
            "cpu_hours": _total([u.get("cpu_seconds") for u in used], 3600),
            "peak_memory_bytes": int(max(peaks)) if peaks else None,
            "gpu_hours": _total([u.get("gpu_hours") for u in used]),
            "wall_hours": _total([u.get("wall_seconds") for u in used], 3600),
        },
    }


def check_profiles(profiles: Mapping[str, str], *, mixed_hardware: bool) -> None:
    """Refuse (one line naming the profiles and the flag) when the labels' profiles differ or a label's runs
    had different compute, unless ``mixed_hardware``."""
    distinct = sorted(set(profiles.values()))
    if mixed_hardware or (len(distinct) < 2 and not any(p.startswith("mixed: ") for p in distinct)):
        return
    parts = []
    for profile in distinct[:4]:
        labels = [label for label, p in profiles.items() if p == profile]
        parts.append(f"{profile} ({labels[0]}{f' and {len(labels) - 1} more' if len(labels) > 1 else ''})")
    more = f" and {len(distinct) - 4} more" if len(distinct) > 4 else ""
    unknown = f" ({UNKNOWN}: a grading report, or records from before podium recorded compute)" if any(
        UNKNOWN in p for p in distinct
    ) else ""  # fmt: skip
    raise MixedHardwareError(
        f"the runs compared had different compute: {'; '.join(parts)}{more}{unknown}; `podium report "
        "--mixed-hardware` puts them in one comparison anyway, each table stating every label's compute"
    )


def profile_lines(report: Mapping[str, Any], labels: Sequence[str]) -> list[str]:
    """The compute stated in a table's header: one line when ``labels`` share a profile, else one per label."""
    profiles = {label: report["labels"][label]["compute"]["profile"] for label in labels}
    if not profiles:
        return []
    if len(set(profiles.values())) == 1:
        return [f"Compute: {next(iter(profiles.values()))} (every label)"]
    return ["Compute differs (--mixed-hardware):", *(f"  {label}: {p}" for label, p in profiles.items())]

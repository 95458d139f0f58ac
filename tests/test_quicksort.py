"""podium.grading.quicksort against numpy's own portable quicksort.

numpy sorts with ``argsort(kind="quicksort")`` by one of several algorithms, chosen by the CPU
(x86-simd-sort on AVX-512, and on AVX2 in numpy 2) unless ``NPY_DISABLE_CPU_FEATURES`` turns the
dispatched code off; then every numpy from 1.26 to 2.4 runs the same portable introsort
(``aquicksort_`` in ``npysort/quicksort.cpp``, unchanged between them). The port must give that
order on every array: a subprocess runs the installed numpy with its dispatched features disabled
and sorts arrays full of ties, including ones built to exhaust the depth budget so that numpy
heapsorts a part (McIlroy's adversary, run on a plain transcription of the algorithm below).
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from podium.grading.quicksort import quicksort_argsort

# ---- the algorithm, one comparison at a time (to build adversarial inputs, and as a second reference)


class _Introsort:
    """numpy's introsort argsort, written out sequentially with a pluggable ``less(i, j)`` on indices."""

    def __init__(self, n: int, less: Callable[[int, int], bool]) -> None:
        self.order, self.less, self.heapsorts = list(range(n)), less, 0

    def run(self) -> list[int]:
        n = len(self.order)
        if n < 2:
            return self.order
        pending = [(0, n - 1, 2 * (n.bit_length() - 1))]
        while pending:
            low, high, budget = pending.pop()
            if budget < 0:
                self._heapsort(low, high)
                continue
            while high - low > 15:
                pivot = self._partition(low, high)
                budget -= 1
                if pivot - low < high - pivot:
                    pending.append((pivot + 1, high, budget))
                    high = pivot - 1
                else:
                    pending.append((low, pivot - 1, budget))
                    low = pivot + 1
            self._insertion_sort(low, high)
        return self.order

    def _partition(self, low: int, high: int) -> int:
        o, less = self.order, self.less
        mid = low + (high - low) // 2
        for a, b in ((mid, low), (high, mid), (mid, low)):
            if less(o[a], o[b]):
                o[a], o[b] = o[b], o[a]
        pivot = o[mid]
        o[mid], o[high - 1] = o[high - 1], o[mid]
        i, j = low, high - 1
        while True:
            i += 1
            while less(o[i], pivot):
                i += 1
            j -= 1
            while less(pivot, o[j]):
                j -= 1
            if i >= j:
                break
            o[i], o[j] = o[j], o[i]
        o[i], o[high - 1] = o[high - 1], o[i]
        return i

    def _insertion_sort(self, low: int, high: int) -> None:
        o = self.order
        for i in range(low + 1, high + 1):
            item, j = o[i], i
            while j > low and self.less(item, o[j - 1]):
                o[j] = o[j - 1]
                j -= 1
            o[j] = item

    def _heapsort(self, low: int, high: int) -> None:
        self.heapsorts += 1
        heap, n = [0, *self.order[low : high + 1]], high - low + 1

        def sift(top: int, item: int, end: int) -> None:
            while 2 * top <= end:
                child = 2 * top
                if child < end and self.less(heap[child], heap[child + 1]):
                    child += 1
                if not self.less(item, heap[child]):
                    break
                heap[top], top = heap[child], child
            heap[top] = item

        for top in range(n // 2, 0, -1):
            sift(top, heap[top], n)
        for end in range(n, 1, -1):
            item, heap[end] = heap[end], heap[1]
            sift(1, item, end - 1)
        self.order[low : high + 1] = heap[1:]


def _reference(values: np.ndarray) -> tuple[np.ndarray, int]:
    keys = values.tolist()
    sort = _Introsort(len(keys), lambda i, j: keys[i] < keys[j])
    return np.array(sort.run(), dtype=np.int64), sort.heapsorts


def _adversarial(n: int) -> np.ndarray:
    """McIlroy's "killer adversary": keys decided only when the sort compares them, each compared
    pair of undecided keys fixing one (the likely pivot) below all undecided ones, so every
    partition splits off little and the depth budget runs out. Keys still undecided once the
    heapsort starts stay equal: many ties, in the part that is heapsorted."""
    undecided = n
    keys = [undecided] * n
    state = {"next": 0, "candidate": -1, "heap": False}

    def less(i: int, j: int) -> bool:
        if keys[i] == keys[j] == undecided and not state["heap"]:
            fixed = i if i == state["candidate"] else j
            keys[fixed] = state["next"]
            state["next"] += 1
        if keys[i] == undecided:
            state["candidate"] = i
        elif keys[j] == undecided:
            state["candidate"] = j
        return keys[i] < keys[j]

    sort = _Introsort(n, less)
    heapsort = sort._heapsort

    def heapsort_marked(low: int, high: int) -> None:
        state["heap"] = True
        heapsort(low, high)

    sort._heapsort = heapsort_marked  # type: ignore[method-assign]
    sort.run()
    return np.array(keys, dtype=np.int64)


# ---- the tests ------------------------------------------------------------------------------------


@functools.cache
def _arrays() -> dict[str, np.ndarray]:
    rng = np.random.default_rng(20250101)
    arrays = {f"ties {i}": rng.integers(0, int(rng.integers(1, 40)), int(rng.integers(0, 600))) for i in range(150)}
    arrays.update({f"small {n}": rng.integers(0, 3, n) for n in range(0, 40)})
    arrays["large"] = rng.integers(0, 2_000, 60_000)
    arrays["distinct"] = rng.permutation(5_000)
    arrays["all equal"] = np.zeros(1_000, np.int64)
    arrays["sorted"] = np.sort(rng.integers(0, 50, 1_000))
    arrays["reversed"] = arrays["sorted"][::-1].copy()
    floats = rng.integers(0, 9, 2_000).astype(np.float64)
    floats[::7] = np.nan
    arrays["floats with NaN"] = floats
    for n in (300, 3_000):
        arrays[f"adversarial {n}"] = _adversarial(n)
    return arrays


def test_the_adversary_reaches_the_heapsort_with_ties() -> None:
    keys = _adversarial(1_000)
    _, heapsorts = _reference(keys)
    assert heapsorts >= 1 and np.unique(keys).size < keys.size // 2


def test_the_port_equals_a_sequential_transcription() -> None:
    """(Large arrays, slow here, and NaN, which Python's < does not order as numpy does, are left to numpy.)"""
    checked = {n: a for n, a in _arrays().items() if a.size <= 5_000 and a.dtype.kind != "f"}
    differ = [n for n, a in checked.items() if not np.array_equal(quicksort_argsort(a), _reference(a)[0])]
    assert differ == []


_NUMPY_PORTABLE = """
import json, sys
import numpy as np
try:
    from numpy._core import _multiarray_umath as core
except ImportError:
    from numpy.core import _multiarray_umath as core
left = [f for f in core.__cpu_dispatch__ if core.__cpu_features__.get(f)]
data = np.load(sys.argv[1], allow_pickle=True)
np.savez(sys.argv[2], **{k: np.argsort(data[k], kind="quicksort") for k in data.files})
print(json.dumps({"version": np.__version__, "dispatched_left": left}))
"""


def _dispatched_features() -> str:
    try:
        from numpy._core import _multiarray_umath as core
    except ImportError:  # numpy 1
        from numpy.core import _multiarray_umath as core  # type: ignore[no-redef]
    return " ".join(f for f in core.__cpu_dispatch__ if core.__cpu_features__.get(f))


def test_the_port_equals_numpys_portable_argsort(tmp_path: Path) -> None:
    arrays = _arrays()
    rng = np.random.default_rng(7)
    arrays["text"] = np.array([f"id{int(v)}" for v in rng.integers(0, 30, 800)], dtype=object)  # numpy's generic sort
    names = sorted(arrays)
    np.savez(tmp_path / "in.npz", **{f"a{i}": arrays[n] for i, n in enumerate(names)})
    env = {**os.environ, "NPY_DISABLE_CPU_FEATURES": _dispatched_features(), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        [sys.executable, "-c", _NUMPY_PORTABLE, str(tmp_path / "in.npz"), str(tmp_path / "out.npz")],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    info = json.loads(done.stdout.strip().splitlines()[-1])
    assert info["dispatched_left"] == [], f"numpy {info['version']} still dispatches {info['dispatched_left']}"
    out = np.load(tmp_path / "out.npz")
    differ = [n for i, n in enumerate(names) if not np.array_equal(quicksort_argsort(arrays[n]), out[f"a{i}"])]
    assert differ == [], f"differs from numpy {info['version']}'s portable argsort on {differ}"


def test_only_one_dimensional_keys_are_sorted() -> None:
    with pytest.raises(ValueError, match="1-D"):
        quicksort_argsort(np.zeros((2, 2)))

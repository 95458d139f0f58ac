"""numpy's portable ``argsort(kind="quicksort")``, so that version 1 orders tied keys the same on every machine.

pandas' ``sort_values`` and ``sort_index`` sort by default with numpy's quicksort, which is not
stable: rows that share a key come out in whatever order that sort leaves them, and published
graders that pair rows by position after such a sort score whichever pairing it makes. numpy 1.26.4
(MLE-bench's pin) runs one of two sorts there: on a CPU with AVX-512 (the AVX512_SKX group) the
vectorised sort of x86-simd-sort, elsewhere its portable introsort, ``aquicksort_`` in
``npysort/quicksort.cpp``; newer builds add an AVX2 sort and order ties differently again. The
two break ties differently, so the published score of such a file depends on the CPU it ran on.
The portable introsort is the one defined without reference to a CPU: :func:`quicksort_argsort`
gives its order, whatever numpy is installed and whatever CPU runs it.

The introsort, as numpy writes it (and numpy 2 keeps it unchanged):

- a part of at most 16 elements is insertion-sorted (stable within the part);
- a larger part is partitioned around the median of its first, middle and last elements: those
  three are ordered in place, the median is parked one before the last, and a left scan (for an
  element not below the pivot) and a right scan (for one not above it) swap pairs until they
  cross; the pivot goes where the left scan stopped;
- the smaller side is partitioned further at once, the larger is pushed on a stack, and only a
  part popped from the stack checks the depth budget (twice the index of the highest set bit of
  the length, one less per partition): a popped part over budget is heapsorted instead.

Here each round partitions every pending part at once with array operations (the parts are
disjoint, so the order in which the stack would visit them does not matter; each keeps its own
budget and whether it is checked). In one partition, every element that stops the left scan and
every element that stops the right scan are found in one pass; the k-th of each are swapped as long
as the k-th left stopper lies before the k-th right stopper, which is exactly when the scans have
not crossed. Insertion sorts are then one stable sort of all the small parts together; heapsorts,
which only a part that keeps partitioning badly reaches, run in plain Python.

Keys are first replaced by their rank among the distinct keys (``np.unique``), which keeps every
comparison's outcome, so numbers and text sort alike; keys without ties take a stable sort, which
gives the same order faster (only ties can be ordered differently).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

__all__ = ["quicksort_argsort"]

#: numpy's SMALL_QUICKSORT: a part whose last index exceeds its first by at most this is insertion-sorted.
_SMALL = 15

IntArray = npt.NDArray[np.int64]


def quicksort_argsort(values: npt.ArrayLike) -> IntArray:
    """The indices that sort ``values`` (1-D), ties in the order numpy 1.26.4's portable
    ``np.argsort(values, kind="quicksort")`` leaves them (numpy's own ``less``: NaN after every
    number; text compared as Python compares ``str``)."""
    array = np.asarray(values)
    if array.ndim != 1:
        raise ValueError(f"quicksort_argsort sorts 1-D keys, got shape {array.shape}")
    if array.size < 2:
        return np.arange(array.size, dtype=np.int64)
    distinct, ranks = np.unique(array, return_inverse=True)
    ranks = np.asarray(ranks, dtype=np.int64).reshape(-1)
    if distinct.size == array.size:  # no ties: every sort gives this order
        return np.asarray(np.argsort(ranks, kind="stable"), dtype=np.int64)
    return _introsort(ranks)


def _introsort(keys: IntArray) -> IntArray:
    """numpy's ``aquicksort_`` on integer keys: the permutation it leaves in ``tosort``."""
    n = keys.size
    order = np.arange(n, dtype=np.int64)
    lo, hi = np.zeros(1, np.int64), np.full(1, n - 1, np.int64)
    budget = np.full(1, 2 * (n.bit_length() - 1), np.int64)
    checked = np.ones(1, bool)  # popped from the stack (or the first part): its budget is checked
    small: list[tuple[IntArray, IntArray]] = []
    heaps: list[tuple[int, int]] = []
    while lo.size:
        heap = checked & (budget < 0)
        few = ~heap & (hi - lo <= _SMALL)
        heaps.extend(zip(lo[heap].tolist(), hi[heap].tolist(), strict=True))
        small.append((lo[few], hi[few]))
        going = ~(heap | few)
        lo, hi, budget = lo[going], hi[going], budget[going] - 1
        if not lo.size:
            break
        pivot = _partition(order, keys, lo, hi)
        left_smaller = pivot - lo < hi - pivot  # the smaller side goes on unchecked, the larger is pushed
        lo, hi = np.concatenate([lo, pivot + 1]), np.concatenate([pivot - 1, hi])
        budget = np.concatenate([budget, budget])
        checked = np.concatenate([~left_smaller, left_smaller])
    _insertion_sort(order, keys, small)
    if heaps:
        key_list = keys.tolist()
        for first, last in heaps:
            order[first : last + 1] = _heapsort(order[first : last + 1].tolist(), key_list)
    return order


def _runs(first: IntArray, sizes: IntArray) -> tuple[IntArray, IntArray]:
    """The positions ``first[i], ..., first[i] + sizes[i] - 1`` of every part, and each one's part."""
    part = np.repeat(np.arange(first.size, dtype=np.int64), sizes)
    offsets = np.cumsum(sizes) - sizes
    return first[part] + np.arange(part.size, dtype=np.int64) - offsets[part], part


def _partition(order: IntArray, keys: IntArray, lo: IntArray, hi: IntArray) -> IntArray:
    """Partition every part ``order[lo[i] : hi[i] + 1]`` (at least 17 long) in place, as numpy does; the pivots' positions."""
    mid = lo + ((hi - lo) >> 1)
    a, b, c = order[lo], order[mid], order[hi]
    swap = keys[b] < keys[a]
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    swap = keys[c] < keys[b]
    b, c = np.where(swap, c, b), np.where(swap, b, c)
    swap = keys[b] < keys[a]
    a, b = np.where(swap, b, a), np.where(swap, a, b)
    order[lo], order[hi] = a, c
    order[mid] = order[hi - 1]
    order[hi - 1] = b
    pivot = keys[b]

    sizes = hi - lo  # the scans see positions lo .. hi - 1
    position, part = _runs(lo, sizes)
    first = np.cumsum(sizes) - sizes
    key = keys[order[position]]
    stops_left = key >= pivot[part]  # the left scan starts after lo, the right one before hi - 1
    stops_left[first] = False
    stops_right = key <= pivot[part]
    stops_right[first + sizes - 1] = False
    left_rank = _seen(stops_left, first, part) - stops_left  # left stoppers before each position
    right_seen = _seen(stops_right, first, part)
    right_rank = right_seen[first + sizes - 1][part] - right_seen  # right stoppers after each position
    # the k-th left stopper swaps with the k-th right stopper while it lies before it
    swaps = np.bincount(part[stops_left & (right_rank > left_rank)], minlength=lo.size)
    slot = (np.cumsum(swaps) - swaps)[part]
    left_swap = stops_left & (left_rank < swaps[part])
    right_swap = stops_right & (right_rank < swaps[part])
    lefts, rights = np.empty(int(swaps.sum()), np.int64), np.empty(int(swaps.sum()), np.int64)
    lefts[(slot + left_rank)[left_swap]] = position[left_swap]
    rights[(slot + right_rank)[right_swap]] = position[right_swap]
    order[lefts], order[rights] = order[rights], order[lefts]
    # the left scan then stops at the next left stopper, or earlier at the last right stopper swapped
    at = np.empty(lo.size, np.int64)
    next_left = stops_left & (left_rank == swaps[part])
    at[part[next_left]] = position[next_left]
    last_right = right_swap & (right_rank == swaps[part] - 1)
    at[part[last_right]] = np.minimum(at[part[last_right]], position[last_right])
    order[at], order[hi - 1] = order[hi - 1], order[at]
    return at


def _seen(mask: npt.NDArray[np.bool_], first: IntArray, part: IntArray) -> IntArray:
    """How many positions of its own part, up to and including each one, ``mask`` marks."""
    seen = np.cumsum(mask, dtype=np.int64)
    return seen - (seen[first] - mask[first])[part]


def _insertion_sort(order: IntArray, keys: IntArray, parts: list[tuple[IntArray, IntArray]]) -> None:
    """Insertion-sort every small part: a stable sort of each part by key, all parts in one sort."""
    if not parts:
        return
    first = np.concatenate([p[0] for p in parts])
    sizes = np.concatenate([p[1] for p in parts]) - first + 1
    keep = sizes > 1
    position, part = _runs(first[keep], sizes[keep])
    moved = order[position]
    order[position] = moved[np.lexsort((keys[moved], part))]


def _heapsort(items: list[int], keys: list[int]) -> list[int]:
    """numpy's ``aheapsort_`` of ``items`` by ``keys[item]``: heapify from the middle down, then move the top to the end."""
    heap = [0, *items]  # 1-based, as numpy indexes it
    n = len(items)

    def sift(top: int, item: int, end: int) -> None:
        child = 2 * top
        while child <= end:
            if child < end and keys[heap[child]] < keys[heap[child + 1]]:
                child += 1
            if keys[item] < keys[heap[child]]:
                heap[top] = heap[child]
                top, child = child, 2 * child
            else:
                break
        heap[top] = item

    for top in range(n // 2, 0, -1):
        sift(top, heap[top], n)
    while n > 1:
        item = heap[n]
        heap[n] = heap[1]
        n -= 1
        sift(1, item, n)
    return heap[1:]

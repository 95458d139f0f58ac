"""The measures of ``podium check``'s leak scan: how well one feature of the test rows tells their answers.

A *feature* is one value per test row (a public column joined on the id, the row's position in a public file, a
part of the id, the size of the row's file; None where the row has none). Each measure is said with its bound,
and a finding needs both: the measure at least :data:`BOUND`, and a probability of at most :data:`CHANCE` that
labels drawn at random with the answers' own shares would do as well (so a tiny test set cannot be a finding by
luck). The measures, by the kinds of the feature and of the answer:

- a numeric feature and a two-valued answer: the ROC AUC (either direction), chance by the Mann-Whitney normal
  approximation;
- a numeric feature and a numeric answer: the absolute Spearman rank correlation, chance by its normal
  approximation;
- a feature of few values (at most a quarter as many as rows) and a categorical answer: the accuracy of the
  lookup from each value to its most common answer, chance as every value's rows being that pure at random;
- any feature and a categorical answer: the one-sided rule "not the feature's most common value => one answer",
  its precision, chance by the binomial tail (random acts of pizza's giver_username_if_known);
- a feature equal to the answer, chance as the product of the matched answers' shares;
- the answers in an order (the sample submission's): the share of neighbours with the same answer, for a
  categorical answer (a numeric or two-valued one is measured by the position as a numeric feature).
"""

from __future__ import annotations

import itertools
import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

__all__ = [
    "BOUND",
    "CHANCE",
    "MIN_ROWS",
    "Target",
    "canon",
    "chance_of_matches",
    "equal_to_answer",
    "ordered_like_answer",
    "tells_answer",
]

#: A measure at least this good is a finding (with chance below :data:`CHANCE`).
BOUND = 0.99
#: ... when labels at random with the answers' shares would reach it with at most this probability.
CHANCE = 1e-6
#: Fewer rows than this are not measured.
MIN_ROWS = 10
#: A lookup may have at most one value per this many rows (so that it cannot learn each row by heart).
_ROWS_PER_VALUE = 4
#: The answer's most common value may hold at most this share for a lookup or a rule to mean anything.
_MAJORITY = 0.9
_TRUE_FALSE = {"true": "1", "false": "0"}
_INTEGER = re.compile(r"[+-]?\d{1,30}")


def canon(value: str) -> str:
    """A cell as a comparable value: trimmed, lower case, ``True``/``False`` as 1/0, a number in one notation."""
    text = value.strip()
    low = text.lower()
    if low in _TRUE_FALSE:
        return _TRUE_FALSE[low]
    if _INTEGER.fullmatch(text):  # whole numbers exactly (a time in nanoseconds has 19 digits)
        return str(int(text))
    try:
        number = float(text) if "_" not in text else math.nan
    except ValueError:
        return low
    return f"{number:.12g}" if math.isfinite(number) else low


@dataclass(frozen=True)
class Target:
    """One answer column over the test rows: its canonical values and what kind of measure fits it."""

    name: str
    values: tuple[str, ...]
    kind: str  # binary | numeric | categorical | other (text, masks, boxes: only equality is measured)

    @classmethod
    def of(cls, name: str, cells: Sequence[str], text_like: bool) -> Target:
        values = tuple(canon(str(c)) for c in cells)
        distinct = set(values)
        kind = "other"
        if not text_like and len(distinct) == 2:
            kind = "binary"
        elif not text_like and len(distinct) >= 10 and _numbers(values) is not None:
            kind = "numeric"
        elif not text_like and len(distinct) <= max(2, len(values) // 2):
            kind = "categorical"
        return cls(name, values, kind)

    def share(self) -> dict[str, float]:
        counts = Counter(self.values)
        return {value: count / len(self.values) for value, count in counts.items()}


def _numbers(values: Sequence[str]) -> np.ndarray | None:
    """The values as floats when nearly all (95%) are numbers (the rest NaN), else None."""
    out = np.full(len(values), np.nan)
    for i, value in enumerate(values):
        try:
            out[i] = float(value)
        except ValueError:
            continue
    finite = np.isfinite(out)
    return out if len(values) and finite.mean() >= 0.95 else None


def _ranks(x: np.ndarray) -> np.ndarray:
    """Ranks from 1, ties given their mean rank."""
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    sorted_x = x[order]
    starts = np.flatnonzero(np.r_[True, sorted_x[1:] != sorted_x[:-1]])
    ends = np.r_[starts[1:], len(x)]
    for start, end in zip(starts, ends, strict=True):
        ranks[order[start:end]] = (start + end + 1) / 2
    return ranks


def _normal_tail(z: float) -> float:
    return math.erfc(abs(z) / math.sqrt(2))


def _binomial_tail(hits: int, trials: int, p: float) -> float:
    """P(at least ``hits`` of ``trials`` at probability ``p``)."""
    if p >= 1:
        return 1.0
    total = 0.0
    for k in range(hits, trials + 1):
        log = math.lgamma(trials + 1) - math.lgamma(k + 1) - math.lgamma(trials - k + 1)
        total += math.exp(log + k * math.log(p) + (trials - k) * math.log1p(-p)) if p > 0 else float(k == 0)
    return min(1.0, total)


def _said(measure: str, value: float, rows: int, chance: float) -> str | None:
    if value < BOUND or chance > CHANCE:
        return None
    return f"{measure} {value:.3f} (>= {BOUND}) on {rows} rows, chance p {chance:.1e} (<= {CHANCE:.0e})"


def _auc(x: np.ndarray, y: np.ndarray) -> str | None:
    positive = y == y.max()
    n1, n0 = int(positive.sum()), int((~positive).sum())
    if min(n1, n0) == 0 or len(set(x.tolist())) < 3:
        return None
    u = _ranks(x)[positive].sum() - n1 * (n1 + 1) / 2
    auc = u / (n1 * n0)
    z = (u - n1 * n0 / 2) / math.sqrt(n1 * n0 * (n1 + n0 + 1) / 12)
    return _said("AUC", max(auc, 1 - auc), n1 + n0, _normal_tail(z))


def _spearman(x: np.ndarray, y: np.ndarray) -> str | None:
    if len(set(x.tolist())) < MIN_ROWS:
        return None
    rx, ry = _ranks(x), _ranks(y)
    if rx.std() == 0 or ry.std() == 0:
        return None
    rho = float(np.corrcoef(rx, ry)[0, 1])
    return _said("|Spearman|", abs(rho), len(x), _normal_tail(rho * math.sqrt(len(x) - 1)))


def _lookup(feature: Sequence[str], answers: Sequence[str], share: dict[str, float]) -> str | None:
    groups: dict[str, Counter[str]] = {}
    for value, answer in zip(feature, answers, strict=True):
        groups.setdefault(value, Counter())[answer] += 1
    if not 2 <= len(groups) <= len(feature) // _ROWS_PER_VALUE or max(share.values()) > _MAJORITY:
        return None
    accuracy = sum(max(c.values()) for c in groups.values()) / len(feature)
    chance = math.prod(sum(s ** sum(c.values()) for s in share.values()) for c in groups.values())
    said = _said("lookup accuracy", accuracy, len(feature), chance)
    return None if said is None else f"{said}: its {len(groups)} values each name one answer"


def _rule(feature: Sequence[str], answers: Sequence[str], share: dict[str, float]) -> str | None:
    common = Counter(feature).most_common(1)[0][0]
    fired = [a for f, a in zip(feature, answers, strict=True) if f != common]
    if len(fired) < MIN_ROWS:
        return None
    answer, hits = Counter(fired).most_common(1)[0]
    if share[answer] > _MAJORITY:
        return None
    said = _said("precision", hits / len(fired), len(fired), _binomial_tail(hits, len(fired), share[answer]))
    if said is None:
        return None
    return f"where it is not {common!r} the answer is {answer!r}: {said}"


def tells_answer(feature: Sequence[str | None], target: Target) -> str | None:
    """How well ``feature`` (values as :func:`canon` writes them) tells ``target``'s answers, where that reaches
    the bound (None otherwise)."""
    rows = [i for i, value in enumerate(feature) if value is not None]
    if len(rows) < MIN_ROWS or target.kind == "other":
        return None
    values = [str(feature[i]) for i in rows]
    answers = [target.values[i] for i in rows]
    share = {k: v / len(answers) for k, v in Counter(answers).items()}
    if len(share) < 2:
        return None
    x = _numbers(values)
    if x is not None and target.kind in ("binary", "numeric"):
        numbers = _numbers(answers) if target.kind == "numeric" else None
        y = numbers if numbers is not None else np.array([float(a == max(share)) for a in answers])
        keep = np.isfinite(x) & np.isfinite(y)
        said = _auc(x[keep], y[keep]) if target.kind == "binary" else _spearman(x[keep], y[keep])
        if said is not None:
            return said
    if target.kind in ("binary", "categorical"):
        return _lookup(values, answers, share) or _rule(values, answers, share)
    return None


def chance_of_matches(answers: Sequence[str], matched: Sequence[str]) -> float:
    """The probability that random labels with ``answers``' shares give each of ``matched`` (a product)."""
    counts = Counter(answers)
    return math.prod(counts[a] / len(answers) for a in matched)


def equal_to_answer(feature: Sequence[str | None], target: Target) -> str | None:
    """Whether ``feature`` (values as :func:`canon` writes them) is the answer itself, under another name or in
    another notation."""
    pairs = [(f, a) for f, a in zip(feature, target.values, strict=True) if f is not None]
    if len(pairs) < MIN_ROWS or len({a for _, a in pairs}) < 2:
        return None
    matched = [a for f, a in pairs if f == a]
    said = _said("equal share", len(matched) / len(pairs), len(pairs), chance_of_matches(target.values, matched))
    return None if said is None else f"equals the answer on {len(matched)} of {len(pairs)} rows ({said})"


def ordered_like_answer(answers_in_order: Sequence[str], target: Target) -> str | None:
    """Whether rows in this order run in blocks of one answer (a categorical answer sorted before it was written)."""
    n = len(answers_in_order)
    if target.kind != "categorical" or n < MIN_ROWS:
        return None
    same = sum(a == b for a, b in itertools.pairwise(answers_in_order))
    share = target.share()
    expected = sum(s * s for s in share.values())
    if expected > _MAJORITY:
        return None
    said = _said("neighbours alike", same / (n - 1), n, _binomial_tail(same, n - 1, expected))
    return None if said is None else f"{said}, where a random order gives {expected:.2f}"

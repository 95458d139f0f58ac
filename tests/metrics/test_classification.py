"""Tests of podium.metrics.classification: hand cases, references, perfect scores, row order."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from sklearn import metrics as skm
from sklearn.preprocessing import MultiLabelBinarizer

from podium.errors import InvalidSubmissionError
from podium.metrics import METRICS
from podium.metrics import classification as C
from podium.metrics import fscore as F

SETTINGS = settings(max_examples=50, deadline=None)
GRID = [0.0, 0.1, 0.25, 0.4, 0.5, 0.6, 0.75, 0.9, 1.0]  # few values: plenty of ties


def obj(*values: str) -> np.ndarray:
    """A 1-D object array of str, as the grader passes string columns."""
    return np.array(list(values), dtype=object)


def close(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-12)


@pytest.fixture(autouse=True)
def _quiet_sklearn() -> Any:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        yield


# --------------------------------------------------------------------------- strategies


@st.composite
def binary_scores(draw: st.DrawFn, min_size: int = 2, tied: bool | None = None) -> tuple[np.ndarray, np.ndarray]:
    """0/1 truth holding both classes, and scores in [0, 1] (often tied)."""
    n = draw(st.integers(min_size, 40))
    y = np.array(draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), dtype=np.float64)
    y[0], y[1] = 0.0, 1.0
    use_grid = draw(st.booleans()) if tied is None else tied
    values = st.sampled_from(GRID) if use_grid else st.floats(0, 1, allow_nan=False)
    s = np.array(draw(st.lists(values, min_size=n, max_size=n)), dtype=np.float64)
    return y, s


@st.composite
def label_pairs(draw: st.DrawFn, n_labels: int = 5, min_size: int = 1) -> tuple[np.ndarray, np.ndarray]:
    n = draw(st.integers(min_size, 40))
    labels = st.integers(0, n_labels - 1)
    y = np.array(draw(st.lists(labels, min_size=n, max_size=n)), dtype=np.int64)
    p = np.array(draw(st.lists(labels, min_size=n, max_size=n)), dtype=np.int64)
    return y, p


@st.composite
def prob_matrix(draw: st.DrawFn, n: int, k: int, normalised: bool) -> np.ndarray:
    values = st.sampled_from(GRID) | st.floats(0, 1, allow_nan=False)
    m = np.array(draw(st.lists(values, min_size=n * k, max_size=n * k)), dtype=np.float64).reshape(n, k)
    if normalised:
        m = m + 1e-3
        m = m / m.sum(axis=1, keepdims=True)
    return m


def permutation(data: st.DataObject, n: int) -> np.ndarray:
    return np.array(data.draw(st.permutations(range(n))), dtype=np.int64)


# --------------------------------------------------------------------------- module-level checks


def test_import_is_numpy_only() -> None:
    code = (
        "import sys, podium.metrics.classification\n"
        "heavy = {'sklearn', 'scipy', 'pandas'} & {m.split('.')[0] for m in sys.modules}\n"
        "assert not heavy, heavy"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_every_table_entry_exists_and_perfect_scores_match_the_table() -> None:
    y = np.array([0, 1, 1, 0, 1], dtype=np.float64)
    labels = obj("a", "b", "a", "c", "b")
    two_d = np.array([[1, 0], [0, 1], [1, 1], [0, 0], [1, 0]], dtype=np.float64)
    identities = np.array([[1, 0], [1, 0], [0, 1], [0, 1], [1, 1]], dtype=np.float64)
    perfect: dict[str, Callable[[], float]] = {
        "accuracy": lambda: C.accuracy(labels, labels.copy()),
        "error_rate": lambda: C.error_rate(labels, labels.copy()),
        "roc_auc": lambda: C.roc_auc(y, y.copy()),
        "mean_columnwise_roc_auc": lambda: C.mean_columnwise_roc_auc(two_d[:4], two_d[:4].copy()),
        "alaska_weighted_auc": lambda: C.alaska_weighted_auc(y, y.copy()),
        "jigsaw_bias_auc": lambda: C.jigsaw_bias_auc(y, y.copy(), identities=identities),
        "log_loss": lambda: C.log_loss(y, y.copy()),
        "rsna_fracture_log_loss": lambda: C.rsna_fracture_log_loss(
            y,
            y.copy(),
            studies=obj("s1", "s1", "s2", "s2", "s2"),
            label_types=obj("patient_overall", "C1", "patient_overall", "C1", "C7"),
        ),
        "kl_divergence": lambda: C.kl_divergence(
            two_d[:3] + 1, (two_d[:3] + 1) / (two_d[:3] + 1).sum(1, keepdims=True)
        ),
        "quadratic_weighted_kappa": lambda: C.quadratic_weighted_kappa(y, y.copy()),
        "f1": lambda: F.f1(labels, labels.copy()),
        "multilabel_micro_f1": lambda: F.multilabel_micro_f1(obj("a b", "c", ""), obj("b a", "c", "")),
        "mean_sample_fbeta": lambda: F.mean_sample_fbeta(obj("a b", "c", ""), obj("b a", "c", ""), beta=2.0),
        "probabilistic_f1": lambda: F.probabilistic_f1(y, y.copy()),
        "matthews_corrcoef": lambda: C.matthews_corrcoef(y, y.copy()),
        "lwlrap": lambda: F.lwlrap(two_d, two_d.copy()),
        "qa_answer_f1": lambda: F.qa_answer_f1(obj("1:2 YES", ""), obj("YES", "")),
    }
    families = {"classification": C, "fscore": F}
    family = {name for name, metric in METRICS.items() if metric.target.partition(":")[0] in families}
    assert family == set(perfect)
    for name, run in perfect.items():
        metric = METRICS[name]
        assert metric.fn is getattr(families[metric.target.partition(":")[0]], name)
        assert metric.best is not None
        assert math.isclose(run(), metric.best, abs_tol=1e-12), name


# --------------------------------------------------------------------------- accuracy / error rate


def test_accuracy_by_hand() -> None:
    assert close(C.accuracy(np.array([1, 2, 3]), np.array([1, 2, 4])), 2 / 3)
    assert C.accuracy(obj("cat", "dog"), obj("cat", "Dog")) == 0.5
    assert C.accuracy(np.array([True, False]), np.array([True, True])) == 0.5
    assert math.isnan(C.accuracy(obj(), obj()))
    with pytest.raises(ValueError):
        C.accuracy(np.array([1, 2]), np.array([1]))


def test_error_rate_by_hand() -> None:
    truth = obj("5", "3", "", "7")
    pred = obj("5 17 3", "", "  ", "17 7")
    assert C.error_rate(truth, pred, first_token=True) == 0.5  # "5" right, "" == "" right
    assert C.error_rate(truth, pred) == 1.0  # whole strings: every row differs
    assert C.error_rate(np.array([1, 2]), np.array([1, 2])) == 0.0


@SETTINGS
@given(label_pairs(), st.data())
def test_accuracy_and_error_rate_match_sklearn(pair: tuple[np.ndarray, np.ndarray], data: st.DataObject) -> None:
    y, p = pair
    assert close(C.accuracy(y, p), skm.accuracy_score(y, p))
    assert close(C.error_rate(y, p), 1 - skm.accuracy_score(y, p))
    # first_token on single-token strings is the plain comparison; extra tokens are ignored
    ys, ps = y.astype(str).astype(object), p.astype(str).astype(object)
    padded = np.array([f"{s} 9 9" for s in ps], dtype=object)
    assert close(C.error_rate(ys, padded, first_token=True), C.error_rate(ys, ps))
    order = permutation(data, len(y))
    assert C.accuracy(y[order], p[order]) == C.accuracy(y, p)
    assert C.error_rate(ys[order], padded[order], first_token=True) == C.error_rate(ys, padded, first_token=True)


# --------------------------------------------------------------------------- AUC family


def test_roc_auc_by_hand() -> None:
    assert C.roc_auc(np.array([0, 0, 1, 1]), np.array([0.1, 0.4, 0.35, 0.8])) == 0.75
    assert C.roc_auc(np.array([0, 1, 0, 1]), np.full(4, 0.3)) == 0.5  # all tied
    assert C.roc_auc(np.array([0, 1]), np.array([0.9, 0.1])) == 0.0
    assert C.roc_auc(np.array([False, True, True]), np.array([0.2, 0.2, 0.9])) == 0.75
    with pytest.raises(ValueError):
        C.roc_auc(np.array([1, 1, 1]), np.array([0.1, 0.2, 0.3]))
    with pytest.raises(ValueError):
        C.roc_auc(np.array([0, 1, 2]), np.array([0.1, 0.2, 0.3]))


@SETTINGS
@given(binary_scores(), st.data())
def test_roc_auc_matches_sklearn(case: tuple[np.ndarray, np.ndarray], data: st.DataObject) -> None:
    y, s = case
    assert close(C.roc_auc(y, s), skm.roc_auc_score(y, s))
    assert C.roc_auc(y, y) == 1.0
    order = permutation(data, len(y))
    assert close(C.roc_auc(y[order], s[order]), C.roc_auc(y, s))


def test_mean_columnwise_roc_auc_by_hand() -> None:
    y = np.array([[0, 1], [1, 0], [1, 1], [0, 0]], dtype=np.float64)
    s = np.array([[0.1, 0.9], [0.8, 0.2], [0.7, 0.1], [0.2, 0.3]])
    # column 0 perfect (1.0); column 1: positives 0.9, 0.1 vs negatives 0.2, 0.3 -> 2/4
    assert C.mean_columnwise_roc_auc(y, s) == 0.75
    with pytest.raises(ValueError):
        C.mean_columnwise_roc_auc(np.array([[0, 1], [0, 0]]), np.array([[0.1, 0.2], [0.3, 0.4]]))


@SETTINGS
@given(st.data())
def test_mean_columnwise_roc_auc_matches_sklearn(data: st.DataObject) -> None:
    columns = [data.draw(binary_scores(min_size=6)) for _ in range(3)]
    n = min(len(y) for y, _ in columns)
    y = np.stack([c[0][:n] for c in columns], axis=1)
    s = np.stack([c[1][:n] for c in columns], axis=1)
    assume(all(0 < y[:, j].sum() < n for j in range(3)))
    assert close(C.mean_columnwise_roc_auc(y, s), skm.roc_auc_score(y, s, average="macro"))
    order = permutation(data, n)
    assert close(C.mean_columnwise_roc_auc(y[order], s[order]), C.mean_columnwise_roc_auc(y, s))


def alaska_reference(y: np.ndarray, s: np.ndarray) -> float:
    """The published definition, step by step, on sklearn's roc_curve."""
    fpr, tpr, _ = skm.roc_curve(y, s, pos_label=1)
    fpr_l, tpr_l = fpr.tolist(), tpr.tolist()
    for t in (0.0, 0.4, 1.0):
        if t not in tpr_l:
            i = next(i for i, v in enumerate(tpr_l) if v > t)
            new = fpr_l[i - 1] + (fpr_l[i] - fpr_l[i - 1]) * (t - tpr_l[i - 1]) / (tpr_l[i] - tpr_l[i - 1])
            tpr_l.insert(i, t)
            fpr_l.insert(i, new)
    fpr, tpr = np.array(fpr_l), np.array(tpr_l)
    total = 0.0
    for lo, hi, w in ((0.0, 0.4, 2), (0.4, 1.0, 1)):
        mask = (lo <= tpr) & (tpr <= hi)
        x = np.concatenate([fpr[mask], [1.0]])
        yy = np.concatenate([tpr[mask], [hi]]) - lo
        total += skm.auc(x, yy) * w
    return total / 1.4


def test_alaska_weighted_auc_by_hand() -> None:
    y = np.array([0, 1, 0, 1, 1, 0, 1, 0])
    # constant scores: the diagonal ROC; facts give 0.58571 for the all-zero sample submission
    assert round(C.alaska_weighted_auc(y, np.zeros(8)), 5) == 0.58571
    assert C.alaska_weighted_auc(y, y.astype(float)) == 1.0
    assert C.alaska_weighted_auc(y, 1.0 - y) == 0.0
    # scores outside [0, 1] are fine (no range check)
    assert C.alaska_weighted_auc(y, y * 100.0 - 7) == 1.0
    with pytest.raises(ValueError):
        C.alaska_weighted_auc(np.zeros(4), np.arange(4.0))


@SETTINGS
@given(binary_scores(), st.data())
def test_alaska_weighted_auc_matches_published_definition(
    case: tuple[np.ndarray, np.ndarray], data: st.DataObject
) -> None:
    y, s = case
    assert close(C.alaska_weighted_auc(y, s), alaska_reference(y, s))
    order = permutation(data, len(y))
    assert close(C.alaska_weighted_auc(y[order], s[order]), C.alaska_weighted_auc(y, s))


def jigsaw_reference(toxicity: np.ndarray, pred: np.ndarray, identities: np.ndarray, binarize: bool) -> float:
    """Structure of the Kaggle benchmark kernel, with sklearn AUCs (NaN when undefined)."""

    def auc(t: np.ndarray, p: np.ndarray) -> float:
        try:
            return float(skm.roc_auc_score(t, p))
        except ValueError:
            return float("nan")

    toxic = toxicity >= 0.5
    score = np.where(pred >= 0.5, 1.0, 0.0) if binarize else pred
    groups = np.where(np.isnan(identities), 0.0, identities) >= 0.5
    sub, bpsn, bnsp = [], [], []
    for g in groups.T:
        sub.append(auc(toxic[g], score[g]))
        rows = (g & ~toxic) | (~g & toxic)
        bpsn.append(auc(toxic[rows], score[rows]))
        rows = (g & toxic) | (~g & ~toxic)
        bnsp.append(auc(toxic[rows], score[rows]))

    def power_mean(values: list[float]) -> float:
        with np.errstate(divide="ignore"):
            return float((sum(np.power(values, -5.0)) / len(values)) ** (1 / -5.0))

    bias = np.mean([power_mean(sub), power_mean(bpsn), power_mean(bnsp)])
    return 0.25 * auc(toxic, score) + 0.75 * float(bias)


def test_jigsaw_bias_auc_by_hand() -> None:
    tox = np.array([0.0, 0.9, 0.2, 0.6, 0.0, 1.0])
    pred = np.array([0.1, 0.7, 0.6, 0.4, 0.2, 0.9])
    ids = np.array([[1, 0], [1, 0], [1, np.nan], [0, 1], [0, 1], [0.7, 1]], dtype=np.float64)
    assert close(C.jigsaw_bias_auc(tox, pred, identities=ids), jigsaw_reference(tox, pred, ids, True))
    assert close(
        C.jigsaw_bias_auc(tox, pred, identities=ids, binarize_predictions=False),
        jigsaw_reference(tox, pred, ids, False),
    )
    # with one identity column the power means are the AUCs themselves
    single = np.array([[1], [1], [0], [0]], dtype=np.float64)
    tox4 = np.array([0, 1, 0, 1], dtype=np.float64)
    pred4 = np.array([0.2, 0.8, 0.9, 0.1])
    # overall AUC 1/4 (only 0.8 > 0.2 of four pairs); subgroup 1.0;
    # BPSN {neg member 0.2, pos non-member 0.1} = 0.0;
    # BNSP {pos member 0.8, neg non-member 0.9} = 0.0
    got = C.jigsaw_bias_auc(tox4, pred4, identities=single, binarize_predictions=False)
    assert close(got, 0.25 * 0.25 + 0.75 * (1.0 + 0.0 + 0.0) / 3)
    # an undefined AUC (one class among its rows) -> NaN, as in the Kaggle reference:
    # everyone a member leaves BPSN without a toxic row;
    # no toxic member leaves the subgroup with one class
    all_members = np.ones((4, 1))
    assert math.isnan(C.jigsaw_bias_auc(tox4, pred4, identities=all_members))
    no_toxic_member = np.array([[1], [0], [1], [0]], dtype=np.float64)
    assert math.isnan(C.jigsaw_bias_auc(tox4, pred4, identities=no_toxic_member))


@SETTINGS
@given(st.data(), st.booleans())
def test_jigsaw_bias_auc_matches_kaggle_structure(data: st.DataObject, binarize: bool) -> None:
    n = data.draw(st.integers(12, 40))
    tox = np.array(data.draw(st.lists(st.sampled_from(GRID), min_size=n, max_size=n)))
    pred = np.array(data.draw(st.lists(st.floats(0, 1), min_size=n, max_size=n)))
    cells = st.sampled_from([0.0, 0.3, 0.5, 0.8, 1.0, float("nan")])
    ids = np.array(data.draw(st.lists(cells, min_size=3 * n, max_size=3 * n))).reshape(n, 3)
    expected = jigsaw_reference(tox, pred, ids, binarize)
    got = C.jigsaw_bias_auc(tox, pred, identities=ids, binarize_predictions=binarize)
    assert (math.isnan(got) and math.isnan(expected)) or close(got, expected)
    order = permutation(data, n)
    permuted = C.jigsaw_bias_auc(tox[order], pred[order], identities=ids[order], binarize_predictions=binarize)
    assert (math.isnan(got) and math.isnan(permuted)) or close(got, permuted)


# --------------------------------------------------------------------------- log losses


def test_log_loss_by_hand() -> None:
    y = np.array([1.0, 0.0])
    assert close(C.log_loss(y, np.array([0.8, 0.4])), -(math.log(0.8) + math.log(0.6)) / 2)
    eps = np.finfo(np.float64).eps
    assert close(C.log_loss(y, np.array([0.0, 1.0])), -math.log(eps))  # clipped, never inf
    onehot = np.array([[1, 0, 0], [0, 0, 1]], dtype=np.float64)
    probs = np.array([[0.5, 0.5, 0.5], [0.2, 0.2, 0.2]])  # rows not summing to one: no renormalising
    assert close(C.log_loss(onehot, probs), -(math.log(0.5) + math.log(0.2)) / 2)
    with pytest.raises(ValueError):
        C.log_loss(np.array([1.0, 1.0]), np.array([0.3, 0.4]))
    with pytest.raises(ValueError):
        C.log_loss(y, np.array([1.2, 0.3]))


@SETTINGS
@given(binary_scores(), st.data())
def test_binary_log_loss_matches_sklearn(case: tuple[np.ndarray, np.ndarray], data: st.DataObject) -> None:
    y, s = case
    assert close(C.log_loss(y, s), skm.log_loss(y, s))
    order = permutation(data, len(y))
    assert close(C.log_loss(y[order], s[order]), C.log_loss(y, s))


@SETTINGS
@given(st.data(), st.booleans())
def test_multiclass_log_loss_matches_sklearn(data: st.DataObject, normalised: bool) -> None:
    n, k = data.draw(st.integers(3, 20)), data.draw(st.integers(2, 5))
    labels = np.array(data.draw(st.lists(st.integers(0, k - 1), min_size=n, max_size=n)))
    onehot = np.eye(k)[labels]
    assume(len(np.unique(labels)) >= 2)
    probs = data.draw(prob_matrix(n, k, normalised))
    assert close(C.log_loss(onehot, probs), skm.log_loss(onehot, probs))
    assert C.log_loss(onehot, onehot) < 1e-12
    order = permutation(data, n)
    assert close(C.log_loss(onehot[order], probs[order]), C.log_loss(onehot, probs))


RSNA_TYPES = ["patient_overall", "C1", "C2", "C3", "C4", "C5", "C6", "C7"]


def rsna_reference(y: np.ndarray, p: np.ndarray, studies: np.ndarray, types: np.ndarray) -> float:
    per_study: dict[str, list[float]] = {}
    for yi, pi, study, kind in zip(y, p, studies, types, strict=True):
        q = min(max(pi, 1e-15), 1 - 1e-15)
        loss = -(yi * math.log(q) + (1 - yi) * math.log(1 - q))
        w = (7 if kind == "patient_overall" else 1) * (2 if yi == 1 else 1)
        acc = per_study.setdefault(study, [0.0, 0.0])
        acc[0] += w * loss
        acc[1] += w
    return float(np.mean([num / den for num, den in per_study.values()]))


def test_rsna_fracture_log_loss_by_hand() -> None:
    studies = obj(*["a"] * 8, *["b"] * 8)
    types = obj(*RSNA_TYPES, *RSNA_TYPES)
    y = np.zeros(16)
    assert close(
        C.rsna_fracture_log_loss(y, np.full(16, 0.5), studies=studies, label_types=types),
        math.log(2),
    )
    # study a: patient_overall positive (w 14) predicted 0.5, the rest negative, predicted 0
    y[0] = 1.0
    p = np.r_[0.5, np.zeros(7), np.full(8, 0.5)]
    loss_a = 14 * math.log(2) / (14 + 7)
    expected = (loss_a + math.log(2)) / 2
    assert close(C.rsna_fracture_log_loss(y, p, studies=studies, label_types=types), expected)
    with pytest.raises(ValueError):
        C.rsna_fracture_log_loss(y[:1], p[:1], studies=studies[:1], label_types=obj("any"))


@SETTINGS
@given(st.data())
def test_rsna_fracture_log_loss_matches_reference(data: st.DataObject) -> None:
    n_studies = data.draw(st.integers(1, 5))
    studies = obj(*[f"1.2.{i}" for i in range(n_studies) for _ in RSNA_TYPES])
    types = obj(*(RSNA_TYPES * n_studies))
    n = len(studies)
    y = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n, max_size=n)), dtype=np.float64)
    p = np.array(data.draw(st.lists(st.sampled_from(GRID) | st.floats(0, 1), min_size=n, max_size=n)))
    got = C.rsna_fracture_log_loss(y, p, studies=studies, label_types=types)
    assert close(got, rsna_reference(y, p, studies, types))
    assert C.rsna_fracture_log_loss(y, y, studies=studies, label_types=types) < 1e-12
    order = permutation(data, n)
    assert close(
        C.rsna_fracture_log_loss(y[order], p[order], studies=studies[order], label_types=types[order]),
        got,
    )


def test_kl_divergence_by_hand() -> None:
    votes = np.array([[3.0, 0.0, 1.0], [0.0, 2.0, 0.0]])
    pred = np.array([[0.5, 0.25, 0.25], [0.0, 1.0, 0.0]])
    row0 = 0.75 * math.log(0.75 / 0.5) + 0.25 * math.log(0.25 / 0.25)  # p == 0 cell adds 0
    row1 = 1.0 * math.log(1.0 / (1 - 1e-15))
    assert close(C.kl_divergence(votes, pred), (row0 + row1) / 2)
    # a zero prediction where votes exist is clipped at eps, not infinite
    assert close(
        C.kl_divergence(np.array([[1.0, 1.0]]), np.array([[1.0, 0.0]])),
        0.5 * math.log(0.5 / (1 - 1e-15)) + 0.5 * math.log(0.5 / 1e-15),
    )
    with pytest.raises(ValueError):
        C.kl_divergence(np.zeros((1, 3)), np.full((1, 3), 1 / 3))


@SETTINGS
@given(st.data())
def test_kl_divergence_matches_reference(data: st.DataObject) -> None:
    n, k = data.draw(st.integers(1, 15)), 6
    votes = np.array(data.draw(st.lists(st.integers(0, 5), min_size=n * k, max_size=n * k)), dtype=float)
    votes = votes.reshape(n, k)
    votes[:, 0] += 1  # every row has votes
    pred = data.draw(prob_matrix(n, k, normalised=True))
    truth = votes / votes.sum(axis=1, keepdims=True)
    expected = np.mean(
        [
            sum(pt * math.log(pt / min(max(q, 1e-15), 1 - 1e-15)) for pt, q in zip(tr, pr, strict=True) if pt > 0)
            for tr, pr in zip(truth, pred, strict=True)
        ]
    )
    assert close(C.kl_divergence(votes, pred), float(expected))
    assert C.kl_divergence(votes, truth) < 1e-12
    order = permutation(data, n)
    assert close(C.kl_divergence(votes[order], pred[order]), C.kl_divergence(votes, pred))


# --------------------------------------------------------------------------- kappa / MCC


def test_quadratic_weighted_kappa_by_hand() -> None:
    # confusion (pred rows, true cols) over labels {0, 1}: perfect agreement except one
    assert close(C.quadratic_weighted_kappa(np.array([0, 0, 1, 1]), np.array([0, 1, 1, 1])), 0.5)
    # weights use positions in the sorted union, not the values: 0, 2.5, 10 -> 0, 1, 2
    a, b = np.array([0.0, 2.5, 10.0, 10.0]), np.array([0.0, 10.0, 2.5, 10.0])
    assert close(
        C.quadratic_weighted_kappa(a, b),
        C.quadratic_weighted_kappa(np.array([0, 1, 2, 2]), np.array([0, 2, 1, 2])),
    )
    assert math.isnan(C.quadratic_weighted_kappa(np.array([3, 3]), np.array([3, 3])))


@SETTINGS
@given(label_pairs(n_labels=6, min_size=2), st.data())
def test_quadratic_weighted_kappa_matches_sklearn(pair: tuple[np.ndarray, np.ndarray], data: st.DataObject) -> None:
    y, p = pair
    expected = skm.cohen_kappa_score(p, y, weights="quadratic")
    got = C.quadratic_weighted_kappa(y, p)
    assert (math.isnan(got) and math.isnan(expected)) or close(got, expected)
    assume(len(np.unique(y)) > 1)
    assert C.quadratic_weighted_kappa(y, y) == 1.0
    order = permutation(data, len(y))
    assert close(C.quadratic_weighted_kappa(y[order], p[order]), got)


def test_matthews_corrcoef_by_hand() -> None:
    assert C.matthews_corrcoef(np.array([1, 1, 0, 0]), np.array([1, 0, 0, 0])) == pytest.approx(1 / math.sqrt(3))
    assert C.matthews_corrcoef(np.array([1, 0, 1]), np.array([1, 1, 1])) == 0.0  # undefined -> 0 like sklearn
    assert C.matthews_corrcoef(np.array([1, 0]), np.array([0, 1])) == -1.0


@SETTINGS
@given(label_pairs(n_labels=3), st.data())
def test_matthews_corrcoef_matches_sklearn(pair: tuple[np.ndarray, np.ndarray], data: st.DataObject) -> None:
    y, p = pair
    assert close(C.matthews_corrcoef(y, p), skm.matthews_corrcoef(y, p))
    yb, pb = (y > 0).astype(np.int64), (p > 0).astype(np.int64)
    assert close(C.matthews_corrcoef(yb, pb), skm.matthews_corrcoef(yb, pb))
    order = permutation(data, len(y))
    assert close(C.matthews_corrcoef(y[order], p[order]), C.matthews_corrcoef(y, p))


# --------------------------------------------------------------------------- F-scores


def test_f1_by_hand() -> None:
    y, p = (
        obj("cat", "dog", "pig", "cat", "dog", "pig"),
        obj("cat", "pig", "dog", "cat", "cat", "dog"),
    )
    assert close(F.f1(y, p), 0.8 / 3)  # cat 0.8, dog 0, pig 0
    assert close(F.f1(y, p, average="micro"), 1 / 3)
    # a label only predicted counts in the macro mean with F = 0
    assert close(F.f1(np.array([1, 1]), np.array([1, 2])), (2 / 3 + 0) / 2)
    assert F.f1(np.array([0, 1, 1, 0]), np.array([0, 1, 0, 0]), average="binary") == pytest.approx(2 / 3)
    assert F.f1(np.array([0, 0]), np.array([0, 0]), average="binary") == 0.0  # zero_division -> 0
    with pytest.raises(ValueError):
        F.f1(np.array([0, 1, 2]), np.array([0, 1, 2]), average="binary")
    with pytest.raises(ValueError):
        F.f1(np.array([0, 1]), np.array([0, 1]), average="weighted")


@SETTINGS
@given(
    label_pairs(n_labels=6),
    st.sampled_from(["macro", "micro", "binary"]),
    st.sampled_from([0.5, 1.0, 2.0]),
    st.data(),
)
def test_f1_matches_sklearn(
    pair: tuple[np.ndarray, np.ndarray], average: str, beta: float, data: st.DataObject
) -> None:
    y, p = pair
    if average == "binary":
        y, p = (y > 2).astype(np.int64), (p > 2).astype(np.int64)
    expected = skm.fbeta_score(y, p, average=average, beta=beta, zero_division=0)
    assert close(F.f1(y, p, average=average, beta=beta), expected)
    ys, ps = y.astype(str).astype(object), p.astype(str).astype(object)
    if average != "binary":
        assert close(F.f1(ys, ps, average=average, beta=beta), expected)
    order = permutation(data, len(y))
    assert close(F.f1(y[order], p[order], average=average, beta=beta), expected)
    assume(average != "binary" or y.any())
    assert F.f1(y, y, average=average, beta=beta) == 1.0


def test_f1_with_many_classes_matches_sklearn() -> None:
    rng = np.random.default_rng(0)
    y = rng.integers(0, 32_000, 200_000)
    p = np.where(rng.random(200_000) < 0.5, y, rng.integers(0, 32_000, 200_000))
    assert close(F.f1(y, p), skm.f1_score(y, p, average="macro", zero_division=0))


def test_multilabel_micro_f1_by_hand() -> None:
    truth = obj("a b", "c", "")
    pred = obj("a z a", "c b", "q")  # z and q are not in the truth's labels: dropped; "a a" counts once
    # tp = {r0 a, r1 c}; true pairs 3; kept predicted pairs 3 -> 2*2/6
    assert close(F.multilabel_micro_f1(truth, pred), 2 / 3)
    assert F.multilabel_micro_f1(obj("", ""), obj("x", "")) == 0.0
    assert F.multilabel_micro_f1(obj("a"), obj("")) == 0.0


def multilabel_reference(truth: np.ndarray, pred: np.ndarray) -> float:
    classes = sorted({t for s in truth for t in s.split()})
    mlb = MultiLabelBinarizer(classes=classes)
    y = mlb.fit_transform([s.split() for s in truth])
    p = mlb.transform([s.split() for s in pred])
    return float(skm.f1_score(y, p, average="micro", zero_division=0))


tag_cells = st.lists(st.sampled_from(["a", "b", "c", "d", "x1"]), max_size=4).map(" ".join)


@SETTINGS
@given(st.data())
def test_multilabel_micro_f1_matches_sklearn(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 20))
    truth = obj(*data.draw(st.lists(tag_cells, min_size=n, max_size=n)))
    pred = obj(*data.draw(st.lists(tag_cells | st.just("zz  a"), min_size=n, max_size=n)))
    # with a single label in the truth sklearn sees a (n, 1) column as a *binary* target and returns
    # accuracy over both classes; real answers always hold many labels, so that case is excluded
    assume(len({t for s in truth for t in s.split()}) >= 2)
    assert close(F.multilabel_micro_f1(truth, pred), multilabel_reference(truth, pred))
    assert F.multilabel_micro_f1(truth, truth.copy()) == 1.0
    order = permutation(data, n)
    assert close(F.multilabel_micro_f1(truth[order], pred[order]), F.multilabel_micro_f1(truth, pred))


def pfbeta_reference(labels: np.ndarray, predictions: np.ndarray, beta: float) -> float:
    """The RSNA breast cancer loop, with the all-zero case returning 0."""
    ctp = cfp = 0.0
    count = 0
    for label, prediction in zip(labels, predictions, strict=True):
        q = min(max(prediction, 0.0), 1.0)
        if label:
            count += 1
            ctp += q
        else:
            cfp += q
    if ctp + cfp == 0:
        return 0.0
    precision, recall = ctp / (ctp + cfp), ctp / count
    if precision > 0 and recall > 0:
        return (1 + beta**2) * precision * recall / (beta**2 * precision + recall)
    return 0.0


def test_probabilistic_f1_by_hand() -> None:
    y = np.array([1, 0, 1, 0])
    # ctp = 0.5 + 1.0 (1.7 clipped), cfp = 0.5 (-2 clipped to 0): P = 0.75, R = 0.75
    assert close(F.probabilistic_f1(y, np.array([0.5, 0.5, 1.7, -2.0])), 0.75)
    assert F.probabilistic_f1(y, np.zeros(4)) == 0.0
    assert F.probabilistic_f1(y, np.array([0.0, 0.3, 0.0, 0.0])) == 0.0
    assert math.isnan(F.probabilistic_f1(np.zeros(3), np.array([0.1, 0.2, 0.3])))


@SETTINGS
@given(binary_scores(), st.sampled_from([0.5, 1.0, 2.0]), st.data())
def test_probabilistic_f1_matches_reference(
    case: tuple[np.ndarray, np.ndarray], beta: float, data: st.DataObject
) -> None:
    y, s = case
    s = s * 1.4 - 0.2  # some values outside [0, 1]
    assert close(F.probabilistic_f1(y, s, beta=beta), pfbeta_reference(y, s, beta))
    order = permutation(data, len(y))
    assert close(F.probabilistic_f1(y[order], s[order], beta=beta), F.probabilistic_f1(y, s, beta=beta))


# --------------------------------------------------------------------------- lwlrap


def test_lwlrap_by_hand() -> None:
    y = np.array([[1, 0, 1], [0, 0, 1], [0, 0, 0]], dtype=np.float64)
    s = np.array([[0.9, 0.8, 0.1], [0.5, 0.5, 0.5], [0.1, 0.2, 0.3]])
    # row 0: label 0 rank 1 -> 1/1; label 2 rank 3 with 2 positives above-or-equal -> 2/3
    # row 1: three-way tie, ranked last -> 1/3; row 2 has no positive and is skipped
    assert close(F.lwlrap(y, s), (1 + 2 / 3 + 1 / 3) / 3)
    assert math.isnan(F.lwlrap(np.zeros((2, 3)), s[:2]))


@SETTINGS
@given(st.data())
def test_lwlrap_matches_sklearn(data: st.DataObject) -> None:
    n, k = data.draw(st.integers(1, 12)), data.draw(st.integers(2, 8))
    y = np.array(data.draw(st.lists(st.integers(0, 1), min_size=n * k, max_size=n * k)), dtype=float).reshape(n, k)
    y[0, 0] = 1.0
    s = data.draw(prob_matrix(n, k, normalised=False))
    keep = y.sum(axis=1) > 0
    expected = skm.label_ranking_average_precision_score(y[keep] > 0, s[keep], sample_weight=y[keep].sum(axis=1))
    assert close(F.lwlrap(y, s), expected)
    assert F.lwlrap(y, y.copy()) == 1.0
    rows, cols = permutation(data, n), permutation(data, k)
    assert close(F.lwlrap(y[rows][:, cols], s[rows][:, cols]), expected)


# --------------------------------------------------------------------------- QA


def qa_sklearn(truth: np.ndarray, pred: np.ndarray) -> float:
    """The published encoding: y_pred = prediction non-empty; y_true per the four cases."""
    y_true, y_pred = [], []
    for valid_cell, prediction in zip(truth, pred, strict=True):
        valid = valid_cell.split()
        text = prediction.strip()
        if ":" in text:
            a, b = text.split(":")
            text = f"{int(a)}:{int(b)}"
        y_pred.append(1 if text else 0)
        y_true.append(int(text in valid) if text else int(bool(valid)))
    return float(skm.f1_score(y_true, y_pred, average="micro"))


def test_qa_answer_f1_by_hand() -> None:
    truth = obj("1:2 YES", "", "3:4", "", "10:20 11:15")
    pred = obj(" 01:2", "", "", "NO", "11:15")
    assert F.qa_answer_f1(truth, pred) == 0.6  # rows 0, 1 and 4 are correct
    for bad in ("1:2:3", "abc", "1.5:2", "yes", "3", ":"):
        with pytest.raises(InvalidSubmissionError) as info:
            F.qa_answer_f1(obj("1:2"), obj(bad))
        assert repr(bad) in str(info.value)


answer_tokens = st.sampled_from(["1:2", "3:4", "10:12", "YES", "NO"])
answer_cells = st.lists(answer_tokens, max_size=3, unique=True).map(" ".join)
prediction_cells = answer_tokens | st.sampled_from(["", "  ", "03:4", " 5:6 ", "+1:2"])


@SETTINGS
@given(st.data())
def test_qa_answer_f1_equals_published_micro_f1(data: st.DataObject) -> None:
    n = data.draw(st.integers(1, 25))
    truth = obj(*data.draw(st.lists(answer_cells, min_size=n, max_size=n)))
    pred = obj(*data.draw(st.lists(prediction_cells, min_size=n, max_size=n)))
    assert close(F.qa_answer_f1(truth, pred), qa_sklearn(truth, pred))
    perfect = obj(*[(s.split() or [""])[0] for s in truth])
    assert F.qa_answer_f1(truth, perfect) == 1.0
    order = permutation(data, n)
    assert close(F.qa_answer_f1(truth[order], pred[order]), F.qa_answer_f1(truth, pred))


# --------------------------------------------------------------------------- mean_sample_fbeta


def _tag_rows(draw_rows: list[list[str]]) -> np.ndarray:
    return np.array([" ".join(r) for r in draw_rows], dtype=object)


def test_mean_sample_fbeta_hand_example() -> None:
    from podium.metrics.fscore import mean_sample_fbeta

    truth = _tag_rows([["a", "b"], ["c"], []])
    pred = _tag_rows([["a", "zzz"], ["c", "c"], []])
    # row 1: tp=1, |true|=2, |pred|=2 -> F2 = 5*1/(4*2+2) = 0.5; row 2: perfect; row 3: both empty -> 1
    assert mean_sample_fbeta(truth, pred, beta=2.0) == pytest.approx((0.5 + 1 + 1) / 3)


@settings(max_examples=50, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.lists(st.sampled_from("abcdef"), min_size=1, max_size=4, unique=True),
            st.lists(st.sampled_from("abcdefgh"), max_size=4, unique=True),
        ),
        min_size=1,
        max_size=12,
    ),
    st.sampled_from([1.0, 2.0]),
)
def test_mean_sample_fbeta_matches_sklearn_samples_average(
    rows: list[tuple[list[str], list[str]]], beta: float
) -> None:
    from sklearn.metrics import fbeta_score
    from sklearn.preprocessing import MultiLabelBinarizer

    from podium.metrics.fscore import mean_sample_fbeta

    truth, pred = [r[0] for r in rows], [r[1] for r in rows]
    binarizer = MultiLabelBinarizer(classes=sorted(set("abcdefgh")))
    expected = fbeta_score(
        binarizer.fit_transform(truth), binarizer.transform(pred), beta=beta, average="samples", zero_division=0
    )
    assert mean_sample_fbeta(_tag_rows(truth), _tag_rows(pred), beta=beta) == pytest.approx(expected)

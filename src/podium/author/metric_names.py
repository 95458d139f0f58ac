"""Kaggle's evaluation-metric names mapped to :data:`podium.metrics.METRICS`, and what each metric's predictions are.

Kaggle's metadata names a competition's metric in words (``Area Under Receiver Operating Characteristic Curve``,
``Categorization Accuracy``, ``MAP@{K}``); a description says it in prose. :func:`resolve` takes either, or a
podium name, and gives podium's metric with its options (``MAP@5`` is ``map_at_k`` with ``k: 5``). Names are
compared in a normal form (lower case, words only), so ``Root-Mean-Squared-Error`` and ``root mean squared
error`` are one name. A name podium does not know is refused with the nearest ones (:func:`unknown_message`).
"""

from __future__ import annotations

import difflib
import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from podium.errors import UsageError
from podium.metrics import METRICS
from podium.untrusted import printable

__all__ = [
    "PREDICTIONS",
    "Resolved",
    "check_options",
    "find_in_text",
    "normal",
    "required",
    "resolve",
    "unknown_message",
]

#: What a metric's predictions are, per podium metric (the submission column's kind follows): ``probability`` (a
#: score in [0, 1] per target or class), ``label`` (the target's own values), ``float``, ``tokens``, ``text``,
#: ``rle``, ``boxes``.
PREDICTIONS: dict[str, str] = {
    **dict.fromkeys(("roc_auc", "mean_columnwise_roc_auc", "alaska_weighted_auc", "jigsaw_bias_auc"), "probability"),
    **dict.fromkeys(("log_loss", "rsna_fracture_log_loss", "kl_divergence", "probabilistic_f1"), "probability"),
    **dict.fromkeys(("lwlrap",), "probability"),
    **dict.fromkeys(("accuracy", "error_rate", "f1", "matthews_corrcoef", "quadratic_weighted_kappa"), "label"),
    **dict.fromkeys(("rmse", "mae", "mean_columnwise_rmsle", "mcrmse", "mean_log_mae_by_group"), "float"),
    **dict.fromkeys(("laplace_log_likelihood", "mean_angular_error", "haversine_p50_p95", "pearson"), "float"),
    **dict.fromkeys(("mean_columnwise_spearman", "kendall_tau_pooled"), "float"),
    **dict.fromkeys(("multilabel_micro_f1", "mean_sample_fbeta", "map_at_k"), "tokens"),
    **dict.fromkeys(
        ("mean_levenshtein", "normalized_sequence_levenshtein", "mean_word_jaccard", "qa_answer_f1"), "text"
    ),
    **dict.fromkeys(("mean_dice_rle", "global_dice_rle", "iou_sweep_precision", "dice_hausdorff"), "rle"),
    **dict.fromkeys(("pixel_fbeta_rle",), "rle"),
    **dict.fromkeys(("coco_map", "voc_map", "map_3d", "point_in_box_f1"), "boxes"),
}

#: Kaggle's names (and the usual ways descriptions say them), per podium metric.
_KAGGLE: dict[str, tuple[str, ...]] = {
    "accuracy": ("Categorization Accuracy", "Classification Accuracy", "Accuracy", "Accuracy Score"),
    "error_rate": ("Error Rate", "Classification Error", "Top 1 Error", "Mean Classification Error"),
    "roc_auc": (
        "Area Under Receiver Operating Characteristic Curve",
        "Area Under the ROC Curve",
        "ROC AUC",
        "AUC ROC",
        "AUC",
        "Area Under Curve",
        "AUROC",
        "ROC AUC Score",
    ),
    "mean_columnwise_roc_auc": (
        "Mean Columnwise Area Under Receiver Operating Characteristic Curve",
        "Mean Column Wise ROC AUC",
        "Mean Columnwise AUC",
        "Macro ROC AUC",
    ),
    "log_loss": (
        "Log Loss",
        "Logarithmic Loss",
        "Multi Class Log Loss",
        "Multiclass Log Loss",
        "Multiclass Loss",
        "MulticlassLoss",
        "Binary Log Loss",
        "Multi Class Logarithmic Loss",
        "LogLoss",
        "Cross Entropy",
    ),
    "kl_divergence": ("Kullback Leibler Divergence", "KL Divergence", "KLD"),
    "quadratic_weighted_kappa": ("Quadratic Weighted Kappa", "QWK", "Quadratic Kappa", "Cohen Kappa Quadratic"),
    "f1": ("Macro F1", "F1 Macro", "Macro F1 Score", "Mean F1 Macro", "F1 Score", "F Score", "FScore"),
    "multilabel_micro_f1": ("Micro F1", "Micro Averaged F1 Score", "F1 Micro", "Micro F Score"),
    "mean_sample_fbeta": ("Mean F Score", "MeanFScore", "Mean F1 Score", "Mean F Beta Score", "Sample F Beta"),
    "matthews_corrcoef": ("Matthews Correlation Coefficient", "MCC"),
    "lwlrap": ("Label Weighted Label Ranking Average Precision", "LWLRAP"),
    "probabilistic_f1": ("Probabilistic F1", "pF1", "Probabilistic F Score"),
    "rmse": ("Root Mean Squared Error", "Root Mean Square Error", "RMSE"),
    "mae": ("Mean Absolute Error", "MAE"),
    "mean_columnwise_rmsle": (
        "Root Mean Squared Logarithmic Error",
        "Mean Columnwise Root Mean Squared Logarithmic Error",
        "RMSLE",
        "Root Mean Squared Log Error",
    ),
    "mcrmse": ("Mean Columnwise Root Mean Squared Error", "MCRMSE"),
    "pearson": ("Pearson Correlation Coefficient", "Pearson Correlation", "Pearson"),
    "mean_columnwise_spearman": (
        "Spearman Rank Correlation",
        "Spearman Correlation",
        "Mean Columnwise Spearman",
        "Spearmans Rank Correlation",
    ),
    "map_at_k": ("Mean Average Precision at K", "MAP at K", "MAP@{K}", "MAPK"),
    "mean_levenshtein": ("Levenshtein Mean", "Mean Levenshtein Distance", "Levenshtein Distance"),
    "mean_word_jaccard": ("Jaccard", "Word Level Jaccard", "Mean Jaccard", "Jaccard Score"),
    "mean_dice_rle": ("Dice Coefficient", "Mean Dice Coefficient", "Dice"),
    "iou_sweep_precision": ("Intersection Over Union Object Segmentation", "Mean Average Precision IoU Thresholds"),
    "mean_angular_error": ("Mean Angular Error",),
    "laplace_log_likelihood": ("Laplace Log Likelihood",),
}

_MAP_AT = re.compile(r"^map (?:at )?(\d+)$")  # "MAP@12" in normal form: "map 12"


def normal(name: str) -> str:
    """A metric name in the form names are compared in: lower case, words of letters and digits."""
    return " ".join(re.findall(r"[a-z0-9]+", name.lower().replace("'", "")))


_BY_NAME: dict[str, str] = {normal(alias): metric for metric, aliases in _KAGGLE.items() for alias in aliases}
_BY_NAME.update({normal(name): name for name in METRICS})


@dataclass(frozen=True)
class Resolved:
    """podium's metric for a name, its options, and how the name was read (for the line ``podium new`` prints)."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    how: str = ""


def resolve(given: str, *, n_targets: int = 1) -> Resolved | None:
    """podium's metric for a podium name or Kaggle's, None when the table has no such name. Kaggle names one AUC
    for one target or many: with several target columns it is the mean of the columns' AUCs."""
    key = normal(given)
    found = _BY_NAME.get(key)
    options: dict[str, Any] = {}
    if found is None and (at := _MAP_AT.match(key)):
        found, options = "map_at_k", {"k": int(at.group(1))}
    if found is None:
        return None
    if found == "roc_auc" and n_targets > 1:
        found = "mean_columnwise_roc_auc"
    how = "podium's own name" if given in METRICS else f"Kaggle's '{printable(given, 80)}'"
    return Resolved(found, options, how)


def find_in_text(text: str) -> tuple[str, Resolved] | None:
    """The metric a description names (its longest known name, in its evaluation section where it has one)."""
    section = re.split(r"(?im)^#+\s*evaluation\b", text, maxsplit=1)
    words = f" {normal(section[-1])} "
    hits = [(alias, metric) for alias, metric in _BY_NAME.items() if f" {alias} " in words and len(alias) > 3]
    if not hits:
        return None
    alias, metric = max(hits, key=lambda hit: len(hit[0]))
    return alias, Resolved(metric, {}, f"the description's {alias!r}")


def unknown_message(given: str, flag: str = "--metric") -> str:
    """One line for a metric name podium does not know: the nearest names, and how to declare a new one."""
    close = difflib.get_close_matches(normal(given), list(_BY_NAME), n=4, cutoff=0.5)
    nearest = list(dict.fromkeys(_BY_NAME[c] for c in close)) or sorted(METRICS)[:6]
    return (
        f"{flag} '{printable(given, 80)}': podium knows no metric of that name (nearest: {', '.join(nearest)}). Fix: "
        "pass one of podium's names (`podium show` lists a competition's) or Kaggle's, or declare a new metric: a "
        "function in podium/metrics/ and its row in podium/metrics/table.py (docs/development.md, 'A metric')"
    )


def check_options(name: str, options: Mapping[str, Any], flag: str = "--metric-option") -> None:
    """UsageError, one line, for an option the metric's function does not take."""
    parameters = inspect.signature(METRICS[name].fn).parameters
    accepted = [p for p, spec in parameters.items() if spec.kind is inspect.Parameter.KEYWORD_ONLY]
    for key in options:
        if key not in accepted:
            raise UsageError(
                f"{flag} {printable(str(key), 60)}: {name} takes no such option. Fix: use one of "
                f"{', '.join(accepted) or 'none (it takes no options)'}"
            )


def required(name: str) -> tuple[list[str], list[str]]:
    """The keyword arguments ``name``'s function needs and has no default for: (options, inputs), an input being
    an array taken from the data (``groups``), an option a value (``k``)."""
    options: list[str] = []
    inputs: list[str] = []
    for key, spec in inspect.signature(METRICS[name].fn).parameters.items():
        if spec.kind is inspect.Parameter.KEYWORD_ONLY and spec.default is inspect.Parameter.empty:
            (inputs if "Array" in str(spec.annotation) else options).append(key)
    return options, inputs

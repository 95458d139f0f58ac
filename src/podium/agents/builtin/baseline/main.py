"""The baseline agent: gradient-boosted trees on tabular data and small images, else the sample submission.

It finds train.csv, test.csv and the sample submission in /home/data. The sample's columns that
are absent from test.csv are the targets: either columns of train.csv, or the classes of one
train.csv label column (one probability column per class). Numeric and low-cardinality text
columns feed a HistGradientBoosting model; long free-text columns feed a TF-IDF linear model. When
a column of test.csv names image files under /home/data (by id or by file name, as images/{id}.png),
each image becomes gray pixel features (shrunk to at most 32 pixels a side) beside the table's own.
Each model is checked on a holdout of 20% of train (the score goes to the log), then refitted on
all of train. Anything it cannot model keeps the sample submission's values, so a valid
submission always exists. Like an LLM agent, it leaves its code in /home/code: this script
(main.py) and notes.md, what it chose here (features, models, holdout scores, or why it kept the
sample).

Everything random follows the run's seed (``SEED``, which podium sets; 0 outside podium): the holdout
split, the trees' early stopping (on at every size, not only from 10,000 rows as scikit-learn's default:
the seed draws its validation rows, so seeds give different fits of the same method), and Python's and
numpy's global generators. The text model (TF-IDF and a linear model) is a convex fit: its
seeds differ only in the holdout score they log.
"""

from __future__ import annotations

import os
import random
import shutil
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

# /home inside a sandbox; the run's root under the 'local' sandbox (this file is <home>/agent/main.py).
HOME = Path(__file__).parent.parent
DATA = HOME / "data"
OUT = HOME / "submission" / "submission.csv"
CODE = HOME / "code"
IMAGE_SUFFIXES = {".png", ".jpg", ".jpeg", ".bmp", ".gif", ".tif", ".tiff", ".webp"}
MAX_SIDE = 32  # pixels a side: larger images are shrunk to this before their pixels become features
MAX_IMAGES = 200_000
NOTES: list[str] = []
SEED = int(os.environ.get("SEED") or 0)


def log(message: str) -> None:
    print(f"baseline: {message}", flush=True)
    NOTES.append(message)


def leave_code() -> None:
    """This script and what it chose, in /home/code (where an LLM agent leaves its solution)."""
    try:
        CODE.mkdir(exist_ok=True)
        shutil.copyfile(__file__, CODE / "main.py")
        lines = ["# What the baseline did", "", "The script: main.py (run as `python3 main.py`).", ""]
        (CODE / "notes.md").write_text("\n".join(lines + [f"- {note}" for note in NOTES]) + "\n")
    except OSError as exc:
        print(f"baseline: cannot write its code to {CODE}: {exc}", flush=True)


def image_files() -> dict[str, Path]:
    """Image files under /home/data, by file name, by stem and by path relative to /home/data."""
    found: dict[str, Path] = {}
    for count, path in enumerate(p for p in sorted(DATA.rglob("*")) if p.suffix.lower() in IMAGE_SUFFIXES):
        if count >= MAX_IMAGES:
            break
        for key in (path.name, path.stem, str(path.relative_to(DATA))):
            found.setdefault(key, path)
    return found


def image_column(test: pd.DataFrame, files: dict[str, Path]) -> str | None:
    """A column of test.csv whose values name image files (nearly all of them), or None."""
    for name in test.columns:
        values = test[name].dropna().astype(str)
        if len(values) and values.isin(files.keys()).mean() > 0.9:
            return name
    return None


def pixel_features(values: pd.Series, files: dict[str, Path], size: tuple[int, int]) -> pd.DataFrame:
    """Gray levels (0..1) of each named image at ``size``, one column per pixel; NaN where no image is found."""
    from PIL import Image

    rows = np.full((len(values), size[0] * size[1]), np.nan)
    for i, value in enumerate(values.astype(str)):
        path = files.get(value)
        if path is not None:
            with Image.open(path) as image:
                rows[i] = np.asarray(image.convert("L").resize(size), dtype=float).ravel() / 255
    return pd.DataFrame(rows, columns=[f"pixel_{i}" for i in range(rows.shape[1])], index=values.index)


def add_images(train: pd.DataFrame, test: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame, str | None]:
    """train and test with the pixels of the images their rows name (unchanged when they name none)."""
    files = image_files()
    column = image_column(test, files) if files else None
    if column is None or column not in train.columns:
        return train, test, None
    from PIL import Image

    with Image.open(files[str(test[column].dropna().iloc[0])]) as first:
        width, height = first.size
    scale = min(1.0, MAX_SIDE / max(width, height))
    size = (max(1, round(width * scale)), max(1, round(height * scale)))
    log(
        f"features: the gray pixels of the images named by {column!r}, {size[0]}x{size[1]} (images of {width}x{height})"
    )
    train = pd.concat([train, pixel_features(train[column], files, size)], axis=1)
    test = pd.concat([test, pixel_features(test[column], files, size)], axis=1)
    return train, test, column


def find(pattern: str) -> Path | None:
    found = sorted(DATA.glob(pattern))
    return found[0] if found else None


def is_text(column: pd.Series) -> bool:
    return not (pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column))


def is_free_text(column: pd.Series) -> bool:
    return is_text(column) and column.astype(str).str.len().mean() > 30 and column.nunique() > 0.5 * len(column)


def design(train: pd.DataFrame, test: pd.DataFrame, drop: list[str]) -> tuple[Any, Any, bool]:
    """Feature matrices for train and test; the flag says they are sparse text features."""
    both = pd.concat(
        [train.drop(columns=drop, errors="ignore"), test.drop(columns=drop, errors="ignore")], keys=["tr", "te"]
    )
    texts = [c for c in both.columns if is_free_text(both[c])]
    if texts:
        from scipy.sparse import hstack
        from sklearn.feature_extraction.text import TfidfVectorizer

        blocks = [
            TfidfVectorizer(max_features=50_000, ngram_range=(1, 2), sublinear_tf=True).fit_transform(
                both[c].fillna("").astype(str)
            )
            for c in texts
        ]
        log(f"features: TF-IDF of the words and word pairs of {', '.join(texts)}")
        matrix = hstack(blocks).tocsr()
        n = len(train)
        return matrix[:n], matrix[n:], True
    keep = []
    for name in both.columns:
        column = both[name]
        if pd.api.types.is_numeric_dtype(column) or pd.api.types.is_bool_dtype(column):
            both[name] = column.astype(float)
            keep.append(name)
        elif column.nunique() <= 50:
            both[name] = column.astype("category").cat.codes.astype(float)
            keep.append(name)
    if not keep:
        raise ValueError("no usable feature columns")
    both = both[keep]
    shown = ", ".join(keep[:20]) + (f", ... ({len(keep)} in all)" if len(keep) > 20 else "")
    log(f"features: {shown}")
    return both.loc["tr"], both.loc["te"], False


def is_classification(y: pd.Series) -> bool:
    if not pd.api.types.is_numeric_dtype(y) or pd.api.types.is_bool_dtype(y):
        return True
    return bool(y.nunique() <= 20 and np.allclose(y.dropna() % 1, 0))


def model_for(classify: bool, sparse: bool) -> Any:
    if sparse:
        from sklearn.linear_model import LogisticRegression, Ridge

        return LogisticRegression(max_iter=2000, C=4.0) if classify else Ridge(alpha=1.0)
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    # Early stopping on at every size (sklearn's default turns it on from 10,000 rows): its validation rows are drawn
    # from the seed, so runs with different seeds are different fits of the same method (the spread an SEM over
    # seeds should measure), not one deterministic fit repeated.
    trees = HistGradientBoostingClassifier if classify else HistGradientBoostingRegressor
    return trees(early_stopping=True, random_state=SEED)


def fit(x: Any, y: pd.Series, classify: bool, sparse: bool) -> Any:
    from sklearn.model_selection import train_test_split

    x_fit, x_hold, y_fit, y_hold = train_test_split(x, y, test_size=0.2, random_state=SEED)
    model = model_for(classify, sparse).fit(x_fit, y_fit)
    log(f"model for {y.name!r}: {model!r}; holdout score (its own .score) {model.score(x_hold, y_hold):.4f}")
    return model_for(classify, sparse).fit(x, y)


def label_column(train: pd.DataFrame, targets: list[str]) -> str | None:
    """A train column whose values are the target column names (one-hot class probabilities)."""
    for name in train.columns:
        values = set(train[name].astype(str).unique())
        if values and values <= set(targets) and len(values) > 1:
            return name
    return None


def main() -> int:
    random.seed(SEED)
    np.random.seed(SEED)
    log(f"seed {SEED}")
    try:
        return solve()
    finally:
        leave_code()


def solve() -> int:
    sample_path = find("sample_submission*.csv") or find("*ubmission*.csv")
    train_path, test_path = find("train*.csv"), find("test*.csv")
    if sample_path is None:
        log("no sample submission found; nothing to submit")
        return 1
    shutil.copyfile(sample_path, OUT)  # a valid submission from the start
    if train_path is None or test_path is None:
        log("no train.csv/test.csv: keeping the sample submission")
        return 0
    try:
        sample, train, test = pd.read_csv(sample_path), pd.read_csv(train_path), pd.read_csv(test_path)
        ids = [c for c in sample.columns if c in test.columns]
        targets = [c for c in sample.columns if c not in test.columns]
        if not ids or not targets:
            log("cannot match the sample's columns to train/test: keeping the sample submission")
            return 0
        prediction = test[ids].copy()
        label = None if all(t in train.columns for t in targets) else label_column(train, targets)
        train, test, images = add_images(train, test)
        drop = ids + targets + ([label] if label else []) + ([images] if images else [])
        x, x_test, sparse = design(train, test, drop=drop)
        if label is not None:
            model = fit(x, train[label].astype(str), True, sparse)
            probabilities = model.predict_proba(x_test)
            for target in targets:
                known = list(model.classes_)
                prediction[target] = probabilities[:, known.index(target)] if target in known else 0.0
        for target in targets if label is None else []:
            y = train[target]
            if (y.dtype == object and not is_classification(y)) or (y.dtype == object and y.nunique() > 0.5 * len(y)):
                log(f"{target!r} is free text, not a label: keeping the sample's values")
                prediction[target] = sample.set_index(ids[0])[target].reindex(test[ids[0]]).to_numpy()
                continue
            classify = is_classification(y)
            model = fit(x, y, classify, sparse)
            wants_probability = pd.api.types.is_float_dtype(sample[target]) and sample[target].between(0, 1).all()
            if classify and wants_probability and len(model.classes_) == 2:
                prediction[target] = model.predict_proba(x_test)[:, 1]
            else:
                prediction[target] = model.predict(x_test)
        submission = sample[ids].merge(prediction, on=ids, how="left")[sample.columns]
        if submission.isna().any().any():
            raise ValueError("some test ids got no prediction")
        submission.to_csv(OUT, index=False)
        log(f"wrote {len(submission)} predictions for {targets}")
    except Exception as exc:  # the sample submission stays in place
        log(f"could not model this task ({type(exc).__name__}: {exc}); keeping the sample submission")
    return 0


if __name__ == "__main__":
    sys.exit(main())

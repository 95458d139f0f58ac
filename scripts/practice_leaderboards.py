"""Reference leaderboards for the offline practice suite (the ``practice`` split).

Usage: python scripts/practice_leaderboards.py [-c ID ...] [--check] [-v]
       python scripts/practice_leaderboards.py -c ID --competitions-dir DIR --from RAW   (a competition of yours)

The practice competitions are built from data that packages ship, so there is no Kaggle
leaderboard to compare with. For each one this script prepares the competition into a temporary
folder (through its ``fetch_raw`` hook: no network), trains a population of reference solutions
on the public files only (constant predictions, random guesses, stumps and small trees,
one-feature and few-feature models, nearest neighbours, naive Bayes, linear models over a range
of regularisation, random forests, extra trees, gradient boosting, SVMs and small neural nets;
bag-of-words and character n-gram models for the text task; pixel models for the image task),
grades every submission with podium's grader, and writes
``src/podium/competitions/<id>/leaderboard.json`` with ``source: "reference"``, so reports never
mistake it for a Kaggle leaderboard. Every model has a fixed seed and runs on one thread: a rerun
writes the same files. ``--check`` compares instead of writing (exit 1 on a difference).

``scripts/derive_leaderboards.py`` only writes competitions that have a Kaggle CSV, so it leaves
these files alone.

A competition of your own with one target (``podium new ID --from DIR --train ... --target ...``, which has no
Kaggle leaderboard) gets one the same way: ``-c ID --competitions-dir DIR --from RAW`` prepares it from its raw
files, reads its task from the declaration (a probability column: binary; a label: classification; a number:
regression) and writes ``DIR/ID/leaderboard.json``, so that its grades are placed and medalled.
"""

from __future__ import annotations

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import argparse  # noqa: E402
import json  # noqa: E402
import sys  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
import warnings  # noqa: E402
from collections.abc import Callable, Iterator  # noqa: E402
from dataclasses import dataclass  # noqa: E402
from pathlib import Path  # noqa: E402
from typing import Any  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from podium import registry  # noqa: E402
from podium.data.prepare import prepare_competition  # noqa: E402
from podium.grading import grade  # noqa: E402
from podium.leaderboard import Leaderboard  # noqa: E402

Model = Any  # a scikit-learn estimator (or pipeline)


@dataclass
class Task:
    """One practice competition, read from its public files, ready for scikit-learn."""

    kind: str  # "binary", "multiclass" or "regression"
    x_train: Any  # a DataFrame of numeric features, or a Series of texts
    y_train: np.ndarray
    x_test: Any
    ids: np.ndarray
    submission: Callable[[np.ndarray, np.ndarray], pd.DataFrame]  # (ids, prediction) -> submission


# ---------------------------------------------------------------------------- reading the tasks


def _numeric(train: pd.DataFrame, test: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Numeric features; text columns one-hot with the categories seen in train (NaN kept)."""
    text = [c for c in train.columns if not pd.api.types.is_numeric_dtype(train[c])]
    train, test = train.copy(), test.copy()
    for column in text:
        categories = sorted(train[column].fillna("missing").unique())
        for frame in (train, test):
            values = frame[column].fillna("missing")
            frame[column] = pd.Categorical(values.where(values.isin(categories)), categories=categories)
    train = pd.get_dummies(train, columns=text, dtype=float)
    test = pd.get_dummies(test, columns=text, dtype=float)
    return train.astype(float), test[train.columns].astype(float)


def _table_task(public: Path, id_col: str, target: str, kind: str, to_sub: Callable[..., pd.DataFrame]) -> Task:
    train, test = pd.read_csv(public / "train.csv"), pd.read_csv(public / "test.csv")
    y = train.pop(target).to_numpy()
    x_train, x_test = _numeric(train.drop(columns=[id_col]), test.drop(columns=[id_col]))
    return Task(kind, x_train, y, x_test, test[id_col].to_numpy(), to_sub)


def _positive_probability(id_col: str, column: str) -> Callable[[np.ndarray, np.ndarray], pd.DataFrame]:
    return lambda ids, proba: pd.DataFrame({id_col: ids, column: proba[:, 1]})


def _hard_label(id_col: str, column: str) -> Callable[[np.ndarray, np.ndarray], pd.DataFrame]:
    return lambda ids, proba: pd.DataFrame({id_col: ids, column: proba.argmax(axis=1)})


def _value(id_col: str, column: str) -> Callable[[np.ndarray, np.ndarray], pd.DataFrame]:
    return lambda ids, pred: pd.DataFrame({id_col: ids, column: pred})


def breast_cancer(public: Path) -> Task:
    return _table_task(public, "id", "malignant", "binary", _positive_probability("id", "malignant"))


def titanic(public: Path) -> Task:
    return _table_task(public, "id", "survived", "binary", _hard_label("id", "survived"))


def diabetes(public: Path) -> Task:
    return _table_task(public, "id", "progression", "regression", _value("id", "progression"))


def house_prices(public: Path) -> Task:
    return _table_task(public, "Id", "SalePrice", "regression", _value("Id", "SalePrice"))


def wine(public: Path) -> Task:
    classes = ["class_0", "class_1", "class_2"]
    train, test = pd.read_csv(public / "train.csv"), pd.read_csv(public / "test.csv")
    y = train.pop("cultivar").map({c: i for i, c in enumerate(classes)}).to_numpy()

    def to_sub(ids: np.ndarray, proba: np.ndarray) -> pd.DataFrame:
        return pd.DataFrame({"id": ids, **{c: proba[:, i] for i, c in enumerate(classes)}})

    return Task("multiclass", train.drop(columns=["id"]), y, test.drop(columns=["id"]), test["id"].to_numpy(), to_sub)


def digits(public: Path) -> Task:
    from PIL import Image

    def pixels(ids: np.ndarray) -> pd.DataFrame:
        rows = [np.asarray(Image.open(public / "images" / f"{i}.png"), dtype=float).ravel() / 255 for i in ids]
        return pd.DataFrame(np.vstack(rows), columns=[f"p{k}" for k in range(64)])

    train, test = pd.read_csv(public / "train.csv"), pd.read_csv(public / "test.csv")
    ids = test["id"].to_numpy()
    return Task(
        "multiclass",
        pixels(train["id"].to_numpy()),
        train["label"].to_numpy(),
        pixels(ids),
        ids,
        _hard_label("id", "label"),
    )


def food_reviews(public: Path) -> Task:
    train = pd.read_csv(public / "train.csv", keep_default_na=False)
    test = pd.read_csv(public / "test.csv", keep_default_na=False)
    return Task(
        "text",
        train["review"],
        train["great"].to_numpy(),
        test["review"],
        test["id"].to_numpy(),
        _positive_probability("id", "great"),
    )


TASKS: dict[str, Callable[[Path], Task]] = {
    "practice-breast-cancer": breast_cancer,
    "practice-diabetes": diabetes,
    "practice-digits": digits,
    "practice-food-reviews": food_reviews,
    "practice-house-prices": house_prices,
    "practice-titanic": titanic,
    "practice-wine": wine,
}


def declared_task(competition: Any) -> Callable[[Path], Task]:
    """The task of a competition of your own with one target (``podium new``): its public train.csv and test.csv,
    read from its declaration: a probability column is a binary task (the positive class's probability), a label
    column a classification (each model's most likely label), a number a regression."""
    if len(competition.targets) != 1:
        raise SystemExit(
            f"{competition.id}: a reference population needs one target; it has {len(competition.targets)}"
        )
    id_col, (column, target) = competition.id_columns[0], competition.targets[0]
    kind = competition.column(column).kind

    def task(public: Path) -> Task:
        if kind in ("float", "int") and competition.metric.metric.name not in ("accuracy", "quadratic_weighted_kappa"):
            return _table_task(public, id_col, target, "regression", _value(id_col, column))
        train = pd.read_csv(public / "train.csv")
        classes = sorted(train[target].dropna().unique().tolist())
        coded = public.parent / "coded"  # the target as class numbers, which the population predicts
        coded.mkdir(exist_ok=True)
        train.assign(**{target: train[target].map({c: i for i, c in enumerate(classes)})}).to_csv(
            coded / "train.csv", index=False
        )
        (coded / "test.csv").write_bytes((public / "test.csv").read_bytes())
        if kind == "probability":
            return _table_task(coded, id_col, target, "binary", _positive_probability(id_col, column))
        labels = np.asarray(classes, dtype=object)

        def label(ids: np.ndarray, proba: np.ndarray) -> pd.DataFrame:
            return pd.DataFrame({id_col: ids, column: labels[proba.argmax(axis=1)]})

        return _table_task(coded, id_col, target, "binary" if len(classes) == 2 else "multiclass", label)

    return task


# ---------------------------------------------------------------------------- the populations


def _pipe(model: Model, *, scale: bool = False, columns: list[str] | None = None) -> Model:
    from sklearn.compose import ColumnTransformer
    from sklearn.impute import SimpleImputer
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    steps: list[Model] = []
    if columns is not None:
        steps.append(ColumnTransformer([("keep", "passthrough", columns)]))
    steps.append(SimpleImputer(strategy="median"))
    if scale:
        steps.append(StandardScaler())
    return make_pipeline(*steps, model)


def _subsets(columns: list[str], sizes: tuple[int, ...], seeds: int) -> Iterator[tuple[str, list[str]]]:
    """Random feature subsets (the weaker half of a realistic field uses a few columns)."""
    for size in sizes:
        if size >= len(columns):
            continue
        for seed in range(seeds):
            rng = np.random.default_rng(1000 * size + seed)
            yield f"{size}feat-s{seed}", sorted(rng.choice(columns, size, replace=False).tolist())


def _few_features(task: Task, linear: tuple[str, Model], forest: Model) -> Iterator[tuple[str, Model]]:
    """A scaled linear model and a small forest on each random feature subset (fresh copies of each)."""
    from sklearn.base import clone

    name, model = linear
    for subset_name, subset in _subsets(list(task.x_train.columns), (1, 3, 8), 1):
        yield f"{name}-{subset_name}", _pipe(clone(model), scale=True, columns=subset)
        yield f"forest-{subset_name}", _pipe(clone(forest), columns=subset)


def classifiers(task: Task) -> Iterator[tuple[str, Model]]:
    from sklearn.discriminant_analysis import LinearDiscriminantAnalysis
    from sklearn.dummy import DummyClassifier
    from sklearn.ensemble import (
        AdaBoostClassifier,
        ExtraTreesClassifier,
        HistGradientBoostingClassifier,
        RandomForestClassifier,
    )
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import GaussianNB
    from sklearn.neighbors import KNeighborsClassifier
    from sklearn.neural_network import MLPClassifier
    from sklearn.svm import SVC
    from sklearn.tree import DecisionTreeClassifier

    yield "constant-prior", DummyClassifier(strategy="prior")
    for seed in range(3):
        yield f"random-guess-s{seed}", DummyClassifier(strategy="stratified", random_state=seed)
    for depth in (1, 2, 3, 5, None):
        yield f"tree-d{depth}", _pipe(DecisionTreeClassifier(max_depth=depth, random_state=0))
    for k in (1, 5, 15, 45):
        yield f"knn-{k}", _pipe(KNeighborsClassifier(n_neighbors=k), scale=True)
    yield "knn-5-unscaled", _pipe(KNeighborsClassifier(n_neighbors=5))
    yield "gaussian-nb", _pipe(GaussianNB())
    yield "lda", _pipe(LinearDiscriminantAnalysis())
    for c in (0.001, 0.01, 0.1, 1.0, 10.0):
        yield f"logreg-C{c}", _pipe(LogisticRegression(C=c, max_iter=2000), scale=True)
    for n, depth, seed in ((10, 3, 0), (10, None, 1), (50, None, 2), (200, None, 0), (200, 8, 3)):
        yield (
            f"forest-{n}-d{depth}-s{seed}",
            _pipe(RandomForestClassifier(n_estimators=n, max_depth=depth, random_state=seed, n_jobs=1)),
        )
    yield "extra-trees-200", _pipe(ExtraTreesClassifier(n_estimators=200, random_state=0, n_jobs=1))
    yield "adaboost-100", _pipe(AdaBoostClassifier(n_estimators=100, random_state=0))
    for lr, iters, depth in ((0.03, 100, 3), (0.1, 100, None), (0.1, 300, None), (0.3, 50, 2)):
        yield (
            f"hgb-lr{lr}-{iters}-d{depth}",
            HistGradientBoostingClassifier(learning_rate=lr, max_iter=iters, max_depth=depth, random_state=0),
        )
    for c in (0.3, 3.0, 30.0):
        yield f"svc-rbf-C{c}", _pipe(SVC(C=c, probability=True, random_state=0), scale=True)
    for hidden, seed in (((32,), 0), ((100,), 1), ((64, 64), 2)):
        yield (
            f"mlp-{'x'.join(map(str, hidden))}-s{seed}",
            _pipe(MLPClassifier(hidden_layer_sizes=hidden, max_iter=1000, random_state=seed), scale=True),
        )
    forest = RandomForestClassifier(n_estimators=50, max_depth=6, random_state=0, n_jobs=1)
    yield from _few_features(task, ("logreg", LogisticRegression(max_iter=2000)), forest)


def regressors(task: Task) -> Iterator[tuple[str, Model]]:
    from sklearn.compose import TransformedTargetRegressor
    from sklearn.dummy import DummyRegressor
    from sklearn.ensemble import (
        ExtraTreesRegressor,
        GradientBoostingRegressor,
        HistGradientBoostingRegressor,
        RandomForestRegressor,
    )
    from sklearn.linear_model import Lasso, LinearRegression, Ridge
    from sklearn.neighbors import KNeighborsRegressor
    from sklearn.neural_network import MLPRegressor
    from sklearn.preprocessing import StandardScaler
    from sklearn.svm import SVR
    from sklearn.tree import DecisionTreeRegressor

    def log_target(model: Model) -> Model:
        return TransformedTargetRegressor(regressor=model, func=np.log1p, inverse_func=np.expm1)

    def scaled_target(model: Model) -> Model:
        return TransformedTargetRegressor(regressor=model, transformer=StandardScaler())

    yield "constant-mean", DummyRegressor(strategy="mean")
    yield "constant-median", DummyRegressor(strategy="median")
    for depth in (1, 2, 3, 5, None):
        yield f"tree-d{depth}", _pipe(DecisionTreeRegressor(max_depth=depth, random_state=0))
    for k in (1, 5, 15, 45):
        yield f"knn-{k}", _pipe(KNeighborsRegressor(n_neighbors=k), scale=True)
    yield "knn-5-unscaled", _pipe(KNeighborsRegressor(n_neighbors=5))
    yield "linear", _pipe(LinearRegression(), scale=True)
    for alpha in (0.1, 10.0, 100.0, 1000.0):
        yield f"ridge-a{alpha}", _pipe(Ridge(alpha=alpha), scale=True)
    yield "lasso-a0.05", scaled_target(_pipe(Lasso(alpha=0.05, max_iter=5000), scale=True))
    for n, depth, seed in ((10, 3, 0), (10, None, 1), (50, None, 2), (100, None, 0), (100, 8, 3)):
        yield (
            f"forest-{n}-d{depth}-s{seed}",
            _pipe(
                RandomForestRegressor(n_estimators=n, max_depth=depth, max_features=0.5, random_state=seed, n_jobs=1)
            ),
        )
    yield (
        "extra-trees-100",
        _pipe(ExtraTreesRegressor(n_estimators=100, max_features=0.5, min_samples_leaf=2, random_state=0, n_jobs=1)),
    )
    yield "gbr-100-d3", _pipe(GradientBoostingRegressor(n_estimators=100, max_depth=3, random_state=0))
    for lr, iters, depth in ((0.03, 100, 3), (0.1, 100, None), (0.1, 200, None), (0.3, 50, 2)):
        yield (
            f"hgb-lr{lr}-{iters}-d{depth}",
            HistGradientBoostingRegressor(learning_rate=lr, max_iter=iters, max_depth=depth, random_state=0),
        )
    yield (
        "hgb-lr0.1-200-log",
        log_target(HistGradientBoostingRegressor(learning_rate=0.1, max_iter=200, random_state=0)),
    )
    for c in (0.3, 3.0):
        yield f"svr-rbf-C{c}", scaled_target(_pipe(SVR(C=c), scale=True))
    for hidden, seed in (((32,), 0), ((64, 64), 1)):
        yield (
            f"mlp-{'x'.join(map(str, hidden))}-s{seed}",
            scaled_target(_pipe(MLPRegressor(hidden_layer_sizes=hidden, max_iter=2000, random_state=seed), scale=True)),
        )
    forest = RandomForestRegressor(n_estimators=50, max_depth=6, random_state=0, n_jobs=1)
    yield from _few_features(task, ("ridge", Ridge(alpha=1.0)), forest)


def text_models(task: Task) -> Iterator[tuple[str, Model]]:
    from sklearn.decomposition import TruncatedSVD
    from sklearn.dummy import DummyClassifier
    from sklearn.ensemble import RandomForestClassifier
    from sklearn.feature_extraction.text import CountVectorizer, TfidfVectorizer
    from sklearn.linear_model import LogisticRegression, SGDClassifier
    from sklearn.naive_bayes import BernoulliNB, ComplementNB, MultinomialNB
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import FunctionTransformer
    from sklearn.tree import DecisionTreeClassifier

    def lengths(texts: pd.Series) -> np.ndarray:
        s = pd.Series(texts)
        return np.column_stack([s.str.len(), s.str.count("!"), s.str.split().str.len()]).astype(float)

    yield "constant-prior", DummyClassifier(strategy="prior")
    for seed in range(3):
        yield f"random-guess-s{seed}", DummyClassifier(strategy="stratified", random_state=seed)
    yield "length-logreg", make_pipeline(FunctionTransformer(lengths), LogisticRegression(max_iter=1000))
    yield (
        "length-tree-d3",
        make_pipeline(FunctionTransformer(lengths), DecisionTreeClassifier(max_depth=3, random_state=0)),
    )
    for vocab in (5, 20, 100, 1000, None):
        yield (
            f"bow{vocab}-multinomial-nb",
            make_pipeline(CountVectorizer(max_features=vocab, stop_words="english"), MultinomialNB()),
        )
    for vocab in (20, 2000):
        yield f"bow{vocab}-bernoulli-nb", make_pipeline(CountVectorizer(max_features=vocab, binary=True), BernoulliNB())
    yield "tfidf-complement-nb", make_pipeline(TfidfVectorizer(), ComplementNB())
    for vocab in (10, 50, 300):
        yield (
            f"bow{vocab}-logreg",
            make_pipeline(CountVectorizer(max_features=vocab), LogisticRegression(max_iter=2000)),
        )
    for c in (0.1, 1.0, 10.0):
        yield (
            f"tfidf-word-logreg-C{c}",
            make_pipeline(TfidfVectorizer(sublinear_tf=True, min_df=2), LogisticRegression(C=c, max_iter=2000)),
        )
    for c in (1.0, 10.0):
        yield (
            f"tfidf-1-2gram-logreg-C{c}",
            make_pipeline(
                TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True, min_df=2), LogisticRegression(C=c, max_iter=2000)
            ),
        )
    yield (
        "tfidf-char-logreg",
        make_pipeline(
            TfidfVectorizer(analyzer="char_wb", ngram_range=(2, 4), sublinear_tf=True, min_df=3),
            LogisticRegression(C=3.0, max_iter=2000),
        ),
    )
    for seed in range(3):
        yield (
            f"tfidf-sgd-s{seed}",
            make_pipeline(
                TfidfVectorizer(ngram_range=(1, 2), min_df=2),
                SGDClassifier(loss="log_loss", alpha=1e-4, random_state=seed),
            ),
        )
    yield (
        "tfidf-sgd-modified-huber",
        make_pipeline(
            TfidfVectorizer(ngram_range=(1, 2), min_df=2), SGDClassifier(loss="modified_huber", random_state=0)
        ),
    )
    for components in (2, 10, 100):
        yield (
            f"tfidf-svd{components}-logreg",
            make_pipeline(
                TfidfVectorizer(min_df=2),
                TruncatedSVD(n_components=components, random_state=0),
                LogisticRegression(max_iter=2000),
            ),
        )
    for vocab, n in ((100, 50), (1000, 100)):
        yield (
            f"bow{vocab}-forest-{n}",
            make_pipeline(
                CountVectorizer(max_features=vocab), RandomForestClassifier(n_estimators=n, random_state=0, n_jobs=1)
            ),
        )
    for depth in (2, 10):
        yield (
            f"bow1000-tree-d{depth}",
            make_pipeline(CountVectorizer(max_features=1000), DecisionTreeClassifier(max_depth=depth, random_state=0)),
        )


POPULATIONS: dict[str, Callable[[Task], Iterator[tuple[str, Model]]]] = {
    "binary": classifiers,
    "multiclass": classifiers,
    "regression": regressors,
    "text": text_models,
}


def _predict(model: Model, task: Task) -> np.ndarray:
    model.fit(task.x_train, task.y_train)
    if task.kind == "regression":
        return np.asarray(model.predict(task.x_test), dtype=float)
    proba = np.asarray(model.predict_proba(task.x_test), dtype=float)
    full = np.zeros((proba.shape[0], int(np.max(task.y_train)) + 1))
    full[:, model.classes_] = proba  # every class, even one a model never saw
    return full


# ---------------------------------------------------------------------------- the leaderboard


def reference_scores(competition_id: str, work: Path, source: Path | None = None) -> list[tuple[str, float, float]]:
    """Prepare the competition under ``work`` (from ``source``, its raw files, for one of your own) and grade
    every reference solution.

    Returns (name, score, seconds) per solution, in population order.
    """
    comp = registry.get(competition_id)
    outcome = prepare_competition(comp, work / "data", source=source)
    if outcome.status == "failed":
        raise RuntimeError(f"{competition_id}: {outcome.detail}")
    make_task = TASKS.get(competition_id) or declared_task(comp)
    task = make_task(work / "data" / competition_id / "prepared" / "public")
    scores = []
    for name, model in POPULATIONS[task.kind](task):
        started = time.monotonic()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            prediction = _predict(model, task)
        path = work / "submissions" / f"{name}.csv"
        path.parent.mkdir(parents=True, exist_ok=True)
        task.submission(task.ids, prediction).to_csv(path, index=False)
        report = grade(comp, path, work / "data")
        if not report.valid_submission or report.score is None:
            raise RuntimeError(f"{competition_id}: reference solution {name} is not valid: {report.error}")
        scores.append((name, float(f"{report.score:.8g}"), time.monotonic() - started))
    return scores


def build(competition_id: str, source: Path | None = None) -> tuple[Leaderboard, list[tuple[str, float, float]], float]:
    """The reference leaderboard of one practice competition (or one of your own), its population's scores, and
    seconds."""
    started = time.monotonic()
    comp = registry.get(competition_id)
    with tempfile.TemporaryDirectory(prefix="podium-practice-") as tmp:
        scores = reference_scores(competition_id, Path(tmp), source)
    board = Leaderboard.from_scores(
        [s for _, s, _ in scores], higher_is_better=comp.higher_is_better, source="reference"
    )
    return board, scores, time.monotonic() - started


def main(argv: list[str] | None = None) -> int:
    from concurrent.futures import ProcessPoolExecutor

    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("-c", "--competition", action="append", help="only these practice competitions")
    parser.add_argument("--check", action="store_true", help="compare with the files in place instead of writing")
    parser.add_argument("-j", "--jobs", type=int, default=2, help="competitions built at once (default 2)")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every reference solution's score")
    parser.add_argument("--competitions-dir", action="append", metavar="DIR", help="a folder of your declarations")
    parser.add_argument("--from", dest="source", metavar="RAW", help="the raw files of the one competition of yours")
    args = parser.parse_args(argv)
    if args.competitions_dir:
        from podium.declarations import use_dirs

        use_dirs(args.competitions_dir)
    ids = args.competition or registry.split_ids("practice")
    user = set(registry.split_ids("user"))
    unknown = sorted(set(ids) - set(TASKS) - user)
    if unknown:
        parser.error(f"no reference population for {', '.join(unknown)}; known: {', '.join(sorted(TASKS))}")
    if any(cid in user for cid in ids) and (args.source is None or len(ids) != 1):
        parser.error("a competition of your own is prepared from its raw files: one -c ID with --from RAW")
    source = Path(args.source) if args.source else None
    differ = 0
    with ProcessPoolExecutor(max_workers=max(1, args.jobs)) as pool:
        futures = [(cid, pool.submit(build, cid, source)) for cid in ids]
        for cid, future in futures:
            board, scores, seconds = future.result()
            if args.verbose:
                print(cid)
                for name, score, took in scores:
                    print(f"  {name:32} {score:<12.6g} {took:5.2f}s")
            text = json.dumps(board.to_dict(), indent=1) + "\n"
            path = registry.get(cid).folder / "leaderboard.json"
            status = "written"
            if args.check:
                same = path.is_file() and path.read_text(encoding="utf-8") == text
                status = "same" if same else "DIFFERS"
                differ += not same
            else:
                path.write_text(text, encoding="utf-8")
            print(
                f"{cid:24} teams {board.n_teams:3}  gold {board.gold:<11.6g} median {board.median:<11.6g} "
                f"{'higher' if board.higher_is_better else 'lower'} is better  {seconds:5.1f}s  {status}",
                flush=True,
            )
    return 1 if differ else 0


if __name__ == "__main__":
    raise SystemExit(main())

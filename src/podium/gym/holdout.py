"""The ``holdout`` task: a competition's *public* train re-split by podium, graded against the part it hides.

It never reads the private answers, so it is safe to train on any competition. From the prepared ``public/``
folder, podium takes the train table (the declared split's ``train_file``; ``train.csv`` for the practice suite),
splits its rows with the episode's split seed as the benchmark was split (the declared ``group`` column's values
kept to one side; the declared ``test_size``), and writes a data dir of its own:

- ``<id>/prepared/public/``: the visible train (``rows=N`` keeps N of its rows, stratified by the target where the
  target is a class), the hidden rows without their target columns as the test table, a sample submission (the
  hidden ids and each column's declared default) and the description;
- ``<id>/prepared/private/<answers>``: the hidden rows' ids and targets, which never enter the sandbox (only
  ``public/`` is mounted, as in every run).

The episode is graded by podium's grader with the competition's exact metric against those answers; the grade
carries no leaderboard placement (a holdout score is not comparable with Kaggle's teams), so a holdout episode
never counts a medal. Re-splits are cached by content (the public train's sha256, the seed, ``rows``) under
``DATA_DIR/.holdout/``, written to a temporary folder and renamed into place, so a crash leaves nothing half
written and two resets of the same key agree.

A competition has a holdout task when its answers are the submission's own columns read as a plain CSV (no
answer hooks, no extra answer columns or metric inputs) and it has a public train table; :func:`unsupported`
says why not otherwise, in a line (and ``docs/gym.md`` lists them, held to the code by a test).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from podium.competition import Competition
from podium.data.checksums import digest_tree, file_sha256
from podium.data.declared import split_spec
from podium.errors import UsageError
from podium.paths import MARKER, CompetitionPaths
from podium.records import GradeReport

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["HOLDOUT_DIR", "HOLDOUT_VERSION", "build_holdout", "no_placement", "require", "train_file", "unsupported"]

#: Where re-splits are cached, inside the data dir.
HOLDOUT_DIR = ".holdout"
#: Changes when the way podium re-splits changes (a new key for every cached re-split).
HOLDOUT_VERSION = 1
_DEFAULT_TEST_SIZE = 0.2
_CLASS_KINDS = ("label", "bool")
_FILE_KINDS = ("image", "video", "audio", "signal")
_MAX_TRAIN_BYTES = 2 << 30


def train_file(competition: Competition) -> str | None:
    """The public train table a holdout task re-splits (None: the competition declares none)."""
    spec = split_spec(competition)
    if spec is not None:
        return spec.train_file
    return "train.csv" if competition.complexity == "practice" else None


def unsupported(competition: Competition) -> str | None:
    """Why ``competition`` has no holdout task, from its definition alone (None: it has one)."""
    if train_file(competition) is None:
        return "its public data has no train table podium can re-split (no declared split)"
    spec = split_spec(competition)
    if (spec is not None and (spec.files or spec.tables)) or competition.data_kind.startswith(_FILE_KINDS):
        return "its rows come with files or tables of their own (images, audio, signals) that a re-split would move"
    if any(competition.hook(name) is not None for name in ("load_answers", "write_answers", "pair_rows")):
        return "its answers are read by its own code (hooks.py), not as the submission's columns"
    if competition.answer_columns or any(source != answer for source, answer in competition.targets):
        return "its answers hold columns the submission does not"
    if competition.metric.inputs or competition.metric.where:
        return "its metric reads answer columns beyond the submission's"
    if not competition.answers.endswith(".csv") or not competition.sample_submission.endswith(".csv"):
        return "its answers or sample submission are not CSV tables"
    return None


def require(competition: Competition) -> None:
    """Refuse, in one line, a competition without a holdout task (:func:`unsupported` says why)."""
    why = unsupported(competition)
    if why is not None:
        raise UsageError(
            f"{competition.id} has no holdout task: {why}. Fix: pass task='sealed' (allow_sealed=True on a "
            "benchmark competition), or pick one docs/gym.md lists."
        )


def _targets(competition: Competition) -> list[str]:
    return [c.name for c in competition.columns if c.name not in competition.id_columns]


def build_holdout(competition: Competition, data_dir: Path, split_seed: int, rows: int | None) -> Path:
    """The data dir of ``competition``'s holdout task for ``split_seed`` (and ``rows``), built once and cached;
    raises :class:`UsageError` in one line when it cannot be built."""
    require(competition)
    name = train_file(competition)
    assert name is not None
    source = CompetitionPaths(data_dir, competition.id).public / name
    if not source.is_file():
        raise UsageError(
            f"{competition.id}'s public train {source} is missing. Fix: podium prepare {competition.id} "
            "(or pass data_dir= where it is)."
        )
    if source.stat().st_size > _MAX_TRAIN_BYTES:
        raise UsageError(f"{competition.id}'s public train is over {_MAX_TRAIN_BYTES >> 30} GiB; podium re-splits "
                         "smaller tables only. Fix: pass task='sealed' with allow_sealed=True")  # fmt: skip
    source_sha256 = file_sha256(source)
    facts = [HOLDOUT_VERSION, competition.ref, source_sha256, split_seed, rows]
    key = hashlib.sha256(json.dumps(facts).encode()).hexdigest()[:20]
    cache = data_dir / HOLDOUT_DIR
    final = cache / f"{competition.id}-{key}"
    if (CompetitionPaths(final, competition.id).marker).is_file():
        return final
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{competition.id}-", dir=cache))
    try:
        _write(competition, source, source_sha256, CompetitionPaths(staging, competition.id), split_seed, rows)
        try:
            os.rename(staging, final)
        except OSError:  # another reset of the same key got there first: its folder is the same re-split
            if not CompetitionPaths(final, competition.id).marker.is_file():
                raise
    finally:
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(staging)
    return final


def _write(
    competition: Competition, source: Path, source_sha256: str, paths: CompetitionPaths, seed: int, rows: int | None
) -> None:
    import pandas as pd

    table = pd.read_csv(source, dtype=str, keep_default_na=False)  # cells as they are written
    targets = _targets(competition)
    missing = [c for c in [*competition.id_columns, *targets] if c not in table.columns]
    label = _label_column(competition, table) if missing and set(missing) <= set(targets) else None
    if missing and label is None:
        raise UsageError(
            f"{competition.id}'s public train has no column(s) {missing} of its submission; podium cannot re-split "
            "it. Fix: pass task='sealed' with allow_sealed=True"
        )
    train, hidden = _split(competition, table, seed)
    if rows is not None:
        if rows > len(train):
            raise UsageError(f"rows={rows} is more than the {len(train)} rows of {competition.id}'s holdout train "
                             f"(split seed {seed}). Fix: pass rows={len(train)} or fewer")  # fmt: skip
        train = _shrink(competition, train, rows, seed)
    public, private = paths.public, paths.private
    public.mkdir(parents=True)
    private.mkdir(parents=True)
    spec = split_spec(competition)
    test_name = (spec.test_file if spec is not None else None) or "test.csv"
    train.to_csv(public / source.name, index=False)
    answers = hidden[list(competition.id_columns)].copy()
    for name in targets:  # one 0/1 column per class where the train holds the class in one column
        answers[name] = hidden[name] if label is None else (hidden[label] == name).astype(int)
    hidden.drop(columns=targets if label is None else [label]).to_csv(public / test_name, index=False)
    answers.to_csv(private / competition.answers, index=False)
    defaults = {c.name: c.options.get("default", "") for c in competition.columns if c.name in targets}
    sample = hidden[list(competition.id_columns)].assign(**defaults)
    sample_path = paths.prepared / competition.sample_submission
    sample_path.parent.mkdir(parents=True, exist_ok=True)
    sample.to_csv(sample_path, index=False)
    description = source.parent / "description.md"
    if description.is_file():
        shutil.copyfile(description, public / "description.md")
    marker = {
        "competition_id": competition.id,
        "version": competition.version,
        "holdout": {"split_seed": seed, "rows": rows, "train": len(train), "hidden": len(hidden),
                    "source_sha256": source_sha256, "method": HOLDOUT_VERSION},
        "checksums": digest_tree(paths.prepared),
    }  # fmt: skip
    (paths.prepared / MARKER).write_text(json.dumps(marker, indent=1) + "\n", encoding="utf-8")


def _label_column(competition: Competition, table: pd.DataFrame) -> str | None:
    """The train's one column whose values are the submission's class columns (the submission one-hot, as the
    practice wine cultivars), or None."""
    targets = set(_targets(competition))
    candidates = [c for c in table.columns if c not in competition.id_columns and set(table[c]) <= targets]
    return candidates[0] if len(candidates) == 1 and table[candidates[0]].nunique() > 1 else None


def _split(competition: Competition, table: pd.DataFrame, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(visible train, hidden test) as the benchmark split: the declared group's values to one side each."""
    from sklearn.model_selection import train_test_split

    spec = split_spec(competition)
    group = spec.group if spec is not None and spec.group in table.columns else None
    if group is None:
        train, hidden = train_test_split(table, test_size=_test_size(competition, len(table)), random_state=seed)
    else:
        values = table[group].unique()
        size = _test_size(competition, len(values))
        _, hidden_values = train_test_split(values, test_size=size, random_state=seed)
        in_hidden = table[group].isin(set(hidden_values))
        train, hidden = table[~in_hidden], table[in_hidden]
    if len(train) == 0 or len(hidden) == 0:
        raise UsageError(f"{competition.id}'s public train has too few rows ({len(table)}) to hide some of them")
    return train.sort_index(), hidden.sort_index()


def _test_size(competition: Competition, n: int) -> float | int:
    """The declared test size for ``n`` rows (or groups): a fraction as declared; a count as declared where the
    public train has five times as many, else a fifth of it (the public train is smaller than the raw one)."""
    spec = split_spec(competition)
    size = spec.resolved_test_size(n) if spec is not None else None
    if size is None or (isinstance(size, float) and not 0 < size < 1):
        return _DEFAULT_TEST_SIZE
    if isinstance(size, int) and size * 5 > n:
        return max(1, n // 5)
    return size


def _shrink(competition: Competition, train: pd.DataFrame, rows: int, seed: int) -> pd.DataFrame:
    """``rows`` rows of ``train``, stratified by the target when it is one class column with room for it."""
    from sklearn.model_selection import train_test_split

    if rows == len(train):
        return train
    targets = [c for c in competition.columns if c.name not in competition.id_columns]
    stratify = None
    label = _label_column(competition, train) if any(c.name not in train.columns for c in targets) else None
    if label is not None or (len(targets) == 1 and (targets[0].kind in _CLASS_KINDS or "values" in targets[0].options)):
        labels = train[label or targets[0].name]
        counts = labels.value_counts()
        if counts.min() >= 2 and rows >= len(counts) and len(train) - rows >= len(counts):
            stratify = labels
    kept, _ = train_test_split(train, train_size=rows, random_state=seed, stratify=stratify)
    return kept.sort_index()


def no_placement(grade: GradeReport) -> None:
    """A holdout grade: the score only; no leaderboard, medal or percentile (its test is podium's re-split)."""
    grade.gold_threshold = grade.silver_threshold = grade.bronze_threshold = grade.median_threshold = None
    grade.any_medal = grade.gold_medal = grade.silver_medal = grade.bronze_medal = grade.above_median = False
    grade.percentile, grade.rank, grade.n_teams = None, None, None
    grade.leaderboard = "holdout: none (podium's re-split of the public train)"
    grade.other_versions = []

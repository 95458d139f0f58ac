"""jigsaw-unintended-bias-in-toxicity-classification: the original private test set with its labels.

Facts implemented: no new split. public/train.csv is the raw train.csv unchanged; public/test.csv
holds id and comment_text of test_private_expanded.csv; private/test.csv is a verbatim copy of
test_private_expanded.csv (45 columns); the sample submission holds id and prediction 0.0. The raw
test.csv, test_public_expanded.csv and sample submission are not used.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

IDENTITIES = (
    "male",
    "female",
    "transgender",
    "other_gender",
    "heterosexual",
    "homosexual_gay_or_lesbian",
    "bisexual",
    "other_sexual_orientation",
    "christian",
    "jewish",
    "muslim",
    "hindu",
    "buddhist",
    "atheist",
    "other_religion",
    "black",
    "white",
    "asian",
    "latino",
    "other_race_or_ethnicity",
    "physical_disability",
    "intellectual_or_learning_disability",
    "psychiatric_or_mental_illness",
    "other_disability",
)
META = (
    "created_date",
    "publication_id",
    "parent_id",
    "article_id",
    "rating",
    "funny",
    "wow",
    "sad",
    "likes",
    "disagree",
)
SUBTYPES = ("severe_toxicity", "obscene", "sexual_explicit", "identity_attack", "insult", "threat")
COUNTS = ("identity_annotator_count", "toxicity_annotator_count")


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Write public/ and private/ from raw/ (the same data for every version)."""
    import pandas as pd

    shutil.copyfile(raw / "train.csv", public / "train.csv")
    shutil.copyfile(raw / "test_private_expanded.csv", private / "test.csv")
    test = pd.read_csv(
        raw / "test_private_expanded.csv", usecols=["id", "comment_text"], dtype=str, keep_default_na=False
    )
    test.to_csv(public / "test.csv", index=False)
    test[["id"]].assign(prediction=0.0).to_csv(public / "sample_submission.csv", index=False)

    train_ids = set(pd.read_csv(raw / "train.csv", usecols=["id"], dtype=str)["id"])
    assert not train_ids & set(test["id"])
    assert test["id"].is_unique
    assert len(pd.read_csv(private / "test.csv", usecols=["id"])) == len(test)
    assert "toxicity" not in test.columns


def _comments(rng: np.random.Generator, n: int) -> list[str]:
    words = np.array(["well", "that, is", "a", '"quoted"', "idea", "stupid", "great\nnews", "people"])
    return [" ".join(rng.choice(words, 5)) for _ in range(n)]


def _table(rng: np.random.Generator, ids: np.ndarray, target: str) -> dict[str, object]:
    n = len(ids)
    annotated = np.arange(n) % 3 != 2  # identities are left empty on unannotated comments
    identity = {name: np.where(annotated, rng.choice([0.0, 0.3, 0.5, 1.0], n), np.nan).round(6) for name in IDENTITIES}
    meta = {name: rng.integers(0, 5, n) for name in META}
    meta["created_date"] = np.array(["2017-01-01 10:00:00.000000+00"] * n)
    meta["rating"] = rng.choice(np.array(["approved", "rejected"]), n)
    return {
        "id": ids,
        "comment_text": _comments(rng, n),
        **meta,
        target: np.resize([0.0, 0.2, 0.6, 1.0], n),
        **{name: rng.choice([0.0, 0.1, 0.6], n) for name in SUBTYPES},
        **identity,
        "identity_annotator_count": np.where(annotated, 4, 0),
        "toxicity_annotator_count": rng.integers(4, 10, n),
    }


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """train.csv (30 rows) and test_private_expanded.csv (240 rows, the 45 real columns), plus unused files."""
    import pandas as pd

    pd.DataFrame(_table(rng, np.arange(59848, 59878), "target")).to_csv(raw / "train.csv", index=False)
    test_ids = np.arange(7000000, 7000240)
    pd.DataFrame(_table(rng, test_ids, "toxicity")).to_csv(raw / "test_private_expanded.csv", index=False)
    pd.DataFrame(_table(rng, np.arange(7100000, 7100010), "toxicity")).to_csv(
        raw / "test_public_expanded.csv", index=False
    )
    pd.DataFrame({"id": [7100000], "comment_text": ["x"]}).to_csv(raw / "test.csv", index=False)
    pd.DataFrame({"id": [7100000], "prediction": [0.0]}).to_csv(raw / "sample_submission.csv", index=False)

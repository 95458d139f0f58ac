"""AI4Code: whole fork families go to test until exactly 20,000 notebooks (facts: split, public, private).

Facts implemented: train_ancestors.csv is shuffled with ``sample(frac=1, random_state=0)``;
notebooks are grouped by ancestor_id (groups in order of first appearance in the shuffled table)
and each whole group goes to test if it still fits within TEST_SIZE notebooks, else to train
(exactly TEST_SIZE asserted). Public: train/{id}.json and test/{id}.json (raw JSON copied),
train_orders.csv of the new train, train_ancestors.csv (shuffled order) without test ids, and a
sample submission listing each test notebook's cell ids in the key order of its cell_type map;
private test_orders.csv (id, cell_order) in raw train_orders.csv order. A raw folder with no more
than TEST_SIZE notebooks (the tiny generated fixture only) sends a tenth of them to test instead.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np

TEST_SIZE = 20_000


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd

    ancestors = pd.read_csv(raw / "train_ancestors.csv", dtype=str, keep_default_na=False)
    ancestors = ancestors.sample(frac=1, random_state=0).reset_index(drop=True)
    test_size = TEST_SIZE if len(ancestors) > TEST_SIZE else len(ancestors) // 10
    groups: dict[str, list[str]] = {}
    for notebook, ancestor in zip(ancestors["id"], ancestors["ancestor_id"], strict=True):
        groups.setdefault(ancestor, []).append(notebook)
    test_ids: set[str] = set()
    for members in groups.values():
        if len(test_ids) + len(members) <= test_size:
            test_ids.update(members)
    train_ids = [i for i in ancestors["id"] if i not in test_ids]

    orders = pd.read_csv(raw / "train_orders.csv", dtype=str, keep_default_na=False)
    in_test = orders["id"].isin(test_ids)
    orders[~in_test].to_csv(public / "train_orders.csv", index=False)
    test_orders = orders[in_test]
    test_orders.to_csv(private / "test_orders.csv", index=False)
    ancestors[~ancestors["id"].isin(test_ids)].to_csv(public / "train_ancestors.csv", index=False)
    for folder, ids in (("train", train_ids), ("test", sorted(test_ids))):
        (public / folder).mkdir()
        for notebook in ids:
            shutil.copyfile(raw / "train" / f"{notebook}.json", public / folder / f"{notebook}.json")
    sample = [
        " ".join(json.loads((public / "test" / f"{notebook}.json").read_text())["cell_type"])
        for notebook in test_orders["id"]
    ]
    pd.DataFrame({"id": test_orders["id"], "cell_order": sample}).to_csv(public / "sample_submission.csv", index=False)

    assert len(test_ids) == test_size == len(test_orders)
    assert len(train_ids) + len(test_ids) == len(ancestors)
    train_groups = set(ancestors.loc[~ancestors["id"].isin(test_ids), "ancestor_id"])
    assert not train_groups & set(ancestors.loc[ancestors["id"].isin(test_ids), "ancestor_id"])


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """40 notebooks: train/{id}.json (cell_type, source), train_orders.csv, train_ancestors.csv with a few fork families."""
    import pandas as pd

    n = 40
    ids = [f"{int(v):014x}" for v in rng.choice(2**52, n, replace=False)]
    family = [ids[i - 1] if i % 7 in (1, 2) else ids[i] for i in range(n)]
    ancestor = [f"{int(v):08x}" for v in rng.choice(2**31, n, replace=False)]
    pd.DataFrame(
        {
            "id": ids,
            "ancestor_id": [ancestor[ids.index(f)] for f in family],
            "parent_id": [f if f != i else "" for i, f in zip(ids, family, strict=True)],
        }
    ).to_csv(raw / "train_ancestors.csv", index=False)
    (raw / "train").mkdir()
    orders = []
    for notebook in ids:
        cells = [f"{int(v):08x}" for v in rng.choice(2**31, int(rng.integers(2, 9)), replace=False)]
        kinds = ["code" if rng.random() < 0.6 else "markdown" for _ in cells]
        listed = [c for c, k in zip(cells, kinds, strict=True) if k == "code"]
        listed += list(rng.permutation([c for c, k in zip(cells, kinds, strict=True) if k == "markdown"]))
        kind_of = dict(zip(cells, kinds, strict=True))
        document = {
            "cell_type": {c: kind_of[c] for c in listed},
            "source": {c: ("import numpy as np" if kind_of[c] == "code" else "# Notes") for c in listed},
        }
        (raw / "train" / f"{notebook}.json").write_text(json.dumps(document))
        orders.append(" ".join(cells))
    pd.DataFrame({"id": ids, "cell_order": orders}).to_csv(raw / "train_orders.csv", index=False)

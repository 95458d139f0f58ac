"""H&M recommendations: a temporal split of transactions_train.csv (facts: split, public, private).

Facts implemented: t_dat parsed as a date; transactions with t_dat >= max date - 7 days (8
calendar days inclusive) are the test window, the rest the new public transactions_train.csv.
article_id is read as an integer, so its leading zero is lost in the public transactions and in
the answers. Private answers.csv: one row per customer who bought in the window (pandas groupby
order), prediction = their article ids space-joined in transaction order. articles.csv,
customers.csv, images/ and Kaggle's sample_submission.csv (all customers) are copied verbatim.
"""

from __future__ import annotations

import io
import shutil
from pathlib import Path

import numpy as np

TRAIN_COLUMNS = ["t_dat", "customer_id", "article_id", "price", "sales_channel_id"]
POPULAR = "0706016001 0706016002 0372860001 0610776002 0759871002 0464297007 0372860002 0610776001 0399223001 0706016003 0720125001 0156231001"


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    import pandas as pd

    old = pd.read_csv(raw / "transactions_train.csv")
    dates = pd.to_datetime(old["t_dat"])
    in_test = dates >= dates.max() - pd.Timedelta(days=7)
    train, test = old[~in_test], old[in_test]
    answers = (
        test.groupby("customer_id")["article_id"]
        .apply(lambda items: " ".join(items.astype(str)))
        .reset_index()
        .rename(columns={"article_id": "prediction"})
    )

    train.to_csv(public / "transactions_train.csv", index=False)
    answers.to_csv(private / "answers.csv", index=False)
    for name in ("sample_submission.csv", "articles.csv", "customers.csv"):
        shutil.copyfile(raw / name, public / name)
    shutil.copytree(raw / "images", public / "images")

    assert len(train) + len(test) == len(old) and len(test) > 0
    assert list(train.columns) == TRAIN_COLUMNS and list(answers.columns) == ["customer_id", "prediction"]
    assert answers["customer_id"].is_unique
    assert pd.to_datetime(train["t_dat"]).max() < pd.to_datetime(test["t_dat"]).min()
    sample_ids = set(pd.read_csv(public / "sample_submission.csv", usecols=["customer_id"])["customer_id"])
    assert set(answers["customer_id"]) <= sample_ids


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """transactions_train.csv (300 rows over 40 days), articles.csv, customers.csv, images/0NN/<article>.jpg, sample_submission.csv."""
    import pandas as pd
    from PIL import Image

    articles = sorted({*POPULAR.split(), *(f"0{int(v)}" for v in rng.integers(108775015, 959461001, 18))})
    customers = [f"{int(a):032x}{int(b):032x}" for a, b in rng.integers(0, 2**62, (30, 2))]
    n = 300
    days = np.sort(rng.integers(0, 40, n))
    pd.DataFrame(
        {
            "t_dat": (pd.Timestamp("2020-08-14") + pd.to_timedelta(days, unit="D")).strftime("%Y-%m-%d"),
            "customer_id": rng.choice(customers, n),
            "article_id": rng.choice(articles, n),
            "price": rng.choice([0.016932203389830508, 0.0304915254237288, 0.0508305084745762], n),
            "sales_channel_id": rng.integers(1, 3, n),
        }
    ).to_csv(raw / "transactions_train.csv", index=False)
    pd.DataFrame(
        {
            "article_id": articles,
            "product_code": [a[:7] for a in articles],
            "prod_name": rng.choice(["Strap top", "OP T-shirt (Idro)", "Jade HW Skinny Denim TRS"], len(articles)),
            "product_type_name": rng.choice(["Vest top", "Bra", "Trousers"], len(articles)),
            "colour_group_name": rng.choice(["Black", "White", "Light Beige"], len(articles)),
            "detail_desc": "Jersey top with narrow shoulder straps.",
        }
    ).to_csv(raw / "articles.csv", index=False)
    pd.DataFrame(
        {
            "customer_id": customers,
            "FN": rng.choice([1.0, np.nan], 30),
            "Active": rng.choice([1.0, np.nan], 30),
            "club_member_status": "ACTIVE",
            "fashion_news_frequency": rng.choice(["NONE", "Regularly"], 30),
            "age": rng.integers(18, 80, 30),
            "postal_code": [f"{int(v):064x}" for v in rng.integers(0, 2**62, 30)],
        }
    ).to_csv(raw / "customers.csv", index=False)
    pd.DataFrame({"customer_id": customers, "prediction": POPULAR}).to_csv(raw / "sample_submission.csv", index=False)
    for article in articles[::4]:
        (raw / "images" / article[:3]).mkdir(parents=True, exist_ok=True)
        buffer = io.BytesIO()
        Image.new("RGB", (6, 8), tuple(int(c) for c in rng.integers(0, 256, 3))).save(buffer, "JPEG")
        (raw / "images" / article[:3] / f"{article}.jpg").write_bytes(buffer.getvalue())

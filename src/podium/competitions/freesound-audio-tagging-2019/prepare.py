"""freesound-audio-tagging-2019: the original test set's Private rows with the released labels.

Facts implemented: no new split. public/ is a verbatim copy of the raw Kaggle download
(train_curated.csv, train_noisy.csv, sample_submission.csv and the audio archives or folders), less
anything named FSDKaggle2019.meta*. The labels come from test_post_competition.csv (fname, labels
comma-separated, usage) inside FSDKaggle2019.meta.zip (Zenodo record 3612637): raw/ may hold the zip
or its extracted folder, otherwise it is downloaded to a temporary folder. The rows with usage
"Private" must be exactly the fnames of the Kaggle sample submission; private/test.csv holds fname
and the 80 class columns (many-hot 0/1, in the sample submission's column order).
"""

from __future__ import annotations

import io
import shutil
import tempfile
import zipfile
from pathlib import Path
from typing import Any

import numpy as np

META = "FSDKaggle2019.meta"
META_URL = "https://zenodo.org/record/3612637/files/FSDKaggle2019.meta.zip?download=1"
LABELS = f"{META}/test_post_competition.csv"


def _released_labels(raw: Path) -> Any:
    import pandas as pd

    if (raw / LABELS).is_file():
        return pd.read_csv(raw / LABELS)
    archive = raw / f"{META}.zip"
    if archive.is_file():
        with zipfile.ZipFile(archive) as handle:
            return pd.read_csv(io.BytesIO(handle.read(LABELS)))
    import urllib.request

    with tempfile.TemporaryDirectory() as folder:
        downloaded = Path(folder) / archive.name
        try:
            urllib.request.urlretrieve(META_URL, downloaded)
        except OSError as exc:
            raise FileNotFoundError(
                2, f"the test labels are not in raw/ and the download from {META_URL} failed ({exc})", archive.name
            ) from exc
        with zipfile.ZipFile(downloaded) as handle:
            return pd.read_csv(io.BytesIO(handle.read(LABELS)))


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Write public/ and private/ from raw/ (the same data for every version)."""
    import pandas as pd

    sample = pd.read_csv(raw / "sample_submission.csv")
    classes = list(sample.columns[1:])
    released = _released_labels(raw)
    test = released[released["usage"] == "Private"].set_index("fname")
    assert len(test) == len(sample) and set(test.index) == set(sample["fname"]), "Private rows != sample submission"
    labels = test.loc[sample["fname"], "labels"].str.split(",")
    answers = pd.DataFrame({"fname": sample["fname"]})
    for name in classes:
        answers[name] = [int(name in row) for row in labels]
    assert (answers[classes].sum(axis=1) > 0).all() and set().union(*labels) <= set(classes)
    answers.to_csv(private / "test.csv", index=False)
    for path in sorted(raw.iterdir()):
        if path.name.startswith(META):
            continue
        if path.is_dir():
            shutil.copytree(path, public / path.name)
        else:
            shutil.copyfile(path, public / path.name)

    assert (public / "sample_submission.csv").is_file() and not list(public.glob(f"{META}*"))
    train_names = set(pd.read_csv(public / "train_curated.csv")["fname"]) | set(
        pd.read_csv(public / "train_noisy.csv")["fname"]
    )
    assert not train_names & set(answers["fname"])


def _wav(rng: np.random.Generator) -> bytes:
    from podium.fixtures import wav_bytes

    return wav_bytes(rng, framerate=44100, frames=200)


def _zip_of_wavs(path: Path, folder: str, names: list[str], rng: np.random.Generator) -> None:
    with zipfile.ZipFile(path, "w") as handle:
        for name in names:
            handle.writestr(f"{folder}/{name}" if folder else name, _wav(rng))


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """Curated/noisy train tables and wav zips, a 12-clip test zip, the sample submission and the labels zip."""
    import pandas as pd

    from podium import registry

    classes = [str(c) for c in registry.get("freesound-audio-tagging-2019").column_names[1:]]

    def tags(n: int) -> list[str]:
        return [",".join(rng.choice(classes, int(rng.integers(1, 3)), replace=False)) for _ in range(n)]

    hexes = [f"{int(v):08x}.wav" for v in rng.choice(2**32, 36, replace=False)]
    curated, noisy, test, public_test = hexes[:8], hexes[8:16], hexes[16:28], hexes[28:]
    pd.DataFrame({"fname": curated, "labels": tags(8)}).to_csv(raw / "train_curated.csv", index=False)
    pd.DataFrame({"fname": noisy, "labels": tags(8)}).to_csv(raw / "train_noisy.csv", index=False)
    _zip_of_wavs(raw / "train_curated.zip", "", curated, rng)
    _zip_of_wavs(raw / "train_noisy.zip", "", noisy, rng)
    _zip_of_wavs(raw / "test.zip", "", test, rng)
    sample = pd.DataFrame({"fname": test, **{c: 0 for c in classes}})
    sample.to_csv(raw / "sample_submission.csv", index=False)
    usage = ["Private"] * len(test) + ["Public"] * len(public_test)
    released = pd.DataFrame({"fname": test + public_test, "labels": tags(len(usage)), "usage": usage})
    with zipfile.ZipFile(raw / f"{META}.zip", "w") as handle:
        handle.writestr(LABELS, released.to_csv(index=False))

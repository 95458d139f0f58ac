"""mlsp-2013-birds: hold out a fifth of the labelled recordings and renumber them.

Facts implemented: mlsp_contest_dataset.zip (or its extracted folder) is read; the CVfolds_2.txt rows
with fold 0 (the labelled recordings, 322) are kept, ``sample(frac=0.2, random_state=0)`` of them
become the test fold (64 on the real data), and every kept recording gets rec_id = its position
among them. public/essential_data and public/supplemental_data hold the kept recordings' rows and
files (wavs and bmps copied, the text tables filtered and remapped, headers kept);
rec_labels_test_hidden.txt shows "?" for test recordings and just the id for label-less ones.
private/answers.csv has Id = rec_id * 100 + species (0..18) and Probability 0/1 for each test
recording; the sample submission has the same Ids with Probability 0.
"""

from __future__ import annotations

import io
import shutil
import tempfile
import zipfile
from pathlib import Path

import numpy as np

DATASET = "mlsp_contest_dataset"
BMP_FOLDERS = ("filtered_spectrograms", "segmentation_examples", "spectrograms", "supervised_segmentation")
TABLES = ("histogram_of_segments.txt", "segment_features.txt", "segment_rectangles.txt")
REAL_COUNTS = {322: 64}  # labelled recordings -> test recordings, as asserted on the real data


def _rows(path: Path) -> tuple[str, list[list[str]]]:
    header, *lines = path.read_text().splitlines()
    return header, [line.split(",") for line in lines if line.strip()]


def _write_rows(path: Path, header: str, rows: list[list[str]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join([header, *(",".join(row) for row in rows)]) + "\n")


def _remapped(path: Path, new_ids: dict[str, int]) -> tuple[str, list[list[str]]]:
    header, rows = _rows(path)
    return header, [[str(new_ids[row[0]]), *row[1:]] for row in rows if row[0] in new_ids]


def _prepare(source: Path, public: Path, private: Path) -> None:
    import pandas as pd

    essential, supplemental = source / "essential_data", source / "supplemental_data"
    folds = pd.read_csv(essential / "CVfolds_2.txt", dtype=str)
    labelled = folds[folds["fold"] == "0"].reset_index(drop=True)
    test_positions = set(labelled.sample(frac=0.2, random_state=0).index)
    assert REAL_COUNTS.get(len(labelled), len(test_positions)) == len(test_positions)
    new_ids = {rec: i for i, rec in enumerate(labelled["rec_id"])}
    is_test = [i in test_positions for i in range(len(labelled))]
    out = public / "essential_data"
    _write_rows(out / "CVfolds_2.txt", "rec_id,fold", [[str(i), str(int(t))] for i, t in enumerate(is_test)])
    header, names = _remapped(essential / "rec_id2filename.txt", new_ids)
    _write_rows(out / "rec_id2filename.txt", header, names)
    shutil.copyfile(essential / "species_list.txt", out / "species_list.txt")
    n_species = len(_rows(essential / "species_list.txt")[1])
    _, label_rows = _remapped(essential / "rec_labels_test_hidden.txt", new_ids)
    labels = {int(row[0]): [s for s in row[1:] if s.strip()] for row in label_rows}
    assert all("?" not in species for species in labels.values())
    shown = [[str(i), "?"] if is_test[i] else [str(i), *labels.get(i, [])] for i in range(len(labelled))]
    _write_rows(out / "rec_labels_test_hidden.txt", "rec_id,[labels]", shown)
    answers = [
        (rec * 100 + s, int(str(s) in labels.get(rec, [])))
        for rec in range(len(labelled))
        if is_test[rec]
        for s in range(n_species)
    ]
    frame = pd.DataFrame(answers, columns=["Id", "Probability"])
    frame.to_csv(private / "answers.csv", index=False)
    frame[["Id"]].assign(Probability=0).to_csv(public / "sample_submission.csv", index=False)
    filenames = [row[1] for row in names]
    (out / "src_wavs").mkdir()
    for name in filenames:
        shutil.copyfile(essential / "src_wavs" / f"{name}.wav", out / "src_wavs" / f"{name}.wav")
    for folder in BMP_FOLDERS:
        (public / "supplemental_data" / folder).mkdir(parents=True)
        for name in filenames:
            if (supplemental / folder / f"{name}.bmp").is_file():
                shutil.copyfile(
                    supplemental / folder / f"{name}.bmp", public / "supplemental_data" / folder / f"{name}.bmp"
                )
    for name in ("segment_clusters.bmp", "segment_mosaic.bmp"):
        shutil.copyfile(supplemental / name, public / "supplemental_data" / name)
    for name in TABLES:
        _write_rows(public / "supplemental_data" / name, *_remapped(supplemental / name, new_ids))

    assert len(frame) == sum(is_test) * n_species and frame["Id"].is_unique
    assert len(filenames) == len(labelled) == len(list((out / "src_wavs").iterdir()))


def prepare(raw: Path, public: Path, private: Path, *, version: int) -> None:
    """Write public/ and private/ from raw/ (the same split for every version)."""
    if (raw / DATASET).is_dir():
        _prepare(raw / DATASET, public, private)
        return
    with tempfile.TemporaryDirectory() as folder, zipfile.ZipFile(raw / f"{DATASET}.zip") as archive:
        archive.extractall(folder)
        _prepare(Path(folder) / DATASET, public, private)


def _wav(rng: np.random.Generator) -> bytes:
    from podium.fixtures import wav_bytes

    return wav_bytes(rng, framerate=16000, frames=100)


def _bmp(rng: np.random.Generator) -> bytes:
    from PIL import Image

    buffer = io.BytesIO()
    Image.fromarray(rng.integers(0, 256, (4, 6), dtype=np.uint8)).save(buffer, format="BMP")
    return buffer.getvalue()


def make_raw(raw: Path, rng: np.random.Generator) -> None:
    """mlsp_contest_dataset.zip: 25 recordings (20 labelled, 5 hidden), their wavs, bmps and segment tables."""
    n, species = 25, 19
    folds = [int(i % 5 == 2) for i in range(n)]
    names = [f"PC{1 + i % 4}_2009060{i % 9}_05{i:04d}_0010" for i in range(n)]
    files: dict[str, str | bytes] = {
        "essential_data/CVfolds_2.txt": "rec_id,fold\n" + "".join(f"{i},{f}\n" for i, f in enumerate(folds)),
        "essential_data/rec_id2filename.txt": "rec_id,filename\n" + "".join(f"{i},{m}\n" for i, m in enumerate(names)),
        "essential_data/species_list.txt": "class_id,code,species\n"
        + "".join(f"{s},SP{s:02d},Species {s}\n" for s in range(species)),
    }
    labels = []
    for i, fold in enumerate(folds):
        tags = (
            sorted(rng.choice(species, int(rng.integers(0, 3)), replace=False).tolist()) if i % 7 else [i % species, 3]
        )
        labels.append(f"{i},?" if fold else ",".join(map(str, [i, *tags])))
    files["essential_data/rec_labels_test_hidden.txt"] = "rec_id,[labels]\n" + "\n".join(labels) + "\n"
    histogram = "".join(f"{i}," + ",".join(f"{v:.6f}" for v in rng.random(4)) + "\n" for i in range(n))
    files["supplemental_data/histogram_of_segments.txt"] = "rec_id,[histogram of segment features]\n" + histogram
    segments = [(i, k) for i in range(n) for k in range(int(rng.integers(0, 3)))]
    files["supplemental_data/segment_features.txt"] = "rec_id,segment_id,[feature vector]\n" + "".join(
        f"{i},{k}," + ",".join(f"{v:.6f}" for v in rng.random(3)) + "\n" for i, k in segments
    )
    files["supplemental_data/segment_rectangles.txt"] = "rec_id,segment_id,min_x,max_x,min_y,max_y,\n" + "".join(
        f"{i},{k},1,9,2,8,\n" for i, k in segments
    )
    for name in names:
        files[f"essential_data/src_wavs/{name}.wav"] = _wav(rng)
        for folder in ("filtered_spectrograms", "spectrograms", "supervised_segmentation"):
            files[f"supplemental_data/{folder}/{name}.bmp"] = _bmp(rng)
    files[f"supplemental_data/segmentation_examples/{names[0]}.bmp"] = _bmp(rng)
    files["supplemental_data/segment_clusters.bmp"] = _bmp(rng)
    files["supplemental_data/segment_mosaic.bmp"] = _bmp(rng)
    with zipfile.ZipFile(raw / f"{DATASET}.zip", "w") as archive:
        for name, content in files.items():
            archive.writestr(f"{DATASET}/{name}", content)

"""The description the agent reads (``description.md``) of a new competition: Kaggle's pages or the user's own
text, then what podium's prepare gives the agent: the files and their columns, the metric, and the submission's
format with an example row (the prepared files differ from Kaggle's: the test set is cut from the train table).
"""

from __future__ import annotations

from typing import Any

from podium.author.infer import Tables, Targets
from podium.author.kaggle_meta import KaggleFacts
from podium.author.write import clean

__all__ = ["MAX_DESCRIPTION", "description"]

#: The most characters of a description file (or of Kaggle's pages) kept.
MAX_DESCRIPTION = 200_000


def _cell(value: Any) -> str:
    text = str(value)
    return f'"{text}"' if any(c in text for c in ',"\n') else text


def description(
    name: str, tables: Tables, targets: Targets, decl: dict[str, Any], *, facts: KaggleFacts | None, text: str | None
) -> str:
    """``description.md``'s text."""
    parts = [f"# {name}", ""]
    if facts is not None and facts.pages:
        for title, content in facts.pages:
            parts += [f"## {title.strip().replace('-', ' ').capitalize()}", "", content.strip(), ""]
    elif text:
        parts += [text.strip(), ""]
    else:
        predicted = ", ".join(f"`{t}`" for t in dict.fromkeys(targets.sources))
        parts += ["## Goal", "", f"Predict {predicted} for each row of `test.csv` from its other columns.", ""]
    split = decl["prepare"]["split"]
    dropped = ", ".join(f"`{c}`" for c in split["drop_from_test"])
    parts += [
        "## Files in this folder (as podium prepares them)",
        "",
        f"- `train.csv`: the labelled rows: {', '.join(f'`{c}`' for c in tables.profiles)}.",
        f"- `test.csv`: the rows to predict, the same columns without {dropped}.",
        "- `sample_submission.csv`: every test row with a constant prediction, in the submission's format.",
    ]
    for rule in split.get("files", []):
        parts.append(f"- `{rule['train'].removeprefix('public/')}` and `{rule['test'].removeprefix('public/')}`: "
                     "one file per train and test row.")  # fmt: skip
    parts.append("")
    metric = decl["metric"]
    better = "higher" if metric["higher_is_better"] is True else "lower"
    columns = list(decl["columns"])
    example = [
        str(tables.train_frame[c].iloc[0]) if c in targets.ids and len(tables.train_frame) else "" for c in columns
    ]
    example = [
        e or str(spec.get("default", "")) if isinstance(spec, dict) else e
        for e, spec in zip(example, decl["columns"].values(), strict=True)
    ]
    parts += [
        "## Metric",
        "",
        f"`{metric['name']}` ({better} is better)."
        if isinstance(metric["higher_is_better"], bool)
        else f"{metric['name']}",
        "",
        "## Submission format",
        "",
        f"A CSV with header `{','.join(columns)}` and one row per test row:",
        "",
        "```",
        ",".join(map(_cell, columns)),
        ",".join(map(_cell, example)),
        "```",
        "",
    ]
    return clean("\n".join(parts))[: MAX_DESCRIPTION + 10_000]

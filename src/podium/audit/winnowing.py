"""podium's own winnowing, the plagiarism check's engine where Node or Dolos is missing.

The same scheme and defaults as Dolos (Schleimer, Wilkerson and Aiken's winnowing: hashes of every
k-gram of tokens, k = 23; in each window of 17 consecutive hashes the rightmost smallest is kept as a
fingerprint), over tokens from Python's own :mod:`tokenize` instead of Dolos's tree-sitter syntax tree:
names become ``NAME`` (so renaming a variable changes nothing), literals become their kind, comments
and blank lines are dropped, keywords and operators stay themselves. A pair's similarity is Dolos's
formula: the fingerprints of either file that the other shares, over both files' fingerprints.

The numbers are close to Dolos's but not equal (the tokens differ); the audit names the engine it used.
"""

from __future__ import annotations

import hashlib
import io
import keyword
import tokenize
from dataclasses import dataclass

__all__ = ["KGRAM", "WINDOW", "Fingerprints", "Match", "compare", "fingerprint", "python_tokens"]

#: Dolos's default k-gram length (tokens) and winnowing window (k-grams).
KGRAM, WINDOW = 23, 17
_BY_KIND = {tokenize.STRING, tokenize.NUMBER, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
_SKIP = {tokenize.COMMENT, tokenize.NL, tokenize.ENCODING, tokenize.ENDMARKER, tokenize.TYPE_COMMENT}


def python_tokens(source: str) -> list[tuple[str, int]]:
    """The source's tokens as ``(token, line)``; text that does not tokenize yields the tokens before the error."""
    out: list[tuple[str, int]] = []
    try:
        for token in tokenize.generate_tokens(io.StringIO(source).readline):
            if token.type in _SKIP:
                continue
            if token.type == tokenize.NAME:
                text = token.string if keyword.iskeyword(token.string) else "NAME"
            elif token.type in _BY_KIND:
                text = tokenize.tok_name[token.type]
            else:
                text = token.string
            out.append((text, token.start[0]))
    except (tokenize.TokenError, IndentationError, SyntaxError):
        pass  # a truncated or broken file: compare what came before the error
    return out


@dataclass(frozen=True)
class Fingerprints:
    """A file's selected k-gram hashes, each with the first and last line of its k-gram."""

    hashes: tuple[int, ...]
    lines: tuple[tuple[int, int], ...]


def _hash(tokens: list[str]) -> int:
    return int.from_bytes(hashlib.blake2b("\x1f".join(tokens).encode(), digest_size=8).digest(), "big")


def fingerprint(source: str, k: int = KGRAM, window: int = WINDOW) -> Fingerprints:
    """Winnow the source's token k-grams: in each window the rightmost smallest hash, each selection once."""
    tokens = python_tokens(source)
    texts = [t for t, _ in tokens]
    grams = [_hash(texts[i : i + k]) for i in range(len(texts) - k + 1)]
    chosen: list[int] = []
    for start in range(max(len(grams) - window + 1, 1 if grams else 0)):
        span = grams[start : start + window]
        low = min(span)
        position = start + max(i for i, value in enumerate(span) if value == low)
        if not chosen or chosen[-1] != position:
            chosen.append(position)
    return Fingerprints(tuple(grams[i] for i in chosen), tuple((tokens[i][1], tokens[i + k - 1][1]) for i in chosen))


@dataclass(frozen=True)
class Match:
    """One pair's similarity and its matched fragments: ``((left first, left last), (right first, right last))``."""

    similarity: float
    fragments: tuple[tuple[tuple[int, int], tuple[int, int]], ...]


def compare(left: Fingerprints, right: Fingerprints) -> Match:
    """Dolos's pair similarity, ``(left covered + right covered) / (left total + right total)``, and fragments."""
    shared = set(left.hashes) & set(right.hashes)
    left_covered = sum(h in shared for h in left.hashes)
    right_covered = sum(h in shared for h in right.hashes)
    total = len(left.hashes) + len(right.hashes)
    similarity = (left_covered + right_covered) / total if total else 0.0
    return Match(similarity, _fragments(left, right, shared))


def _fragments(
    left: Fingerprints, right: Fingerprints, shared: set[int]
) -> tuple[tuple[tuple[int, int], tuple[int, int]], ...]:
    """Runs of shared fingerprints that follow each other in both files, as line ranges."""
    first_right: dict[int, int] = {}
    for j, value in enumerate(right.hashes):
        first_right.setdefault(value, j)
    runs: list[list[tuple[int, int]]] = []  # (left index, right index)
    for i, value in enumerate(left.hashes):
        if value not in shared:
            continue
        j = first_right[value]
        if runs and 0 < j - runs[-1][-1][1] <= 2 and i - runs[-1][-1][0] <= 2:
            runs[-1].append((i, j))
        else:
            runs.append([(i, j)])
    out = []
    for run in runs:
        (i0, j0), (i1, j1) = run[0], run[-1]
        out.append(((left.lines[i0][0], left.lines[i1][1]), (right.lines[j0][0], right.lines[j1][1])))
    return tuple(out)

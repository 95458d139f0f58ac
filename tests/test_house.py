"""The house rules that keep podium easy to live in (issue 37): no module in ``src/`` or ``benchmarks/`` over 400
lines, and a package's ``__init__.py`` that only says what the package offers (at most 40 lines of code: not
counting blank lines, comments and the module's docstring)."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 400
MAX_INIT_CODE = 40


def _modules() -> list[Path]:
    found = [p for folder in ("src", "benchmarks") for p in sorted((ROOT / folder).rglob("*.py"))]
    return [p for p in found if ".venv" not in p.parts and "build" not in p.parts]


def code_lines(source: str) -> int:
    """Lines of code in ``source``: not blank, not a comment, not the module's docstring."""
    tree = ast.parse(source)
    docstring: set[int] = set()
    first = tree.body[0] if tree.body else None
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
        docstring = set(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    lines = source.splitlines()
    return sum(
        1 for i, line in enumerate(lines, 1) if line.strip() and not line.strip().startswith("#") and i not in docstring
    )


def test_code_lines_counts_code_only() -> None:
    source = '"""A docstring\n\nover lines."""\n\n# a comment\nfrom x import y  # trailing\n\n__all__ = ["y"]\n'
    assert code_lines(source) == 2
    assert code_lines("x = 1\n") == 1 and code_lines("") == 0


def test_no_module_is_over_400_lines() -> None:
    modules = _modules()
    assert len(modules) > 300  # the walk found the house, not an empty folder
    over = {str(p.relative_to(ROOT)): n for p in modules if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert over == {}, f"split these along their seams (one job per file): {over}"


def test_every_package_init_only_says_what_the_package_offers() -> None:
    inits = [p for p in _modules() if p.name == "__init__.py"]
    assert len(inits) > 15
    over = {str(p.relative_to(ROOT)): n for p in inits if (n := code_lines(p.read_text())) > MAX_INIT_CODE}
    assert over == {}, f"move the logic out of these __init__.py files (re-exports only): {over}"

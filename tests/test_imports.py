"""The house rules of podium's imports, read from the source (``ast``, nothing imported): no circle between
modules, and no import from a lower stage into a higher one. The stages are the block ``stages`` of
docs/architecture.md, lowest first: a package imports only packages of lower lines (never one beside it on
its own line), and any module of its own package. Every import counts, a function's as much as a module's."""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"
ARCHITECTURE = REPO / "docs" / "architecture.md"


@dataclass(frozen=True)
class Import:
    """One import statement of ``source`` (a module) that reaches ``target`` (a module of podium)."""

    source: str
    target: str
    path: Path
    line: int
    type_only: bool  # under `if TYPE_CHECKING:`: never runs

    def __str__(self) -> str:
        return f"{self.path.relative_to(REPO)}:{self.line} imports {self.target}"


def module_name(path: Path) -> str:
    parts = list(path.relative_to(SRC).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(path): path for path in sorted((SRC / "podium").rglob("*.py"))}


def _resolve(name: str) -> str | None:
    """The podium module an imported name lives in: the name itself, or the nearest module above it."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        test = node.test if isinstance(node, ast.If) else None
        if test is not None and "TYPE_CHECKING" in ast.unparse(test):
            for child in node.body:
                lines |= set(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imports_of(module: str) -> list[Import]:
    """Every import of podium in ``module``, at any depth (functions, branches), each once per target."""
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
    type_only = _type_checking_lines(tree)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: dict[str, Import] = {}
    for node in ast.walk(tree):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up level - 1
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([node.module] if node.module else [])])
            # `from A import b` imports the module A.b when there is one, else a name of A
            names = [f"{base}.{a.name}" if f"{base}.{a.name}" in MODULES else base for a in node.names]
        for name in names:
            target = _resolve(name) if name.split(".")[0] == "podium" else None
            if target and target != module and target not in found:
                found[target] = Import(module, target, path, node.lineno, node.lineno in type_only)
    return sorted(found.values(), key=lambda i: i.line)


GRAPH = {module: imports_of(module) for module in MODULES}


def stages() -> dict[str, int]:
    """The stage of each package of podium (``podium`` itself is the top-level API), from docs/architecture.md."""
    block = re.search(r"^```stages\n(.*?)^```", ARCHITECTURE.read_text(encoding="utf-8"), re.M | re.S)
    assert block, f"{ARCHITECTURE} has no ```stages block"
    order: dict[str, int] = {}
    lines = [line.split("#")[0].split() for line in block.group(1).splitlines()]
    for level, names in enumerate(line for line in lines if line):
        for name in names:
            assert name not in order, f"{name} is on two lines of the stages block"
            order[name] = level
    return order


def package_of(module: str) -> str:
    """``podium.grading.check`` -> ``grading``; ``podium`` (its ``__init__``) -> ``podium``."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "podium"


def test_every_package_has_a_stage() -> None:
    order = stages()
    missing = sorted({package_of(m) for m in MODULES} - set(order))
    assert not missing, f"packages with no line in the stages block of {ARCHITECTURE.name}: {missing}"


def test_no_import_reaches_up_or_sideways() -> None:
    order = stages()
    wrong = []
    for imports in GRAPH.values():
        for imp in imports:
            source, target = package_of(imp.source), package_of(imp.target)
            if source != target and target in order and order.get(source, -1) <= order[target]:
                where = "beside it" if order.get(source) == order[target] else "above it"
                wrong.append(
                    f"{imp}: {target} is {where} ({source} is on stage {order.get(source)}, {target} on {order[target]})"
                )
    assert not wrong, "imports against the stages of docs/architecture.md:\n" + "\n".join(wrong)


def find_cycle(graph: dict[str, list[Import]]) -> list[Import] | None:
    """One circle of imports (each import of it, in order), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[Import] = []

    def visit(module: str) -> list[Import] | None:
        state[module] = 1
        for imp in graph.get(module, []):
            if imp.type_only:
                continue
            if state.get(imp.target) == 1:
                start = next(i for i, step in enumerate(path) if step.source == imp.target) if path else 0
                return [*path[start:], imp]
            if imp.target not in state:
                path.append(imp)
                found = visit(imp.target)
                if found:
                    return found
                path.pop()
        state[module] = 2
        return None

    for module in graph:
        if module not in state:
            found = visit(module)
            if found:
                return found
    return None


def test_no_circle_between_modules() -> None:
    cycle = find_cycle(GRAPH)
    assert cycle is None, "a circle of imports:\n" + "\n".join(f"  {imp}" for imp in cycle)


def test_the_checks_see_what_they_must(tmp_path: Path) -> None:
    """The graph holds a function's import, a relative one, and `from A import module`; the cycle finder finds a
    circle through them (the test above would fail on one)."""
    jsonl = {imp.target: imp for imp in GRAPH["podium.grading.jsonl"]}
    assert "podium.records" in jsonl and "podium.registry" in jsonl  # `from podium import registry` is the module
    text = {imp.target: imp for imp in GRAPH["podium.metrics.text"]}
    assert "podium.arrow" in text and text["podium.arrow"].line > 80  # imported inside a function
    a = Import("a", "b", SRC / "a.py", 3, type_only=False)
    b = Import("b", "a", SRC / "b.py", 7, type_only=False)
    assert find_cycle({"a": [a], "b": [b]}) == [a, b]
    assert find_cycle({"a": [a], "b": [Import("b", "a", SRC / "b.py", 7, type_only=True)]}) is None


@pytest.mark.parametrize("source", ["podium.grading.jsonl", "podium.agents.mlebench"])
def test_the_two_circles_of_issue_19_are_gone(source: str) -> None:
    targets = {imp.target for imp in GRAPH[source]}
    assert "podium.report" not in targets and "podium.agents" not in targets

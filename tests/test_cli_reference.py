"""docs/commands.md is what the parser prints: regenerate it with `python -m podium.cli.reference > docs/commands.md`."""

from __future__ import annotations

from pathlib import Path

from podium.cli.reference import reference

PAGE = Path(__file__).resolve().parents[1] / "docs" / "commands.md"


def test_the_command_reference_is_the_parsers_own_help():
    made = reference()
    assert PAGE.read_text() == made, "docs/commands.md is stale: run python -m podium.cli.reference > docs/commands.md"
    for command in ("podium run", "podium report", "podium bundle verify", "podium serve"):
        assert f"\n## {command}\n" in made


def test_the_page_does_not_depend_on_the_terminal_width(monkeypatch):
    monkeypatch.setenv("COLUMNS", "40")  # the page does not depend on the terminal it is made in
    assert reference() == PAGE.read_text()

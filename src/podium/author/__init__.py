"""Authoring competitions: ``podium check`` (nothing counts until it passes) and the conformance checks it shares
with the test suite."""

from podium.author.check import CheckReport, Finding, check_competition

__all__ = ["CheckReport", "Finding", "check_competition"]

"""Authoring competitions: ``podium new`` writes a declaration in the registry's own schema (:mod:`podium.schema`),
from Kaggle or from the files a user has; ``podium check`` refuses one that is broken or leaks (nothing counts until
it passes), with the conformance checks it shares with the test suite.

Modules of ``new``: ``new`` (the command's one function), ``kaggle_meta`` (what Kaggle says, with its client),
``rawfiles`` (the raw files, read without following links), ``columns`` (what a column holds), ``infer`` (tables,
ids and targets), ``layout`` (the split and the files that follow rows), ``submission`` (the submission's columns),
``metric_names`` (Kaggle's metric names to podium's), ``declare`` (the declaration), ``describe`` (the agent's
description), ``write`` (the commented YAML and the folder, written whole). Of ``check``: ``check`` (the checks),
``conformance`` (the conformance suite's checks), ``leakscan`` and the modules beside it (the statistical leak scan).
"""

from podium.author.check import CheckReport, Finding, check_competition
from podium.author.new import NewRequest, Written, new_competition

__all__ = ["CheckReport", "Finding", "NewRequest", "Written", "check_competition", "new_competition"]

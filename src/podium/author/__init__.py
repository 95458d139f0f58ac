"""Authoring competitions: ``podium new`` writes a declaration in the registry's own schema (:mod:`podium.schema`),
from Kaggle or from the files a user has.

Modules: ``new`` (the command's one function), ``kaggle_meta`` (what Kaggle says, with its client), ``rawfiles``
(the raw files, read without following links), ``columns`` (what a column holds), ``infer`` (tables, ids and
targets), ``layout`` (the split and the files that follow rows), ``submission`` (the submission's columns),
``metric_names`` (Kaggle's metric names to podium's), ``declare`` (the declaration), ``describe`` (the agent's
description), ``write`` (the commented YAML and the folder, written whole).
"""

from podium.author.new import NewRequest, Written, new_competition

__all__ = ["NewRequest", "Written", "new_competition"]

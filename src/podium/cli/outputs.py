"""One up-front check of where a command will write, so an ordinary mistake (a folder where a file is meant, a
file where a folder is meant, a folder podium may not write in) is a one-line refusal before any work starts
(:mod:`podium.outputs`, which the gym's ``runs_dir=`` is checked with too)."""

from __future__ import annotations

from podium.outputs import output_dir, output_file

__all__ = ["output_dir", "output_file"]

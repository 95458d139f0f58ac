"""Publishing: what leaves the machine, and what lets someone else check it.

- :mod:`~podium.publish.runs`: the runs of the run groups published, each with its version-1 grade;
- :mod:`~podium.publish.export`: ``podium export mlebench``, the files of a leaderboard pull request
  (:mod:`~podium.publish.texts`: the row, the hardware line, the disclosure);
- :mod:`~podium.publish.bundle`: ``podium bundle create``, a streamed tar.gz of the runs with their static
  pages and a manifest (:mod:`~podium.publish.bundlefiles`: its files and their hashes);
  :mod:`~podium.publish.verify`: ``podium bundle verify``, which reads it with its own tar reader
  (:mod:`~podium.publish.tarstream`, :mod:`~podium.publish.unpack`), re-grades and re-audits every run
  found in it on the verifier's data (:mod:`~podium.publish.recheck`), checks each record's other fields against
  the bundle's own evidence (:mod:`~podium.publish.evidence`), shows seeds that repeat another
  (:mod:`~podium.publish.seeds`) and checks the author's signature (:mod:`~podium.publish.signing`).

See docs/publishing.md.
"""

from __future__ import annotations

from podium.publish.export import export_mlebench
from podium.publish.runs import PublishedRun, collect_runs

__all__ = ["PublishedRun", "collect_runs", "export_mlebench"]

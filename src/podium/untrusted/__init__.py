"""What the harness reads from an agent, a node or a bundle: one toolkit for hostile input.

Every stage that reads something another party wrote (a run folder, a tar from a node, a bundle, a request
body, a log the judge reads) goes through these helpers, so each rule is written once:

- :mod:`~podium.untrusted.names`: text from outside made safe to print (:func:`printable`);
- :mod:`~podium.untrusted.files`: opening a file without following a link, only when it is a regular file,
  reading it bounded (:func:`open_regular`, :func:`read_bounded`, :func:`iter_chunks`, :func:`open_beneath`);
- :mod:`~podium.untrusted.jsondoc`: JSON bounded in size and depth, with one error for every way it can fail
  (:func:`loads`, :func:`loads_object`, :func:`iter_json_lines`);
- :mod:`~podium.untrusted.archive`: the one tar reader (headers parsed by :mod:`~podium.untrusted.tarheaders`,
  pax keys and member kinds on an allowlist, a policy per caller: :data:`BUNDLE`, :data:`RUN_FOLDER`), and
  :mod:`~podium.untrusted.extract`, which writes exactly the members it accepts, or nothing (imported from
  their modules, so that a caller that only parses JSON does not load the archive reader).
"""

from podium.untrusted.files import iter_chunks, open_beneath, open_regular, read_bounded, regular_size
from podium.untrusted.jsondoc import (
    JSON_MAX_BYTES,
    JSON_MAX_DEPTH,
    RECORD_MAX_BYTES,
    UntrustedJSONError,
    iter_json_lines,
    loads,
    loads_object,
    read_json,
)
from podium.untrusted.names import printable

__all__ = [
    "JSON_MAX_BYTES",
    "JSON_MAX_DEPTH",
    "RECORD_MAX_BYTES",
    "UntrustedJSONError",
    "iter_chunks",
    "iter_json_lines",
    "loads",
    "loads_object",
    "open_beneath",
    "open_regular",
    "printable",
    "read_bounded",
    "read_json",
    "regular_size",
]

"""``podium serve``: a live, read-only dashboard of a runs folder (Starlette + Jinja2, on uvicorn).

- :mod:`~podium.serve.index`: the runs folder and its SQLite index, opened ``mode=ro``;
- :mod:`~podium.serve.runfiles`: a run's files read without following links, within caps;
- :mod:`~podium.serve.journal`: the search tree of podium's agent or AIDE;
- :mod:`~podium.serve.redact`: keys, tokens and private answers' paths kept off every page;
- :mod:`~podium.serve.security`: the token gate, allowed hosts and headers;
- :mod:`~podium.serve.pages` and :mod:`~podium.serve.app`: what each page shows, and the routes;
- :mod:`~podium.serve.server`: the command's checks and uvicorn.

Needs the ``serve`` extra (``pip install 'podium[serve]'``). See docs/serving.md.
"""

from __future__ import annotations

from podium.serve.app import create_app
from podium.serve.index import RunsIndex
from podium.serve.redact import Redactor
from podium.serve.server import serve

__all__ = ["Redactor", "RunsIndex", "create_app", "serve"]

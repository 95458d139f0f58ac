"""The dashboard as an ASGI app (Starlette, pages from Jinja2 templates): :func:`create_app`.

    /                                         run groups, and every run in progress
    /group/<group>?page=N                     a group's settings, summary and finished runs (from the index)
    /run/<group>/<competition>/<seed>         a run: grade, resources, logs, validation and LLM calls, journal
    /run/<group>/<competition>/<seed>/node/<id>   one journal node: its plan, code and output
    /api/live                                 the runs in progress (JSON)
    /api/run/<group>/<competition>/<seed>/log/<stdout|stderr>   a log's tail (JSON), polled by the run page

Every name in a URL is looked up among the runs folder's entries and the index before anything is
read (:class:`~podium.serve.index.RunsIndex`); anything else is a 404. Every string a page or an
endpoint prints passes through the :class:`~podium.serve.redact.Redactor`.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup
from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.middleware import Middleware
from starlette.middleware.trustedhost import TrustedHostMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.templating import Jinja2Templates

from podium.paths import RunPaths
from podium.serve import pages
from podium.serve.index import RunsIndex, safe_name
from podium.serve.redact import Redactor
from podium.serve.runfiles import LOGS, live_samples, read_record, resource_charts, tail
from podium.serve.security import SecurityHeaders, TokenGate

__all__ = ["create_app"]

_HERE = Path(__file__).parent
#: How often (ms) a page showing a run in progress asks for its log tail.
POLL_MS = 1000


def create_app(
    runs_dir: Path,
    *,
    token: str | None = None,
    allowed_hosts: list[str] | None = None,
    redactor: Redactor | None = None,
    poll_ms: int = POLL_MS,
) -> Starlette:
    """The dashboard over ``runs_dir`` (read-only). With ``token``, every request must carry it; with
    ``allowed_hosts``, only those ``Host`` headers are answered (see :mod:`podium.serve.security`)."""
    index = RunsIndex(runs_dir)
    redact = redactor or Redactor.from_environment([token] if token else [])
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(_HERE / "templates"),
        autoescape=True,
        finalize=lambda value: _finalized(redact, value),
    )
    env.filters["duration"] = pages.duration
    env.filters["number"] = _number
    env.globals["poll_ms"] = poll_ms
    templates = Jinja2Templates(env=env)

    def render(request: Request, name: str, context: dict[str, Any], status: int = 200) -> Response:
        return templates.TemplateResponse(request, name, context, status_code=status)

    def data(value: Any) -> JSONResponse:
        return JSONResponse(redact.value(value))

    def found_run(request: Request) -> tuple[str, str, int, Path, bool]:
        group, competition, seed = (request.path_params[k] for k in ("group", "competition", "seed"))
        if not (safe_name(group) and safe_name(competition)):
            raise HTTPException(404, "no such run")
        located = index.run_folder(group, competition, seed)
        if located is None:
            raise HTTPException(404, f"no run {group}/{competition}/{seed} in this runs folder")
        return group, competition, int(seed), *located

    async def home(request: Request) -> Response:
        summaries = index.summaries()
        return render(
            request,
            "index.html.j2",
            {"root": runs_dir, "has_index": index.db_path.is_file(), "groups": summaries,
             "live": pages.live_rows(index.live())},
        )  # fmt: skip

    async def group(request: Request) -> Response:
        name = request.path_params["group"]
        if not index.has_group(name):
            raise HTTPException(404, f"no run group {name!r} in this runs folder")
        page = request.query_params.get("page", "1")
        return render(request, "group.html.j2", pages.group_page(index, name, int(page) if page.isdigit() else 1))

    async def run(request: Request) -> Response:
        group_name, competition, seed, folder, live = found_run(request)
        context = pages.run_page(index, group_name, competition, seed, folder, live)
        context["tree"] = pages.tree(context["journal"]) if context["journal"] else []
        context["base"] = f"/run/{group_name}/{competition}/{seed}"
        return render(request, "run.html.j2", context)

    async def node(request: Request) -> Response:
        group_name, competition, seed, folder, live = found_run(request)
        context = pages.node_page(folder, request.path_params["node"])
        if context is None:
            raise HTTPException(404, "no such node in this run's journal")
        where = {"group": group_name, "competition_id": competition, "seed": seed, "live": live}
        return render(request, "node.html.j2", {**context, **where, "base": f"/run/{group_name}/{competition}/{seed}"})

    async def live_api(request: Request) -> Response:
        return data({"runs": pages.live_rows(index.live())})

    async def log_api(request: Request) -> Response:
        name = request.path_params["log"]
        if name not in LOGS:
            raise HTTPException(404, "no such log")
        _, _, _, folder, live = found_run(request)
        end = tail(folder, folder / "logs" / LOGS[name])
        return data({"text": end.text, "size": end.size, "cut": end.cut, "exists": end.exists, "live": live})

    async def resources_api(request: Request) -> Response:
        _, _, _, folder, live = found_run(request)
        run_files = RunPaths(folder)
        record = None if live else read_record(run_files)
        samples = live_samples(run_files) if live else ((record or {}).get("agent_result") or {}).get("samples") or []
        return data({"charts": resource_charts(samples), "live": live})

    async def not_found(request: Request, exc: Exception) -> Response:
        status = exc.status_code if isinstance(exc, HTTPException) else 500
        detail = exc.detail if isinstance(exc, HTTPException) else "internal error"
        if request.url.path.startswith("/api/"):
            return JSONResponse({"error": redact.text(str(detail))}, status_code=status)
        return PlainTextResponse(redact.text(f"{status}: {detail}\n"), status_code=status)

    segment = "{group}/{competition}/{seed}"
    routes = [
        Route("/", home),
        Route("/group/{group}", group),
        Route(f"/run/{segment}", run),
        Route(f"/run/{segment}/node/{{node}}", node),
        Route("/api/live", live_api),
        Route(f"/api/run/{segment}/log/{{log}}", log_api),
        Route(f"/api/run/{segment}/resources", resources_api),
        Mount("/static", StaticFiles(directory=_HERE / "static"), name="static"),
    ]
    middleware = [Middleware(SecurityHeaders)]
    if allowed_hosts is not None:
        middleware.append(Middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts))
    if token:
        middleware.append(Middleware(TokenGate, token=token))
    return Starlette(routes=routes, middleware=middleware, exception_handlers={HTTPException: not_found})


def _finalized(redact: Redactor, value: Any) -> Any:
    """What a template prints: every value redacted (markup the app made itself stays markup)."""
    if value is None:
        return ""
    if isinstance(value, Markup):
        return Markup(redact.text(str(value)))
    if isinstance(value, (int, float)):
        return value
    return redact.text(str(value))


def _number(value: Any, digits: int = 5) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return "-"
    return f"{value:.{digits}g}"

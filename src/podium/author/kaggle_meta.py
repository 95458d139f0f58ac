"""What ``podium new`` asks Kaggle, with the official client: a competition's metadata, its pages, its file list,
its whole leaderboard, its top public notebooks, and its data.

Which calls exist and how they page was read from the installed ``kaggle``/``kagglesdk``: ``GetCompetition``
(deadline, evaluation metric, category, team count, whether submissions are notebooks only), ``ListCompetitionPages``,
``ListDataFiles`` and ``GetLeaderboard`` (both paged by ``nextPageToken``), ``ListKernels``. ``GetLeaderboard``
returns the private leaderboard once a competition has one (ended) and the public one before, at most a page of
rows per call: ``KaggleApi.competition_leaderboard_view`` makes one call and only prints the next token, which is
how a harness that calls it takes thresholds from 20 teams. Here every page is read, and the rows are checked
against the team count. Credentials, unknown ids and unaccepted rules go through ``podium.data.kaggle``'s own
checks and messages.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from podium.data import kaggle
from podium.data.leaderboard_csv import parse_score
from podium.errors import PrepareError

__all__ = ["MAX_PAGES", "NOTEBOOKS", "KaggleFacts", "fetch_facts"]

#: Pages of a paged call read at most (a board of 20 rows a page: 200,000 teams).
MAX_PAGES = 10_000
#: The top public notebooks kept, as the published benchmark kept them (by votes).
NOTEBOOKS = 50
#: Fewer leaderboard rows than this share of the team count: the board is not whole.
_WHOLE = 0.95


@dataclass(frozen=True)
class KaggleFacts:
    """One competition as Kaggle describes it."""

    id: str
    title: str
    deadline: dt.datetime | None
    category: str
    evaluation_metric: str
    team_count: int
    code_only: bool
    awards_points: bool
    pages: tuple[tuple[str, str], ...]  # (title, content) of the description, evaluation and data pages
    files: tuple[tuple[str, int], ...]  # (name, bytes)
    scores: tuple[float, ...]  # the leaderboard's scores, best first
    board_rows: int  # its rows, a score or not
    board_pages: int
    board: str  # "private" or "public"
    last_submission: str | None
    notebooks: tuple[str, ...]


def _call(what: str, competition_id: str, source: str, fn: Callable[[], Any]) -> Any:
    import requests

    try:
        with contextlib.redirect_stdout(sys.stderr):
            return fn()
    except requests.HTTPError as exc:
        status = kaggle.status_of(exc)
        if status == 401:
            raise kaggle.rejected_credentials(source, f"HTTP 401: {exc}") from exc
        if status == 404:
            raise PrepareError(f"Kaggle knows no competition named {competition_id} (HTTP 404)") from exc
        raise PrepareError(f"Kaggle answered HTTP {status} for {competition_id}'s {what}: {exc}") from exc
    except requests.RequestException as exc:
        raise PrepareError(f"cannot reach Kaggle for {competition_id}'s {what}: {exc}") from exc


@dataclass(frozen=True)
class _Asker:
    """The calls of one competition's RPCs, each one's HTTP errors said as ``podium.data.kaggle`` says them."""

    competition_id: str
    source: str  # where the credentials came from
    service: Any  # kagglesdk's CompetitionApiClient

    def _request(self, kind: type, **fields: Any) -> Any:
        made = kind()
        made.competition_name = self.competition_id
        for name, value in fields.items():
            setattr(made, name, value)
        return made

    def one(self, what: str, method: str, kind: type, **fields: Any) -> Any:
        return _call(what, self.competition_id, self.source, lambda: getattr(self.service, method)(
            self._request(kind, **fields)))  # fmt: skip

    def paged(self, what: str, method: str, kind: type, items: str) -> tuple[list[Any], int]:
        """Every page of a call paged by ``nextPageToken`` (stopping at a token seen before): the items, the pages."""
        found: list[Any] = []
        token, seen = "", set()
        for number in range(1, MAX_PAGES + 1):
            response = self.one(what, method, kind, page_token=token)
            found += list(getattr(response, items) or [])
            token = response.next_page_token or ""
            if not token or token in seen:
                return found, number
            seen.add(token)
        return found, MAX_PAGES


def fetch_facts(competition_id: str, *, data: bool = True) -> KaggleFacts:
    """Everything ``podium new`` reads from Kaggle of ``competition_id`` but the data (PrepareError, one line, for
    missing or rejected credentials, an unknown competition, a leaderboard not whole, and, where the data will be
    downloaded (``data``), rules not accepted)."""
    from kagglesdk.competitions.types.competition_api_service import (
        ApiGetCompetitionRequest,
        ApiGetLeaderboardRequest,
        ApiListCompetitionPagesRequest,
        ApiListDataFilesRequest,
    )

    pending = kaggle.preflight([competition_id]) if data else []  # the id and the rules, in prepare's words
    if pending:
        raise PrepareError(
            f"{competition_id}: Kaggle refuses its data until its rules are accepted: accept them at "
            f"{pending[0].rules_url} (signed in as the account whose credentials podium uses), then run again"
        )
    api, source = kaggle.kaggle_client()
    with contextlib.redirect_stdout(sys.stderr), api.build_kaggle_client() as client:
        ask = _Asker(competition_id, source, client.competitions.competition_api_client)
        meta = ask.one("metadata", "get_competition", ApiGetCompetitionRequest)
        pages = ask.one("pages", "list_competition_pages", ApiListCompetitionPagesRequest)
        files, _ = ask.paged("files", "list_data_files", ApiListDataFilesRequest, "files")
        rows, board_pages = ask.paged("leaderboard", "get_leaderboard", ApiGetLeaderboardRequest, "submissions")
    notebooks = _notebooks(api, competition_id, source)
    deadline = meta.deadline.replace(tzinfo=dt.UTC) if meta.deadline and meta.deadline.tzinfo is None else meta.deadline
    facts = KaggleFacts(
        id=competition_id,
        title=str(meta.title or competition_id),
        deadline=deadline,
        category=str(meta.category or ""),
        evaluation_metric=str(meta.evaluation_metric or ""),
        team_count=int(meta.team_count or 0),
        code_only=bool(meta.is_kernels_submissions_only),
        awards_points=bool(meta.awards_points),
        pages=_chosen_pages(pages.pages or []),
        files=tuple((str(f.name or f.ref), int(f.total_bytes or 0)) for f in files),
        scores=tuple(s for s in (parse_score(str(r.score or "")) for r in rows) if s is not None),
        board_rows=len(rows),
        board_pages=board_pages,
        board="private" if deadline is not None and deadline <= dt.datetime.now(dt.UTC) else "public",  # Kaggle's rule
        last_submission=max((str(r.submission_date) for r in rows if r.submission_date), default=None),
        notebooks=notebooks,
    )
    _check_whole(facts)
    return facts


def _page_rank(name: str) -> int | None:
    """Where a page goes in the description: the overview, the evaluation, the data; None: not at all (rules,
    prizes, timeline, citation)."""
    lowered = name.lower()
    for rank, words in enumerate((("data",), ("evaluation",), ("description", "overview", "abstract"))):
        if any(word in lowered for word in words):
            return 2 - rank
    return None


def _chosen_pages(pages: list[Any]) -> tuple[tuple[str, str], ...]:
    ranked = [(_page_rank(str(p.name or "")), str(p.name or ""), str(p.content or "")) for p in pages]
    kept = [(rank, name, content) for rank, name, content in ranked if rank is not None and content.strip()]
    return tuple((name, content) for _, name, content in sorted(kept, key=lambda page: page[0]))


def _notebooks(api: Any, competition_id: str, source: str) -> tuple[str, ...]:
    response = _call("notebooks", competition_id, source, lambda: api.kernels_list_with_response(
        page=1, page_size=NOTEBOOKS, competition=competition_id, sort_by="voteCount"))  # fmt: skip
    refs = [str(k.ref) for k in (response.kernels or []) if str(k.ref or "").count("/") == 1]
    return tuple(dict.fromkeys(refs))[:NOTEBOOKS]


def _check_whole(facts: KaggleFacts) -> None:
    if not facts.scores:
        raise PrepareError(
            f"{facts.id}: Kaggle's leaderboard has no scores ({facts.board_rows} rows). Fix: pass --leaderboard FILE "
            f"(the CSV from https://www.kaggle.com/c/{facts.id}/leaderboard), or nothing for a competition without medals"
        )
    if facts.team_count and facts.board_rows < _WHOLE * facts.team_count:
        raise PrepareError(
            f"{facts.id}: Kaggle's leaderboard gave {facts.board_rows} rows in {facts.board_pages} page(s), but its "
            f"metadata counts {facts.team_count} teams: medal thresholds from a part of the board are not Kaggle's. "
            f"Fix: download the leaderboard CSV from https://www.kaggle.com/c/{facts.id}/leaderboard and pass "
            "--leaderboard FILE"
        )

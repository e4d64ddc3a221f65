"""The explorer's web app: one page and the JSON it asks for, on Starlette.

Routes (every design parameter of :mod:`~flightcheck.checks.interactive.design` is accepted by each):

- ``GET /``: the page (``page.html``); it reads its own URL, so any state's URL opens that state; the bare
  ``/`` of an app started on a design (``flightcheck explorer --variant V``) redirects to that design's URL;
- ``GET /page.js``: the page's script;
- ``GET /favicon.ico``: the page's icon (an SVG), so a browser's request for it is no 404;
- ``GET /api/state?...&path=a,b&at=N``: the state after the first ``N`` actions of the path
  (:func:`~flightcheck.checks.interactive.view.state_view`);
- ``GET /api/counterexample?...[&property=P]``: the shortest violation, as the query that opens it;
- ``GET /api/violations?...``: every property the design breaks, each with the query that opens its
  shortest counterexample (:func:`~flightcheck.checks.interactive.loading.violations`);
- ``GET /api/compare?...&path=...&field=KNOB``: the path under another value of any knob;
- ``POST /api/load?kind=log|path``: an engine event log or a replay file in the body (at most
  :data:`MAX_UPLOAD_BYTES`), answered with the query that opens it;
- ``GET /api/choices``: scenarios, variants, properties, each string knob's values and every knob's
  control (:func:`~flightcheck.checks.interactive.design.knobs`, read from ``spec/knobs.py``) for the
  page's menus, and the legend of its state picture.

A bad input is a 4xx with ``{"error": "..."}`` naming what is wrong (400 a bad parameter or file, 404 an
unknown route or log, 413 an upload too large); the app keeps serving.
"""

from __future__ import annotations

from importlib import resources
from typing import Any
from urllib.parse import urlencode

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from flightcheck.checks.inputs import InputError
from flightcheck.checks.interactive.design import (
    OPTIONS, BadQuery, Design, LoadedLog, UnknownLog, design_from_query, knobs,
)
from flightcheck.checks.interactive.loading import compare, counterexample, engine_log, replay_file, violations
from flightcheck.checks.interactive.view import legend, parse_path, replay, state_view
from flightcheck.spec.knobs import KNOBS
from flightcheck.spec.scenario import SCALE_SCENARIOS, SCENARIOS
from flightcheck.spec.properties import PROPERTIES
from flightcheck.spec.variants import VARIANTS

#: The largest log or path file the page may upload.
MAX_UPLOAD_BYTES = 4 << 20
#: The page's icon: one leader and its two followers.
FAVICON = ('<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16"><circle cx="8" cy="4" r="3" fill="#36c"/>'
           '<circle cx="4" cy="12" r="2.5" fill="#9ac"/><circle cx="12" cy="12" r="2.5" fill="#9ac"/></svg>')
#: How many loaded logs the app keeps (the oldest is dropped first).
MAX_LOGS = 32


class ExplorerApp:
    """The app and what it remembers: the engine logs loaded into it, by the id their URLs carry."""

    def __init__(self, logs: list[LoadedLog] = (), home: dict[str, str] | None = None) -> None:
        self.logs: dict[str, LoadedLog] = {}
        self.home = dict(home or {})  # the query the bare URL opens (empty: the initial state of burst2)
        for log in logs:
            self.remember(log)
        routes = [Route("/", self.page), Route("/favicon.ico", self.favicon), Route("/page.js", self.script), Route("/api/state", self.state), Route("/api/choices", self.choices),
                  Route("/api/counterexample", self.counterexample), Route("/api/violations", self.violations),
                  Route("/api/compare", self.compare),
                  Route("/api/load", self.load, methods=["POST"])]
        self.app = Starlette(routes=routes, exception_handlers={HTTPException: _http_error, 404: _http_error})

    def remember(self, log: LoadedLog) -> None:
        """Keep ``log`` under its id (the newest :data:`MAX_LOGS`)."""
        self.logs.pop(log.name, None)
        self.logs[log.name] = log
        while len(self.logs) > MAX_LOGS:
            self.logs.pop(next(iter(self.logs)))

    def _design(self, request: Request) -> Design:
        return design_from_query(dict(request.query_params), self.logs)

    # --- routes --------------------------------------------------------------------------------------
    async def page(self, request: Request) -> Response:
        if self.home and not request.url.query:
            return RedirectResponse("/?" + urlencode(self.home), status_code=307)
        return HTMLResponse(resources.files(__package__).joinpath("page.html").read_text(encoding="utf-8"))

    async def script(self, request: Request) -> Response:
        return Response(resources.files(__package__).joinpath("page.js").read_text(encoding="utf-8"),
                        media_type="text/javascript")

    async def favicon(self, request: Request) -> Response:
        return Response(FAVICON, media_type="image/svg+xml", headers={"Cache-Control": "max-age=86400"})

    async def choices(self, request: Request) -> Response:
        return JSONResponse({
            "scenarios": list(SCENARIOS) + list(SCALE_SCENARIOS),
            "variants": [{"name": v.name, "violates": v.expected_violation, "story": v.story, "demo": v.demo,
                          "demo_policy": dict(v.demo_policy)} for v in VARIANTS.values()],
            "properties": [{"name": p.name, "kind": p.kind, "story": p.story} for p in PROPERTIES],
            **{k.name: list(k.choices) for k in KNOBS if k.kind is str},
            "options": list(OPTIONS), "knobs": knobs(), "legend": legend(),
        })

    async def state(self, request: Request) -> Response:
        return await _guarded(self._state, request)

    def _state(self, request: Request) -> dict[str, Any]:
        q = request.query_params
        design = self._design(request)
        actions = parse_path(q.get("path", ""))
        at = _int(q, "at")
        mark = _int(q, "mark")
        prop = q.get("property") or None
        if prop is not None and mark is None:
            raise BadQuery("property is given without mark (the step where it breaks)")
        view = state_view(design, actions, at, mark=mark, property=prop)
        if design.log is not None:
            log = self.logs[design.log]
            view["log"] = {"id": log.name, "events": log.events, "actions": len(log.actions),
                           "departure": log.departure}
        return view

    async def counterexample(self, request: Request) -> Response:
        return await _guarded(self._counterexample, request)

    def _counterexample(self, request: Request) -> dict[str, Any]:
        design = self._design(request)
        found = counterexample(design, request.query_params.get("property") or None)
        return {"query": _opening(design, found), "note": found["note"]}

    async def violations(self, request: Request) -> Response:
        return await _guarded(self._violations, request)

    def _violations(self, request: Request) -> dict[str, Any]:
        design = self._design(request)
        found = []
        for v in violations(design):
            query = None if v["path"] is None else _opening(design, v)
            found.append({"property": v["property"], "kind": v["kind"], "story": v["story"], "note": v["note"],
                          "length": None if v["path"] is None else len(v["path"]), "query": query})
        return {"title": design.title(), "violations": found}

    async def compare(self, request: Request) -> Response:
        return await _guarded(self._compare, request)

    def _compare(self, request: Request) -> dict[str, Any]:
        design = self._design(request)
        actions = parse_path(request.query_params.get("path", ""))
        replay(design, actions)  # the path must be a run of this design; the other may refuse a step
        return compare(design, actions, request.query_params.get("field", "release"))

    async def load(self, request: Request) -> Response:
        declared = request.headers.get("content-length")
        if declared is not None and declared.isdecimal() and int(declared) > MAX_UPLOAD_BYTES:
            return _error(413, f"the upload is above the limit of {MAX_UPLOAD_BYTES:,} bytes")
        body = b""
        async for chunk in request.stream():
            body += chunk
            if len(body) > MAX_UPLOAD_BYTES:
                return _error(413, f"the upload is above the limit of {MAX_UPLOAD_BYTES:,} bytes")
        kind = request.query_params.get("kind", "")
        name = request.query_params.get("name") or "uploaded file"
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as error:
            return _error(400, f"{name}: not UTF-8 text (byte {error.start})")
        try:
            if kind == "log":
                log = engine_log(text, name)
                self.remember(log)
                query = {"log": log.name, "path": ",".join(log.actions), "at": str(len(log.actions))}
                note = (f"{log.events} events read: the engine departs from the spec after {len(log.actions)} "
                        "actions" if log.departure else f"{log.events} events, all a run of the spec")
                return JSONResponse({"query": query, "note": note, "departure": log.departure})
            if kind == "path":
                query, actions = replay_file(text, name)
                state_view(design_from_query(query, self.logs), actions, 0)  # a run of the design it names
                return JSONResponse({"query": {**query, "path": ",".join(actions), "at": "0"},
                                     "note": f"{len(actions)} actions loaded; step through them"})
        except (BadQuery, InputError) as error:
            return _error(400, str(error))
        return _error(400, f"kind must be log (an engine event log) or path (a replay file); got {kind!r}"[:300])


async def _guarded(fn: Any, request: Request) -> Response:
    # On a worker thread: a counterexample search may take seconds, and the page stays live meanwhile.
    try:
        return JSONResponse(await run_in_threadpool(fn, request))
    except UnknownLog as error:
        return _error(404, str(error))
    except (BadQuery, InputError) as error:
        return _error(400, str(error))


def _opening(design: Design, found: dict[str, Any]) -> dict[str, str]:
    # The query that opens a found counterexample at the step where its property breaks.
    return {**design.query(), "path": ",".join(found["path"]), "at": str(found["mark"]),
            "mark": str(found["mark"]), "property": found["property"]}


def _int(q: Any, name: str) -> int | None:
    raw = q.get(name)
    if raw is None or raw == "":
        return None
    if not raw.isdecimal() or len(raw) > 6:
        raise BadQuery(f"{name} must be a whole number; got {raw[:40]!r}")
    return int(raw)


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status)


async def _http_error(request: Request, exc: Exception) -> Response:
    status = getattr(exc, "status_code", 404)
    words = {404: f"no such page: {request.url.path}", 405: f"{request.method} is not allowed on {request.url.path}"}
    return _error(status, words.get(status, getattr(exc, "detail", "bad request")))

"""The explorer's app over real HTTP: states, deep links, counterexamples, loads and every bad input."""

from __future__ import annotations

import http.client
import json
import urllib.error
import urllib.parse
import urllib.request

import pytest

from flightcheck.checks.interactive.app import MAX_UPLOAD_BYTES, ExplorerApp
from flightcheck.checks.interactive.design import Design, design_from_query
from flightcheck.checks.interactive.serve import ExplorerServer
from flightcheck.impl.config import EngineConfig
from flightcheck.impl.engine import Engine
from flightcheck.impl.sampling import SamplingParams
from flightcheck.spec.properties import PROPERTIES
from flightcheck.spec.scenario import SCENARIOS

PROMPT = [3, 1, 4, 1, 5, 9, 2, 6] * 5  # 40 tokens: two shareable pages and a tail
EARLY = ["arrive(0)", "admit(0)", "prefill(0)", "prefill(0)", "prefill(0)", "release(0)"]


@pytest.fixture(scope="module")
def server():
    with ExplorerServer(ExplorerApp()) as srv:
        yield srv


def get(server, route: str, **query) -> tuple[int, dict]:
    url = f"{server.url}{route}?{urllib.parse.urlencode(query)}"
    try:
        with urllib.request.urlopen(url, timeout=60) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def post(server, route: str, body: bytes, **query) -> tuple[int, dict]:
    request = urllib.request.Request(f"{server.url}{route}?{urllib.parse.urlencode(query)}", data=body, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def engine_log(num_requests: int = 3) -> str:
    engine = Engine.tiny(EngineConfig(num_pages=16, max_running=2, prefill_chunk_pages=1))
    for _ in range(num_requests):
        engine.add_request(PROMPT, SamplingParams(max_tokens=3))
    engine.run()
    engine.close()
    return engine.events.to_jsonl()


def test_a_state_shows_what_the_last_step_changed_and_why_the_rest_is_disabled(server):
    status, v = get(server, "/api/state", path="arrive(0),arrive(1)", at="2")
    assert status == 200
    assert v["changed"] == ["requests.r1.flight", "requests.r1.phase", "requests.r1.role"]
    assert v["state"]["requests"]["r1"] == {"phase": "blocked", "flight": "f0", "role": "follower"}
    assert [a["action"] for a in v["enabled"]] == ["admit(0)"]
    why = {a["action"]: a["why"] for a in v["disabled"]}
    assert why["admit(1)"] == ["r1 is blocked, not waiting (a follower of an open flight)"]
    assert all(p["holds"] for p in v["properties"] if p["kind"] == "always")
    assert "<svg" in v["diagram"] and "arrive(1)" in v["diagram"]
    # one step back: the same path, the earlier state, r1 absent
    status, back = get(server, "/api/state", path="arrive(0),arrive(1)", at="1")
    assert back["state"]["requests"]["r1"] == {"phase": "absent"} and back["length"] == 2


def test_the_variant_counterexample_marks_the_step_where_its_property_breaks(server):
    status, found = get(server, "/api/counterexample", variant="early-release")
    assert status == 200
    assert found["query"] == {"variant": "early-release", "path": ",".join(EARLY), "at": "6", "mark": "6",
                              "property": "release_after_publication"}
    status, v = get(server, "/api/state", **found["query"])
    assert v["violated"] == ["release_after_publication"] and v["path"][5]["breaks"] == ["release_after_publication"]
    # two steps back and another action: the property holds again
    status, v = get(server, "/api/state", **{**found["query"], "path": ",".join(EARLY[:4] + ["arrive(1)"]), "at": "5"})
    assert v["violated"] == [] and v["state"]["requests"]["r1"]["phase"] == "blocked"
    # a liveness counterexample stops where nothing can happen
    status, found = get(server, "/api/counterexample", variant="stranded-followers")
    assert found["query"]["path"] == "arrive(0),arrive(1),abort(0)" and "no engine step is enabled" in found["note"]


def test_every_violated_property_is_listed_with_its_shortest_counterexample(server):
    # early-release breaks its own property and, two steps later, the harm: a page prefilled twice
    status, found = get(server, "/api/violations", variant="early-release")
    assert status == 200
    listed = {v["property"]: v for v in found["violations"]}
    assert set(listed) == {"release_after_publication", "single_prefill"}
    assert listed["release_after_publication"]["query"]["path"] == ",".join(EARLY)
    harm = listed["single_prefill"]["query"]
    assert harm["property"] == "single_prefill" and harm["at"] == harm["mark"] == str(listed["single_prefill"]["length"])
    status, v = get(server, "/api/state", **harm)  # each query opens the state where its property breaks
    assert status == 200 and "single_prefill" in v["violated"]
    # the property picker's choice: the same counterexample through the button's route
    status, picked = get(server, "/api/counterexample", variant="early-release", property="single_prefill")
    assert picked["query"] == harm
    # the correct design breaks nothing; the picker offers every named property of the spec
    assert get(server, "/api/violations")[1]["violations"] == []
    names = [p["name"] for p in get(server, "/api/choices")[1]["properties"]]
    assert names == [p.name for p in PROPERTIES]


def test_compare_names_the_first_step_where_the_release_points_differ(server):
    path = ["arrive(0)", "arrive(1)", "admit(0)", "prefill(0)", "publish(0)", "prefill(0)", "publish(0)",
            "prefill(0)", "release(0)"]
    status, c = get(server, "/api/compare", path=",".join(path), field="release")
    assert status == 200 and (c["this"], c["other"]) == ("after-prefill", "on-completion")
    assert c["first_difference"] == 9 and c["steps"][8]["other"] == "(not enabled)"
    assert c["other_query"] == {"release": "on-completion"} and c["other_path"] == path[:8]


def test_compare_takes_any_knob_and_names_a_bad_one(server):
    path = "arrive(0),arrive(1),abort(0)"
    status, c = get(server, "/api/compare", scenario="burst2-abort", path=path, field="leader_loss")
    assert status == 200 and (c["this"], c["other"]) == ("release-all", "promote")
    assert c["other_query"] == {"scenario": "burst2-abort", "leader_loss": "promote"}
    status, c = get(server, "/api/compare", path="arrive(0)", field="aborts")  # an environment option
    assert status == 200 and (c["this"], c["other"]) == ("off", "on") and c["other_query"] == {"aborts": "1"}
    status, c = get(server, "/api/compare", path="arrive(0)", field="capacity")
    assert (c["this"], c["other"], c["first_difference"]) == ("2", "3", None)
    status, body = get(server, "/api/compare", path="arrive(0)", field="colour")
    assert status == 400 and body["error"].startswith("compare takes a knob (coordination, release, publication")


def test_a_design_survives_its_own_url():
    for query in ({}, {"variant": "early-release"}, {"scenario": "burst3-abort", "release": "on-completion"},
                  {"scenario": "doc2", "min_shared_pages": "2", "aborts": "1"}, {"capacity": "1", "chunk": "2"}):
        design = design_from_query(query, {})
        assert design.query() == query
        assert design_from_query(design.query(), {}) == design


def test_an_engine_log_opens_as_its_spec_path(server):
    text = engine_log()
    status, loaded = post(server, "/api/load", text.encode(), kind="log", name="events.jsonl")
    assert status == 200 and loaded["departure"] is None
    path = loaded["query"]["path"].split(",")
    assert path[:3] == ["arrive(0)", "arrive(1)", "arrive(2)"] and path.count("finish(0)") == 1
    status, v = get(server, "/api/state", **loaded["query"])
    assert v["at"] == len(path) and v["violated"] == []
    assert {r["phase"] for r in v["state"]["requests"].values()} == {"finished"}
    assert v["log"]["events"] == len(text.splitlines()) - 1  # every event (not the header) read


def test_a_log_where_the_engine_departs_shows_the_diagnosis(server):
    lines = engine_log(2).splitlines()
    release = next(n for n, line in enumerate(lines) if json.loads(line).get("action") == "release")
    kept = [json.loads(line) for n, line in enumerate(lines) if n != release]  # the follower admitted unreleased
    doctored = "".join(json.dumps(e if "policy" in e else dict(e, seq=k - 1)) + "\n" for k, e in enumerate(kept))
    status, loaded = post(server, "/api/load", doctored.encode(), kind="log", name="doctored.jsonl")
    assert status == 200 and loaded["departure"].startswith("[disabled] admit(1) is not enabled in the spec")
    assert "property at stake: follower_waits_for_release" in loaded["departure"]
    status, v = get(server, "/api/state", **loaded["query"])  # the path stops before the departure
    assert v["log"]["departure"] == loaded["departure"] and v["path"][-1]["action"] == "prefill(0)"
    assert v["state"]["requests"]["r1"]["phase"] == "blocked"


def test_a_replay_file_opens_on_its_scenario_and_policy(server):
    body = json.dumps({"scenario": "burst2", "variant": "early-release", "policy": {"publication": "on-completion"},
                       "counterexample": EARLY}).encode()
    status, loaded = post(server, "/api/load", body, kind="path", name="cx.json")
    assert status == 200
    assert loaded["query"] == {"scenario": "burst2", "variant": "early-release", "publication": "on-completion",
                               "aborts": "1", "notifications": "1", "eviction": "1", "path": ",".join(EARLY),
                               "at": "0"}


@pytest.mark.parametrize("query, status, message", [
    ({"scenario": "burst9"}, 400, "unknown scenario 'burst9'; known: burst2"),
    ({"variant": "sloppy"}, 400, "unknown variant 'sloppy'; known: correct"),
    ({"release": "later"}, 400, "not a policy: unknown release 'later'; expected one of after-prefill, on-completion"),
    ({"capacity": "-1"}, 400, "capacity must be a small whole number; got '-1'"),
    ({"aborts": "yes"}, 400, "aborts must be 1 or 0; got 'yes'"),
    ({"path": "arrive(0),jump(1)"}, 400, "path step 2: not an action: 'jump(1)'"),
    ({"path": "arrive(0),arrive(7)"}, 400, "path step 2: arrive(7) is not an action of scenario burst2"),
    ({"path": "arrive(0),prefill(0)"}, 400, "path step 2: prefill(0) is not enabled after the first 1 step(s): "
                                            "r0 is waiting, not prefill"),
    ({"path": "arrive(0)", "at": "5"}, 400, "at must be between 0 and the path's 1 step(s); got 5"),
    ({"log": "0123456789ab"}, 404, "no engine log '0123456789ab' is loaded in this explorer"),
    ({"scenario": "burst2", "log": "x"}, 400, "give either scenario or log, not both"),
])
def test_a_bad_url_is_a_4xx_naming_what_is_wrong_and_the_app_keeps_serving(server, query, status, message):
    code, body = get(server, "/api/state", **query)
    assert (code, body["error"][:len(message)]) == (status, message), body
    assert get(server, "/api/state")[0] == 200


def test_bad_uploads_are_refused_with_the_line_and_field(server):
    status, body = post(server, "/api/load", b'{"seq": 0, "action": "arrive"}\n', kind="log", name="bad.jsonl")
    assert status == 400 and body["error"].startswith("bad.jsonl line 1, field"), body
    status, body = post(server, "/api/load", b"arrive(0)\njump(0)\n", kind="path", name="p.txt")
    assert status == 400 and "p.txt line 2" in body["error"] and "not an action: 'jump(0)'" in body["error"]
    status, body = post(server, "/api/load", b"\xff\xfe", kind="log", name="b.jsonl")
    assert status == 400 and body["error"] == "b.jsonl: not UTF-8 text (byte 0)"
    conn = http.client.HTTPConnection(server.url.removeprefix("http://"), timeout=30)
    conn.putrequest("POST", "/api/load?kind=log")  # refused on its declared length, before a byte is read
    conn.putheader("Content-Length", str(MAX_UPLOAD_BYTES + 1))
    conn.endheaders()
    response = conn.getresponse()
    assert response.status == 413 and "above the limit" in json.load(response)["error"]
    conn.close()
    status, body = post(server, "/api/load", b"arrive(0)\n", kind="movie")
    assert status == 400 and body["error"].startswith("kind must be log")
    status, body = get(server, "/nowhere")
    assert status == 404 and body["error"] == "no such page: /nowhere"
    assert get(server, "/api/state", path="arrive(0)")[0] == 200


def test_a_design_is_built_once_per_url():
    a, b = design_from_query({"scenario": "burst2"}, {}), design_from_query({}, {})
    assert a == b and a.spec is b.spec and isinstance(a, Design) and a.scenario == SCENARIOS["burst2"]


@pytest.mark.parametrize("mark", ["6", "3"], ids=["at-the-mark", "elsewhere"])
def test_an_unknown_property_is_a_400_listing_the_designs_properties(server, mark):
    from flightcheck.spec.properties import properties_for

    known = [p.name for p in properties_for(design_from_query({"variant": "early-release"}, {}).spec)]
    query = {"variant": "early-release", "path": ",".join(EARLY), "at": "6", "mark": mark, "property": "no_such_thing"}
    # Before: a plain-text 500 at the marked step (get_property's ValueError), and no error elsewhere.
    code, body = get(server, "/api/state", **query)
    assert code == 400, body
    assert body["error"] == f"property 'no_such_thing' is not a property of {design_from_query(query, {}).title()}; " \
                            f"it has {', '.join(known)}"
    code, body = get(server, "/api/counterexample", variant="early-release", property="no_such_thing")
    assert code == 400 and body["error"].startswith("property 'no_such_thing' does not apply to") and known[0] in body["error"]
    code, body = get(server, "/api/state", **{**query, "property": "release_after_publication"})
    assert code == 200 and body["property"] == "release_after_publication"  # a known one is drawn as before


def test_the_favicon_is_served_not_a_404(server):
    with urllib.request.urlopen(server.url + "/favicon.ico", timeout=60) as response:
        assert response.status == 200 and response.headers["Content-Type"].startswith("image/svg+xml")
        assert response.read().startswith(b"<svg")
    with urllib.request.urlopen(server.url + "/", timeout=60) as response:
        assert b'rel="icon" href="/favicon.ico"' in response.read()


def _get_page(url: str) -> tuple[int, str | None]:
    parts = urllib.parse.urlsplit(url)
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
    conn.request("GET", parts.path + ("?" + parts.query if parts.query else ""))
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status, response.getheader("Location")


def test_the_bare_url_of_an_app_started_on_a_design_opens_that_design(server):
    home = {"variant": "stranded-followers", "path": "arrive(0),arrive(1),abort(0)", "at": "3"}
    assert _get_page(server.url + "/") == (200, None)  # no design given: the page, at burst2's first state
    with ExplorerServer(ExplorerApp(home=home)) as started:
        status, location = _get_page(started.url + "/")
        assert status == 307 and dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(location).query)) == home
        assert _get_page(started.url + "/?variant=correct") == (200, None)  # any other URL opens as it says


def test_the_legend_covers_every_word_the_state_picture_can_show(server):
    # read from the spec's constants: every phase, page state and ghost slot, and every field of a request
    # that describe() writes on the states of a scenario with flights, pins, hits and aborts
    from flightcheck.checks.explore.explorer import explore
    from flightcheck.spec.model import FlightSpec
    from flightcheck.spec.state import PAGE_NAMES, PHASE_NAMES, Layout
    legend = get(server, "/api/choices")[1]["legend"]
    names = {key: [row["name"] for row in rows] for key, rows in legend.items()}
    assert names["phases"] == list(PHASE_NAMES) and names["pages"] == list(PAGE_NAMES)
    assert names["ghosts"] == Layout(SCENARIOS["burst2"]).fields_of("scalar")
    assert all(row["meaning"] for rows in legend.values() for row in rows)
    spec = FlightSpec(SCENARIOS["burst3-abort"])
    shown = set()
    for state in explore(spec).graph:
        d = spec.describe(state)
        shown |= {k for r in d["requests"].values() for k in r} | {f"flight:{v}" for v in d["flights"].values()}
    assert {k for k in shown if not k.startswith("flight:")} <= set(names["fields"])
    assert {k.removeprefix("flight:") for k in shown if k.startswith("flight:")} <= set(names["flights"])


def test_the_page_s_script_is_served_beside_it(server):
    with urllib.request.urlopen(server.url + "/", timeout=60) as response:
        assert b'<script src="/page.js"></script>' in response.read()
    with urllib.request.urlopen(server.url + "/page.js", timeout=60) as response:
        assert response.status == 200 and response.headers["content-type"].startswith("text/javascript")
        assert b"async function setup()" in response.read()

"""``Server(api_key=...)`` (``serve --api-key``, or ``FLIGHTCHECK_API_KEY``): every /v1/* route needs
``Authorization: Bearer <key>`` and otherwise gets a 401 in OpenAI's shape; /health and /metrics stay open."""

import pytest

from flightcheck.impl.server import Server
from tests.server.conftest import metrics, raw, tiny_engine

KEY = "sk-test-0123456789"


@pytest.fixture()
def keyed(model):
    server = Server(tiny_engine(model, num_pages=64), port=0, api_key=KEY).start()
    yield server
    server.close()


def test_the_right_key_is_served_and_a_wrong_one_refused_by_the_openai_client(keyed):
    from openai import AuthenticationError, OpenAI

    def client(key):
        return OpenAI(base_url=keyed.url + "/v1", api_key=key, max_retries=0, timeout=60)

    reply = client(KEY).completions.create(model="tiny", prompt=[1, 2, 3], max_tokens=2)
    assert len(reply.choices[0].token_ids) == 2
    assert [m.id for m in client(KEY).models.list()] == ["tiny"]
    for wrong in ("sk-wrong", KEY + "x", KEY[:-1]):
        with pytest.raises(AuthenticationError) as info:
            client(wrong).completions.create(model="tiny", prompt=[1, 2, 3], max_tokens=2)
        assert info.value.status_code == 401
        assert info.value.body["code"] == "invalid_api_key" and info.value.body["type"] == "invalid_request_error"
        assert KEY not in info.value.body["message"] and wrong not in info.value.body["message"]
    assert keyed.loop.call(lambda e: e.counters["num_steps"]) > 0  # the right key reached the engine


@pytest.mark.parametrize("headers", [{}, {"Authorization": KEY}, {"Authorization": f"Basic {KEY}"},
                                     {"Authorization": "Bearer "}], ids=["none", "no-scheme", "basic", "empty"])
def test_every_v1_route_needs_the_key_before_its_body_is_read(keyed, headers):
    for method, path in (("POST", "/v1/completions"), ("POST", "/v1/chat/completions"), ("GET", "/v1/models"),
                         ("GET", "/v1/nothing-here")):
        status, reply = raw(keyed, method, path, b"{not even json", headers=headers)
        assert status == 401, (path, reply)
        assert set(reply["error"]) == {"message", "type", "param", "code"} and reply["error"]["code"] == "invalid_api_key"


def test_health_and_metrics_stay_open(keyed):
    assert raw(keyed, "GET", "/health")[0] == 200
    raw(keyed, "GET", "/v1/models")
    assert metrics(keyed)['flightcheck_http_errors_total{status="401"}'] == 1


def test_the_key_is_read_from_the_environment_when_not_given(model, monkeypatch):
    monkeypatch.setenv("FLIGHTCHECK_API_KEY", KEY)
    server = Server(tiny_engine(model, num_pages=64), port=0).start()
    try:
        assert raw(server, "GET", "/v1/models")[0] == 401
        assert raw(server, "GET", "/v1/models", headers={"Authorization": f"Bearer {KEY}"})[0] == 200
    finally:
        server.close()
    monkeypatch.delenv("FLIGHTCHECK_API_KEY")
    with pytest.raises(ValueError, match=r"^api_key must not be empty \(leave it out to serve without a key\)$"):
        Server(tiny_engine(model, num_pages=64), port=0, api_key="")
    with pytest.raises(ValueError, match="api_key must be a non-empty string or None, got int"):
        Server(tiny_engine(model, num_pages=64), port=0, api_key=5)


def test_an_empty_key_in_the_environment_is_refused_naming_it_as_an_empty_option_is(model, monkeypatch):
    # Before: FLIGHTCHECK_API_KEY= served every /v1 route with no key at all, while api_key="" was refused.
    monkeypatch.setenv("FLIGHTCHECK_API_KEY", "")
    with pytest.raises(ValueError, match=r"^FLIGHTCHECK_API_KEY is set but empty: unset it to serve without a key"):
        Server(tiny_engine(model, num_pages=64), port=0)
    with pytest.raises(ValueError, match=r"^api_key must not be empty"):  # the argument, given, is the source named
        Server(tiny_engine(model, num_pages=64), port=0, api_key="")
    server = Server(tiny_engine(model, num_pages=64), port=0, api_key=KEY).start()  # a key given wins over it
    try:
        assert raw(server, "GET", "/v1/models")[0] == 401
    finally:
        server.close()
    monkeypatch.delenv("FLIGHTCHECK_API_KEY")
    server = Server(tiny_engine(model, num_pages=64), port=0).start()  # unset: no key, as documented
    try:
        assert server.api_key is None and raw(server, "GET", "/v1/models")[0] == 200
    finally:
        server.close()

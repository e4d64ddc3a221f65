"""Bad requests get a 4xx in OpenAI's error shape naming the field, nothing reaches the engine, and
the server keeps serving. Bodies are sent raw (the ``openai`` client would refuse some of them)."""

import re

import pytest

from tests.server.conftest import PROMPT, client, make_chat_server, metrics, raw

OK = {"model": "tiny", "prompt": [1, 2, 3], "max_tokens": 2}


def body(**changes):
    out = {**OK, **changes}
    return {k: v for k, v in out.items() if v is not ...}


@pytest.mark.parametrize("payload, status, param, message", [
    (b"{not json", 400, None, "not valid JSON"),
    (b"[1, 2]", 400, None, "must be a JSON object"),
    (body(model="gpt-5"), 404, "model", "model 'gpt-5' does not exist"),
    (body(model=...), 400, "model", "field required"),
    (body(max_tokens="5"), 400, "max_tokens", "valid integer"),
    (body(max_tokens=True), 400, "max_tokens", "valid integer"),       # true is not 1
    (body(max_tokens=[1]), 400, "max_tokens", "valid integer"),        # a list does not crash it
    (body(max_tokens=0), 400, "max_tokens", "greater than or equal to 1"),
    (body(max_tokens=10**12), 400, "max_tokens", "leave room for 2045 in the context of 2048"),
    (body(max_tokens=1e12), 400, "max_tokens", "valid integer"),
    (body(temperature=3), 400, "temperature", "less than or equal to 2"),
    (body(temperature=-0.5), 400, "temperature", "greater than or equal to 0"),
    (body(temperature=1e-9), 400, "temperature", "use 0 for greedy"),      # the engine's own limit: a 400
    (body(temperature=5e-324), 400, "temperature", "use 0 for greedy"),    # NaN probabilities, not a 500
    (b'{"model": "tiny", "prompt": [1], "temperature": NaN}', 400, "temperature", "finite number"),
    (b'{"model": "tiny", "prompt": [1], "top_p": Infinity}', 400, "top_p", "finite number"),
    (body(top_p=0), 400, "top_p", "greater than 0"),
    (body(stream="no"), 400, "stream", "valid boolean"),              # "no" is not false
    (body(prompt=""), 400, "prompt", "prompt is empty"),
    (body(prompt=[]), 400, "prompt", "prompt is empty"),
    (body(prompt=[[]]), 400, "prompt", "prompt is empty"),
    (body(prompt=[1, True]), 400, "prompt", "list of token ids"),
    (body(prompt=[1, 70000]), 400, "prompt", "not a token id in \\[0, 256\\)"),
    (body(prompt=[[1], [2]]), 400, "prompt", "one prompt per request"),
    (body(prompt=list(range(1, 200)) * 11, max_tokens=1), 400, "prompt", "2189 tokens, longer than the context of 2048"),
    (body(prompt="hello"), 400, "prompt", "needs a model with a tokenizer"),
    (body(stop=["x"]), 400, "stop", "needs a model with a tokenizer"),
    (body(stop=5), 400, "stop", "string or a list of strings"),
    (body(temprature=1), 400, "temprature", "unknown field 'temprature'"),
    (body(n=2), 400, "n", "n must be 1"),
    (body(logprobs=2), 400, "logprobs", "not supported"),
    (body(seed=-1), 400, "seed", "greater than or equal to 0"),
    (body(stream_options={"include_usage": "yes"}), 400, "stream_options.include_usage", "valid boolean"),
])
def test_bad_completion_request_is_a_4xx_naming_the_field(server, payload, status, param, message):
    got, reply = raw(server, "POST", "/v1/completions", payload)
    assert got == status, reply
    error = reply["error"]
    assert error["param"] == param and re.search(message, error["message"], re.I), error
    assert error["type"] == "invalid_request_error"
    assert server.loop.call(lambda e: len(e.scheduler.requests)) == 0  # nothing was enqueued
    assert raw(server, "POST", "/v1/completions", OK)[0] == 200        # and the server keeps serving


@pytest.mark.parametrize("payload, param, message", [
    ({"model": "tiny", "messages": []}, "messages", "at least 1 item"),
    ({"model": "tiny", "messages": [{"role": "robot", "content": "x"}]}, "messages.0.role", "input should be"),
    ({"model": "tiny", "messages": [{"role": "user"}]}, "messages.0.content", "field required"),
    ({"model": "tiny", "messages": "hi"}, "messages", "valid list"),
    ({"model": "tiny", "messages": [{"role": "user", "content": "x"}], "response_format": {"type": "json_object"}},
     "response_format", "response_format is not supported"),
    ({"model": "tiny", "messages": [{"role": "user", "content": "x"}], "tools": []}, "tools",
     "no tool or function calling"),
    ({"model": "tiny", "messages": [{"role": "user", "content": "x"}], "responce_format": {}}, "responce_format",
     "unknown field"),  # a misspelling is still named as one
])
def test_bad_chat_request_is_a_400_naming_the_field(server, payload, param, message):
    got, reply = raw(server, "POST", "/v1/chat/completions", payload)
    assert got == 400 and reply["error"]["param"] == param and message in reply["error"]["message"].lower(), reply


def test_unknown_endpoints_and_the_old_protocol_are_404s_in_openai_shape(server):
    for method, path in (("POST", "/generate"), ("POST", "/abort"), ("GET", "/stats"), ("GET", "/v2/x")):
        status, reply = raw(server, method, path, {"request_id": True})
        assert status == 404 and "no such endpoint" in reply["error"]["message"], (path, reply)
    status, reply = raw(server, "GET", "/v1/completions")
    assert status == 405 and reply["error"]["message"].startswith("Method Not Allowed")
    assert metrics(server)['flightcheck_http_errors_total{status="404"}'] == 4


def test_the_openai_client_sees_a_bad_request_error_with_the_param(server):
    from openai import BadRequestError, NotFoundError

    with pytest.raises(BadRequestError) as info:
        client(server).completions.create(model="tiny", prompt=PROMPT, max_tokens=5000)
    assert info.value.body["param"] == "max_tokens"
    with pytest.raises(NotFoundError) as info:
        client(server).completions.create(model="davinci", prompt=PROMPT)
    assert info.value.body["code"] == "model_not_found"


@pytest.fixture(scope="module")
def chat_server(model):
    srv = make_chat_server(model)  # a tokenizer: text reaches it, unlike on the token-ids-only server
    yield srv
    srv.close()


@pytest.mark.parametrize("path, payload, param", [
    ("/v1/completions", b'{"model": "tiny", "prompt": "a\\ud800b", "max_tokens": 1}', "prompt"),
    ("/v1/chat/completions", b'{"model": "tiny", "messages": [{"role": "user", "content": "a\\udfffb"}]}',
     "messages.0.content"),
    ("/v1/chat/completions", b'{"model": "tiny", "messages": [{"role": "user", "content": '
                             b'[{"type": "text", "text": "\\ud83d"}]}]}', "messages.0.content.0.text"),
], ids=["prompt", "content", "content-part"])
def test_text_with_a_lone_surrogate_is_a_400_naming_the_field(chat_server, path, payload, param):
    status, reply = raw(chat_server, "POST", path, payload)
    assert status == 400, reply
    assert reply["error"]["param"] == param and "lone surrogate" in reply["error"]["message"], reply
    assert raw(chat_server, "POST", "/v1/completions", {"model": "tiny", "prompt": "ab", "max_tokens": 1})[0] == 200


@pytest.mark.parametrize("payload", [
    b"[" * 100_000,                                                                   # the parser recurses
    b'{"model": "tiny", "prompt": [1], "user": ' + b"[" * 800 + b"]" * 800 + b"}",    # parsed; repr() recurses
], ids=["100000-open-brackets", "a-field-800-deep"])
def test_a_deeply_nested_body_is_a_400(server, payload):
    status, reply = raw(server, "POST", "/v1/completions", payload)
    assert status == 400 and re.search("nests arrays or objects", reply["error"]["message"]), reply


def test_max_tokens_null_means_the_default_of_16_as_when_absent(server):
    for payload in ({"model": "tiny", "prompt": [1, 2, 3], "max_tokens": None}, {"model": "tiny", "prompt": [1, 2, 3]}):
        status, reply = raw(server, "POST", "/v1/completions", payload)
        assert status == 200 and reply["usage"]["completion_tokens"] == 16, reply  # the tiny model has no EOS
        assert reply["choices"][0]["finish_reason"] == "length"


def test_text_content_parts_are_joined_and_other_parts_refused_by_name(chat_server):
    def chat(content):
        return raw(chat_server, "POST", "/v1/chat/completions", {"model": "tiny", "max_tokens": 2, "temperature": 0,
                                                                 "messages": [{"role": "user", "content": content}]})

    status, parts = chat([{"type": "text", "text": "Hello"}, {"type": "text", "text": "world"}])
    assert status == 200, parts
    assert parts["choices"][0]["token_ids"] == chat("Hello\nworld")[1]["choices"][0]["token_ids"]
    assert parts["usage"]["prompt_tokens"] == chat("Hello\nworld")[1]["usage"]["prompt_tokens"]
    status, reply = chat([{"type": "text", "text": "What is this?"}, {"type": "image_url", "image_url": {"url": "x"}}])
    assert status == 400 and reply["error"]["param"] == "messages.0.content.1", reply
    assert "'image_url'" in reply["error"]["message"] and "only text parts" in reply["error"]["message"]
    for bad, param in ((5, "messages.0.content"), ([{"type": "text"}], "messages.0.content.0.text"),
                       ([{"type": "text", "text": "x", "cache": 1}], "messages.0.content.0.cache")):
        status, reply = chat(bad)
        assert status == 400 and reply["error"]["param"] == param, (bad, reply)


def test_text_that_cannot_fit_is_refused_before_it_is_tokenized(chat_server, monkeypatch):
    tokenizer = chat_server.engine.tokenizer
    most = chat_server.engine.context * tokenizer.max_token_chars
    assert tokenizer.max_token_chars == len("<|endoftext|>")  # the longest entry of the byte tokenizer
    calls = []
    monkeypatch.setattr(type(tokenizer), "encode", lambda self, text: calls.append(len(text)) or [])
    monkeypatch.setattr(type(tokenizer), "encode_messages", lambda self, messages: calls.append(len(messages)) or [])
    status, reply = raw(chat_server, "POST", "/v1/completions", {"model": "tiny", "prompt": "a" * (most + 1)})
    assert status == 400 and reply["error"]["param"] == "prompt", reply
    assert f"{most + 1:,} characters; no text of more than {most:,} fits" in reply["error"]["message"]
    many = chat_server.engine.context // 4 + 1
    status, reply = raw(chat_server, "POST", "/v1/chat/completions",
                        {"model": "tiny", "messages": [{"role": "user", "content": ""}] * many})
    assert status == 400 and reply["error"]["param"] == "messages" and f"{many:,} messages" in reply["error"]["message"]
    assert calls == []  # neither reached the tokenizer
    status, reply = raw(chat_server, "POST", "/v1/completions", {"model": "tiny", "prompt": "a" * most})
    assert status == 400 and calls == [most]  # at the bound it is tokenized (and then too long in tokens)


def _with_literal(template: bytes, digits: int) -> bytes:
    return template.replace(b"N", b"9" * digits)


@pytest.mark.parametrize("path, payload, param", [
    ("/v1/completions", b'{"model": "tiny", "prompt": [1], "max_tokens": N}', "max_tokens"),
    ("/v1/completions", b'{"model": "tiny", "prompt": [1, 2, N], "max_tokens": 1}', "prompt.2"),
    ("/v1/completions", b'{"model": "tiny", "prompt": [1], "seed": -N}', "seed"),
    ("/v1/completions", b'{"model": "tiny", "prompt": [1], "stream_options": {"include_usage": N}}',
     "stream_options.include_usage"),
    ("/v1/chat/completions", b'{"model": "tiny", "messages": [{"role": "user", "content": "x"}], "max_tokens": N}',
     "max_tokens"),
], ids=["max_tokens", "a-token-id", "negative-seed", "nested", "chat"])
def test_an_integer_past_pythons_digit_limit_is_a_400_naming_the_field(server, path, payload, param):
    # Before: a 500, int() raising ValueError (more than 4,300 digits) out of the JSON parser.
    status, reply = raw(server, "POST", path, _with_literal(payload, 5000))
    assert status == 400, reply
    assert reply["error"]["param"] == param and reply["error"]["type"] == "invalid_request_error", reply
    assert reply["error"]["message"] == (f"{param} is an integer of 5000 digits: the number is too large "
                                         "(at most 4300 digits are read)")
    assert server.loop.call(lambda e: len(e.scheduler.requests)) == 0
    assert metrics(server).get('flightcheck_http_errors_total{status="500"}', 0) == 0
    assert raw(server, "POST", "/v1/completions", OK)[0] == 200


def test_an_integer_at_pythons_digit_limit_reaches_the_fields_own_check(server):
    status, reply = raw(server, "POST", "/v1/completions",
                        _with_literal(b'{"model": "tiny", "prompt": [1], "max_tokens": N}', 4300))
    assert status == 400 and reply["error"]["param"] == "max_tokens", reply
    assert "leave room for" in reply["error"]["message"]  # parsed as the integer it is, then refused by value

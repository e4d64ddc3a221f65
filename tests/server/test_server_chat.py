"""Chat requests that name no ``max_tokens`` (the ``openai`` client's default) generate at most the
server's default (``Limits.default_max_tokens``, ``serve --default-max-tokens``), so their admission
reserves that many pages rather than the whole context's."""

import threading

from flightcheck.impl.server.schema import DEFAULT_MAX_TOKENS
from tests.server.conftest import Limits, client, make_chat_server, raw, wait_for


def test_chats_without_max_tokens_are_capped_and_leave_the_pool_room_for_a_third_request(model):
    # 240 pages of 16 tokens: two chats reserving up to the context's end (2048 tokens, 128 pages each, 126
    # for the second once the first published their shared template pages) cannot even both be admitted,
    # and the third request would wait for one of them to finish; capped, the three need about 45.
    server = make_chat_server(model, num_pages=240)
    replies = {}

    def chat(k):
        replies[k] = client(server).chat.completions.create(
            model="tiny", messages=[{"role": "user", "content": f"Tell me a long story, number {k}."}])

    def short():
        replies["short"] = raw(server, "POST", "/v1/completions", {"model": "tiny", "prompt": [7] * 20, "max_tokens": 2})

    try:
        # The engine thread waits on a gate, so all three arrive together and meet one admission.
        taken, gate = threading.Event(), threading.Event()
        holder = threading.Thread(target=server.loop.call, args=(lambda engine: taken.set() or gate.wait(60),))
        holder.start()
        assert taken.wait(60), "the engine thread did not take the gate"
        threads = [threading.Thread(target=chat, args=(k,)) for k in (1, 2)] + [threading.Thread(target=short)]
        for t in threads:
            t.start()
        wait_for(lambda: server.loop._commands.qsize() == 3, "the three arrivals to be queued")
        gate.set()
        for t in threads + [holder]:
            t.join(120)
            assert not t.is_alive()

        for k in (1, 2):
            assert replies[k].usage.completion_tokens == DEFAULT_MAX_TOKENS == 256  # the tiny model has no EOS
            assert replies[k].choices[0].finish_reason == "length"
        status, short_reply = replies["short"]
        assert status == 200
        events = server.loop.call(lambda engine: list(engine.events.events))
        admitted = {e["request"]: e["seq"] for e in events if e["action"] == "admit"}
        first_decode = min(e["seq"] for e in events if e["action"] == "decode")
        # All three admitted at once, in the first step, whatever order they arrived in: none queued.
        ids = [replies[k].flightcheck["request_id"] for k in (1, 2)] + [short_reply["flightcheck"]["request_id"]]
        assert all(admitted[i] < first_decode for i in ids), (ids, admitted, first_decode)
    finally:
        server.close()


def test_the_default_is_a_limit_of_the_server_and_explicit_limits_still_win(model):
    server = make_chat_server(model, num_pages=64, limits=Limits(default_max_tokens=3))
    try:
        messages = [{"role": "user", "content": "Hi"}]
        capped = client(server).chat.completions.create(model="tiny", messages=messages)
        assert capped.usage.completion_tokens == 3 and capped.choices[0].finish_reason == "length"
        explicit = client(server).chat.completions.create(model="tiny", messages=messages, max_completion_tokens=5)
        assert explicit.usage.completion_tokens == 5
        status, reply = raw(server, "POST", "/v1/chat/completions", {"model": "tiny", "messages": messages,
                                                                     "max_tokens": None})
        assert status == 200 and reply["usage"]["completion_tokens"] == 3, reply
    finally:
        server.close()

"""The server over the real SmolLM2-135M with the ``openai`` client: chat and text completions,
streamed text equal to the whole reply, stop strings, tokenization off the engine thread, and a text
prompt beyond the context refused before it reaches the engine."""

import threading

import pytest

from flightcheck.impl.config import EngineConfig
from flightcheck.impl.engine import Engine
from flightcheck.impl.server import Server
from tests.server.conftest import client, metrics

QUESTION = [{"role": "user", "content": "What is the capital of France?"}]


class RecordingTokenizer:
    """The real tokenizer, noting which thread each encode ran on."""

    def __init__(self, tokenizer):
        self._tokenizer = tokenizer
        self.encode_threads = []

    def encode(self, text):
        self.encode_threads.append(threading.current_thread().name)
        return self._tokenizer.encode(text)

    def encode_messages(self, messages):
        self.encode_threads.append(threading.current_thread().name)
        return self._tokenizer.encode_messages(messages)

    def __getattr__(self, name):
        return getattr(self._tokenizer, name)


@pytest.fixture(scope="module")
def server():
    engine = Engine.smollm2(EngineConfig(num_pages=256))
    engine.tokenizer = RecordingTokenizer(engine.tokenizer)
    srv = Server(engine, port=0).start()
    yield srv
    srv.close()


def test_chat_answers_and_streams_the_same_text(server):
    c = client(server)
    whole = c.chat.completions.create(model="smollm2-135m-instruct", messages=QUESTION, max_tokens=12, temperature=0)
    text = whole.choices[0].message.content
    assert "Paris" in text and whole.choices[0].message.role == "assistant"
    assert whole.object == "chat.completion" and whole.usage.completion_tokens <= 12
    chunks = list(c.chat.completions.create(model="smollm2-135m-instruct", messages=QUESTION, max_tokens=12,
                                            temperature=0, stream=True))
    assert "".join(ch.choices[0].delta.content or "" for ch in chunks) == text
    assert chunks[-1].choices[0].finish_reason == whole.choices[0].finish_reason
    # The second run found the first's prompt pages in the cache.
    assert chunks[-1].flightcheck["recovered_tokens"] > 0


def test_text_completion_with_a_stop_string_is_cut_before_it(server):
    c = client(server)
    base = c.completions.create(model="smollm2-135m-instruct", prompt="One, two, three, four,", max_tokens=10,
                                temperature=0).choices[0].text
    assert "," in base.strip()
    cut = base[:base.index(",", 1)] if base.startswith(",") else base[:base.index(",")]
    reply = c.completions.create(model="smollm2-135m-instruct", prompt="One, two, three, four,", max_tokens=10,
                                 temperature=0, stop=[","])
    assert reply.choices[0].text == cut and reply.choices[0].finish_reason == "stop"
    streamed = c.completions.create(model="smollm2-135m-instruct", prompt="One, two, three, four,", max_tokens=10,
                                    temperature=0, stop=[","], stream=True)
    assert "".join(ch.choices[0].text for ch in streamed) == cut


def test_prompts_are_tokenized_off_the_engine_thread(server):
    tokenizer = server.engine.tokenizer
    tokenizer.encode_threads.clear()
    client(server).completions.create(model="smollm2-135m-instruct", prompt="Hello", max_tokens=1)
    client(server).chat.completions.create(model="smollm2-135m-instruct", messages=QUESTION, max_tokens=1)
    assert len(tokenizer.encode_threads) == 2
    assert "flightcheck-engine" not in tokenizer.encode_threads


def test_a_text_prompt_beyond_the_context_is_refused_before_the_engine(server):
    from openai import BadRequestError

    before = metrics(server)["flightcheck_engine_steps_total"]
    with pytest.raises(BadRequestError) as info:
        client(server).completions.create(model="smollm2-135m-instruct", prompt="word " * 9000, max_tokens=1)
    assert info.value.body["param"] == "prompt" and "longer than the context of 8192" in info.value.body["message"]
    assert server.loop.call(lambda e: e.counters["num_steps"]) == before

"""Admission behind chats that name no max_tokens: how long a short completion waits, by the server's cap.

Two streaming chats that name no ``max_tokens`` (the ``openai`` client's default) arrive first; half a
second later a 30-token completion; once it is answered the chats go away. Admission reserves pages for every token a request may make, so
the chats' reservation is what the short request waits behind. Run once with ``--default-max-tokens``
at the context (8,192: the server before the cap) and once at the cap (256, today's default), on
SmolLM2 with a 1,024-page pool, one after the other.

    python scripts/bench_admission.py --json docs/bench/admission.json
"""

from __future__ import annotations

import argparse
import json
import threading
import time

WAIT_S = 60.0  # the longest the short request is waited for (the uncapped server makes it wait minutes)


def run(cap: int) -> dict:
    from openai import APITimeoutError, OpenAI

    from flightcheck.impl.config import EngineConfig
    from flightcheck.impl.engine import Engine
    from flightcheck.impl.server import Limits, Server

    server = Server(Engine.smollm2(EngineConfig(num_pages=1024)), port=0,
                    limits=Limits(default_max_tokens=cap)).start()
    api = OpenAI(base_url=server.url + "/v1", api_key="none", max_retries=0, timeout=600)
    chats: list[dict] = []
    done = threading.Event()

    def chat(k: int) -> None:
        sent, tokens, how = time.perf_counter(), 0, "ended"
        stream = api.chat.completions.create(
            model="smollm2-135m-instruct", stream=True, temperature=0,
            messages=[{"role": "user", "content": f"Tell me a long story about a lighthouse keeper, part {k}."}])
        for chunk in stream:
            if chunk.choices and chunk.choices[0].delta.content:
                tokens += 1
            if done.is_set():  # the short request is measured: the chat goes away (its request is aborted)
                how = "left"
                stream.close()
                break
        chats.append({"seconds": time.perf_counter() - sent, "chunks": tokens, "how": how})

    try:
        threads = [threading.Thread(target=chat, args=(k,)) for k in range(2)]
        for t in threads:
            t.start()
        time.sleep(0.5)
        sent = time.perf_counter()
        try:
            reply = api.with_options(timeout=WAIT_S).completions.create(
                model="smollm2-135m-instruct", prompt="The capital of France is", max_tokens=30, temperature=0)
            short, ttft = time.perf_counter() - sent, reply.model_extra["flightcheck"]["ttft_ms"]
        except APITimeoutError:
            short, ttft = None, None  # still waiting for admission after WAIT_S
        done.set()
        for t in threads:
            t.join()
        return {"default_max_tokens": cap, "short_request_s": short, "short_ttft_ms": ttft, "chats": chats}
    finally:
        server.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the figures here too")
    args = parser.parse_args()
    out = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "runs": [run(8192), run(256)]}
    for r in out["runs"]:
        took = (f"took {r['short_request_s']:.1f} s (TTFT {r['short_ttft_ms'] / 1000:.1f} s)" if r["short_request_s"]
                is not None else f"was not answered within {WAIT_S:.0f} s")
        print(f"default_max_tokens {r['default_max_tokens']:>5}: the 30-token completion {took}; the chats "
              f"{[round(c['seconds'], 1) for c in r['chats']]} s, {[c['chunks'] for c in r['chats']]} chunks, "
              f"{[c['how'] for c in r['chats']]}")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()

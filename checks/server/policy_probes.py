"""Probes of the serve options that are the engine's policy and capacities (``EngineConfig``'s fields),
each over HTTP against a started :class:`~.probe_server.ProbeServer`, reading what the engine did from
the replies (``flightcheck.role``, ``prompt_tokens_computed``, ``usage``), /metrics, or the ``--events``
log where only the order of events can tell (the release point, admissions, prefill chunks).

The prompts: :data:`~.probe_server.PROMPT` has 69 tokens, 4 shareable pages of 16 and a tail of 5, so a
follower computes 5 tokens and a request computing all of it 69. A value's probe checks that value's
behaviour, so the rows of one option tell its values apart (a server reading another value fails each).
"""

from __future__ import annotations

import threading
from typing import Any

from flightcheck.checks.server.probe_server import (
    PROMPT, WAIT_S, ProbeServer, cached, computed, expect, role_of, shown,
)
from flightcheck.checks.server.wire import Reply

SHARED_4 = PROMPT[:64] + list(range(100, 120))  # shares PROMPT's 4 pages, then differs
SHARED_2 = PROMPT[:32] + list(range(150, 190))  # shares PROMPT's first 2 pages only
# A streaming leader's tokens: it must still decode while the probe sends others (a few steps later), and
# a loaded machine may take a while to; 69 + 1900 tokens fit the tiny model's context of 2048.
LONG = 1900


def _body(prompt: list[int], max_tokens: int = 3, **extra: Any) -> dict[str, Any]:
    return {"model": "tiny", "prompt": prompt, "max_tokens": max_tokens, **extra}


def _roles(replies: list[Reply]) -> str:
    return ", ".join(f"{role_of(r)} computing {computed(r)}" for r in replies)


# --- coordination ------------------------------------------------------------------------------------
def coordination(server: ProbeServer) -> str:
    """A burst of identical requests (and, under "prefix", one sharing their first 4 pages): "none" has each
    compute its whole prompt, "single-flight" one leader and followers computing the tail, "prefix" the
    same and the sharing request waiting via their flight for those 4 pages."""
    value = server.options["coordination"]
    if value == "prefix":
        replies = server.burst([_body(PROMPT), _body(PROMPT), _body(SHARED_4)])
        waits = server.metric("flightcheck_engine_via_waits_total")
        expect(waits == 1 and computed(replies[2]) == len(SHARED_4) - 64,
               f"a request sharing 4 pages with a flight: {waits:g} waits via it, computed {computed(replies[2])} "
               f"of {len(SHARED_4)} tokens (not 1 wait and {len(SHARED_4) - 64})")
        replies, flights_wanted = replies[:2], 2  # the sharing request leads a flight of its own, for its tail
    else:
        replies, flights_wanted = server.burst([_body(PROMPT)] * 3), 1
    flights = server.metric("flightcheck_engine_flights_opened_total")
    if value == "none":
        want, flights_wanted = ["solo computing 69"] * len(replies), 0
    else:
        want = ["leader computing 69"] + ["follower computing 5"] * (len(replies) - 1)
    got = sorted(_roles(replies).split(", "), key=lambda r: not r.startswith("leader"))
    expect(got == want and flights == flights_wanted,
           f"a burst of {len(replies)} identical requests: {', '.join(got)}; flights opened: {flights:g} "
           f"(not {', '.join(want)}; {flights_wanted})")
    extra = "; a request sharing 4 pages waited via their flight and computed its tail" if value == "prefix" else ""
    return f"a burst of {len(replies)} identical requests: {', '.join(got)}{extra}"


def min_shared_pages(server: ProbeServer) -> str:
    """Under "prefix", a request sharing at least that many pages with a flight waits via it; fewer, not."""
    least = server.options["min_shared_pages"]
    replies = server.burst([_body(PROMPT), _body(SHARED_4), _body(SHARED_2)])
    waits = server.metric("flightcheck_engine_via_waits_total")
    want = sum(n >= least for n in (4, 2))
    expect(waits == want, f"requests sharing 4 and 2 pages with a flight: {waits:g} waited via it, not {want} "
           f"(computed {computed(replies[1])} and {computed(replies[2])} tokens)")
    return f"of requests sharing 4 and 2 pages with a flight, {want} waited via it"


def prefix_caching(server: ProbeServer) -> str:
    """Off: a prompt sent again recovers nothing from the cache, and no lookup is made."""
    on = server.options["prefix_caching"]
    first, again = server.complete(PROMPT, 1), server.complete(PROMPT, 1)
    expect(first.status == again.status == 200, f"the requests: {shown(first)}, {shown(again)}")
    want = 64 if on else 0
    lookups = server.metric("flightcheck_engine_prefix_lookups_total")
    expect(cached(again) == want and (lookups > 0) == on,
           f"a prompt sent again recovered {cached(again)} tokens with {lookups:g} cache lookups (not {want}, "
           f"{'some' if on else 'no'} lookups)")
    return f"a prompt sent again recovered {want} tokens"


# --- release, publication, leader loss ---------------------------------------------------------------
def release(server: ProbeServer) -> str:
    """A burst of identical requests: the flight's release comes after the leader's prefill and before its
    finish ("after-prefill"), or after its finish ("on-completion") (the event log)."""
    value = server.options["release"]
    server.burst([_body(PROMPT, 6)] * 3)
    evs = server.events()
    rel = next((e for e in evs if e["action"] == "release"), None)
    expect(rel is not None, "no flight was released")
    leader_finish = next(e["seq"] for e in evs if e["action"] == "finish" and e["request"] == rel["leader"])
    first_decode = next(e["seq"] for e in evs if e["action"] == "decode" and e["request"] == rel["leader"])
    before = rel["seq"] < leader_finish
    expect(rel.get("reason") == value and before == (value == "after-prefill") and len(rel["followers"]) == 2,
           f"the flight was released ({rel.get('reason')}) {'before' if before else 'after'} its leader finished, "
           f"with {len(rel['followers'])} followers")
    if value == "after-prefill":
        expect(rel["seq"] < first_decode, "the flight was released after its leader's first decode, not its prefill")
    return f"a burst of 3: the flight's 2 followers released {'before' if before else 'after'} the leader finished"


def publication(server: ProbeServer) -> str:
    """While a leader decodes (its flight open until completion here), a request sharing its 4 prompt pages
    finds them in the cache ("incremental": published after its prefill), or not ("on-completion")."""
    value = server.options["publication"]
    leader = server.stream(PROMPT, LONG)
    try:
        with server.held(1):
            other: list[Any] = []
            sender = threading.Thread(target=lambda: other.append(server.complete(SHARED_4, 1)), daemon=True)
            sender.start()
        sender.join(WAIT_S * 3)
    finally:
        leader.close()
    expect(bool(other) and other[0].status == 200, f"the sharing request: {shown(other[0] if other else None)}")
    want = 64 if value == "incremental" else 0
    expect(cached(other[0]) == want, f"a request sharing a decoding leader's 4 pages recovered {cached(other[0])} "
           f"tokens, not {want}")
    return f"a request sharing a decoding leader's 4 pages recovered {want} tokens"


def _followers_of_a_stream(server: ProbeServer, n: int) -> tuple[Any, list[Any], list[threading.Thread]]:
    """A leader streaming (its flight open until it completes) and ``n`` identical requests blocked on it."""
    leader = server.stream(PROMPT, LONG)
    replies: list[Any] = []
    threads = [threading.Thread(target=lambda: replies.append(server.complete(PROMPT, 2)), daemon=True)
               for _ in range(n)]
    with server.held(n):
        for t in threads:
            t.start()
    blocked = server.settle('flightcheck_live_requests{phase="blocked"}', n)
    if blocked != n:
        leader.close()
        expect(False, f"{blocked:g} requests blocked on a streaming leader's flight, not {n}")
    return leader, replies, threads


def leader_loss(server: ProbeServer) -> str:
    """A leader whose client goes away before the release: its 2 followers are released to compute
    ("release-all"), or the first is promoted to lead and the other keeps waiting ("promote")."""
    value = server.options["leader_loss"]
    leader, replies, threads = _followers_of_a_stream(server, 2)
    leader.close()
    for t in threads:
        t.join(WAIT_S * 3)
    expect(len(replies) == 2 and all(r.status == 200 for r in replies),
           f"the followers: {[shown(r) for r in replies]}")
    promotions = server.metric("flightcheck_engine_promotions_total")
    released = server.metric("flightcheck_engine_followers_released_total")
    want = (1, 1) if value == "promote" else (0, 2)
    expect((promotions, released) == want, f"after the leader went away: promoted {promotions:g}, released "
           f"{released:g} (not {want[0]} and {want[1]})")
    return f"the leader gone: {want[0]} promoted, {want[1]} released"


def follower_wait_bound(server: ProbeServer) -> str:
    """A follower blocked longer than the bound (in steps) expires and computes for itself while its leader
    still streams."""
    replies: list[Any] = []
    leader = server.stream(PROMPT, LONG)
    try:
        with server.held(1):
            sender = threading.Thread(target=lambda: replies.append(server.complete(PROMPT, 2)), daemon=True)
            sender.start()
        sender.join(WAIT_S * 3)
        expirations = server.metric("flightcheck_engine_expiries_total")
        streaming = server.metric('flightcheck_live_requests{phase="decode"}')
    finally:
        leader.close()
    expect(bool(replies) and replies[0].status == 200, f"the follower: {shown(replies[0] if replies else None)}")
    expect(expirations == 1 and streaming >= 1, f"a follower of a leader with {LONG} tokens to go: expiries "
           f"{expirations:g}, the leader {'still' if streaming else 'no longer'} decoding (not 1, while it decodes)")
    return f"a follower expired after {server.options['follower_wait_bound']} steps and computed for itself"


# --- capacities --------------------------------------------------------------------------------------
def max_running(server: ProbeServer) -> str:
    """A burst of 3 different prompts: never more requests running (admitted, not finished) than the bound."""
    bound = server.options["max_running"]
    server.burst([_body([i + 1] * 40, 3) for i in range(3)])
    running, most = set(), 0
    for e in server.events():
        if e["action"] == "admit":
            running.add(e["request"])
        elif e["action"] in ("finish", "abort", "fail"):
            running.discard(e["request"])
        most = max(most, len(running))
    expect(most == min(bound, 3), f"a burst of 3 different prompts ran {most} at once, not {min(bound, 3)}")
    return f"a burst of 3 different prompts ran {most} at once"


def prefill_chunk_pages(server: ProbeServer) -> str:
    """A 69-token prompt is prefilled at most that many pages (of 16 tokens) a forward pass."""
    pages = server.options["prefill_chunk_pages"]
    expect(server.complete(PROMPT, 1).status == 200, "the request failed")
    sizes = [e["num_tokens"] for e in server.events() if e["action"] == "prefill"]
    want = [min(16 * pages, 69 - i) for i in range(0, 69, 16 * pages)]
    expect(sizes == want, f"a 69-token prompt was prefilled in passes of {sizes} tokens, not {want}")
    return f"a 69-token prompt was prefilled in {len(sizes)} passes of at most {16 * pages} tokens"


def num_pages(server: ProbeServer) -> str:
    """/metrics counts the pool's pages; a request needing more pages than the pool is refused (400)."""
    pool = server.options["num_pages"]
    pages = sum(v for k, v in server.metrics().items() if k.startswith("flightcheck_pages{"))
    expect(pages == pool, f"/metrics counts {pages:g} pages, not {pool}")
    reply = server.complete([7] * (16 * pool + 1), 1)
    expect(reply.status == 400, f"a prompt of {16 * pool + 1} tokens ({pool + 1} pages, more than the pool has): "
           f"{shown(reply)}, not 400")
    return f"/metrics counts {pool} pages; a prompt needing more is refused (400)"


def max_context(server: ProbeServer) -> str:
    """/v1/models reports the context; a prompt and max_tokens filling it are served, one token more is a 400."""
    context = server.options["max_context"]
    models = server.request("GET", "/v1/models")
    said = ((models.body.get("data") or [{}])[0] if isinstance(models.body, dict) else {}).get("context_length")
    room = context - len(PROMPT)
    fits, over = server.complete(PROMPT, room), server.complete(PROMPT, room + 1)
    expect(said == context, f"/v1/models says a context of {said}, not {context}")
    expect(fits.status == 200 and over.status == 400, f"69 prompt tokens and max_tokens {room}: {shown(fits)}; "
           f"{room + 1}: {shown(over)} (not 200 and 400)")
    return f"a context of {context}: 69 + {room} tokens served, one more refused (400)"


def seed(server: ProbeServer) -> str:
    """A sampled request naming no seed draws from the engine's seed: its tokens are those an engine of
    that seed samples, not those of seed 0."""
    from flightcheck.impl.config import EngineConfig
    from flightcheck.impl.engine import Engine
    from flightcheck.impl.runner import ModelRunner
    from flightcheck.impl.tiny import tiny_model

    value = server.options["seed"]
    reply = server.complete(PROMPT, 12, temperature=1.0)
    expect(reply.status == 200, f"the request: {shown(reply)}")
    got = (reply.body.get("choices") or [{}])[0].get("token_ids")

    def sampled(engine_seed: int) -> list[int]:
        # Why not Engine.tiny: the same weights (tiny_model(0)), but not the factory the server's engine
        # came from, so that an engine built there with another seed cannot agree with itself here.
        engine = Engine(ModelRunner(tiny_model(0), num_pages=64), None, EngineConfig(num_pages=64, seed=engine_seed))
        try:
            request = engine.add_request(PROMPT, {"temperature": 1.0, "max_tokens": 12})
            engine.run()
            return list(engine.result(request).output_token_ids)
        finally:
            engine.close()

    want, other = sampled(value), sampled(0 if value else 1)
    expect(want != other, f"seeds {value} and {0 if value else 1} sample the same tokens: the probe cannot tell them")
    expect(got == want, f"a sampled request without a seed drew {got}, not seed {value}'s {want}")
    return f"a sampled request without a seed drew seed {value}'s tokens"


__all__ = ["coordination", "follower_wait_bound", "leader_loss", "max_context", "max_running", "min_shared_pages",
           "num_pages", "prefill_chunk_pages", "prefix_caching", "publication", "release", "seed"]

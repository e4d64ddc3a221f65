"""Random conformance programs from a seed: the same seed gives the same programs, so the same verdict.

:func:`random_program` draws a free program: a policy (coordination, release point, publication,
leader-loss policy, prefix caching, the least overlap prefix coordination waits for), capacity, prefill
budget, a pool from tight (evictions, admission waiting for memory) to roomy, an optional follower wait
bound, prompt classes of every shape (shorter than a page, whole pages, a tail, and prompts that start
with another prompt's first pages: a shared document, a conversation's earlier turn), templates with their ``max_tokens``, and then client operations
with a swarm of kinds switched off (so some runs are all aborts, others all holds); one in five is a
:func:`pressure_program`, which keeps the cache full and evicts many times a run. :func:`scenario_program`
draws a program bound to a default scenario: its requests, its policy and pool, and only the client
operations its options allow, so the run lands on the scenario's explored graph.

For example::

    >>> import random
    >>> a = random_program(random.Random(7))
    >>> b = random_program(random.Random(7))
    >>> a == b, len(a.setup.templates) >= 1
    (True, True)
"""

from __future__ import annotations

import random

from flightcheck.checks.conform.program import KINDS, NOTICE_OPS, PICKING_OPS, REFUSALS, SUBMIT_OPS, Op, Program, Setup, Template
from flightcheck.checks.conform.prompts import lifetime_pages, scenario_tokens, tree_shapes
from flightcheck.spec.scenario import COORDINATIONS, LEADER_LOSSES, PUBLICATIONS, RELEASES, SCENARIOS

# How often each client operation is drawn (before the swarm switches some kinds off).
WEIGHTS = {"arrive": 3.0, "step": 4.0, "abort": 1.0, "notify": 0.5, "hold": 1.0, "resume": 0.6, "expire": 0.7,
           "fault": 0.5}
OPTIONAL = ("abort", "notify", "hold", "expire", "fault")


def random_setup(rng: random.Random, *, fixed: dict | None = None) -> Setup:
    """A free engine setup; ``fixed`` pins any config field (e.g. ``{"release": "on-completion"}``)."""
    fixed = dict(fixed or {})
    coordination = rng.choice(("single-flight", "prefix", "prefix", "none"))
    caching = coordination != "none" or rng.random() < 0.75
    capacity = rng.randint(1, 3)
    prompts = tree_shapes(rng.randint, rng.choice, rng.randint(1, 3))
    templates = []
    for t in range(rng.randint(1, 4)):
        c = t % len(prompts)
        tokens = tuple(prompts[c])
        templates.append(Template(tokens, rng.randint(1, 4), f"P{c}:{len(tokens)}"))
    lifetime = max(lifetime_pages(len(t.tokens), t.max_tokens) for t in templates)
    config = {
        "coordination": coordination, "release": rng.choice(RELEASES), "publication": rng.choice(PUBLICATIONS),
        "leader_loss": rng.choice(LEADER_LOSSES), "prefix_caching": caching, "max_running": capacity,
        "prefill_chunk_pages": rng.choice((1, 2, 64)), "num_pages": rng.randint(lifetime, lifetime * capacity + 3),
        "follower_wait_bound": rng.choice((None, None, None, 1, 3)), "min_shared_pages": rng.choice((1, 1, 2)),
    }
    context = _max_context(rng, templates)
    if context is not None:
        config["max_context"] = context
    config.update(fixed)
    if config["coordination"] != "none":
        config["prefix_caching"] = True
    return Setup(config, tuple(templates), eos_template=_eos_template(rng, len(templates)),
                 stop_template=_stop_template(rng, len(templates)))


def _max_context(rng: random.Random, templates: list[Template]) -> int | None:
    """In a fifth of the runs, a context that ends some requests before their ``max_tokens``: the
    longest prompt plus 0 to 3 tokens (a longer prompt would be refused at arrival). Drawn as
    :func:`_eos_template` is, from a generator of its own."""
    side = _side(rng, 0xC07)
    if side.random() >= 0.2:
        return None
    return max(len(t.tokens) for t in templates) + side.randint(0, 3)


def _eos_template(rng: random.Random, num_templates: int) -> int | None:
    """In a quarter of the runs, one template's first token is an EOS token (see ``Setup``). Drawn from
    a generator of its own, seeded by ``rng``'s state without advancing it, so the rest of a program
    is what it was before runs could finish on EOS."""
    side = _side(rng, 0)
    return side.randrange(num_templates) if side.random() < 0.25 else None


def _side(rng: random.Random, salt: int) -> random.Random:
    """A generator of its own for one optional draw, seeded by ``rng``'s state (and ``salt``, one per
    draw) without advancing it, so that adding a draw leaves every other part of a program as it was."""
    return random.Random(hash(rng.getstate()[1]) ^ salt)


def _stop_template(rng: random.Random, num_templates: int) -> int | None:
    """In a quarter of the runs, one template's requests carry a stop string (see ``Setup``); drawn as
    :func:`_eos_template` is, from a generator of its own."""
    side = _side(rng, 0x570)
    return side.randrange(num_templates) if side.random() < 0.25 else None


def random_ops(rng: random.Random, num_templates: int, allowed: tuple[str, ...] = OPTIONAL, *,
               length: int | None = None, once: bool = False) -> tuple[Op, ...]:
    """Client operations; ``once``: each template arrives at most once (scenario-bound runs)."""
    kinds = [k for k in allowed if rng.random() < 0.7]  # swarm testing: some kinds off for the whole run
    names = ["arrive", "step"] + kinds
    weights = [WEIGHTS[n] for n in names]
    pending = list(range(num_templates))
    rng.shuffle(pending)
    ops: list[Op] = []
    for _ in range(length or rng.randint(4, 28)):
        name = rng.choices(names, weights)[0]
        if name in SUBMIT_OPS:
            if once and not pending:
                continue
            t = pending.pop() if once else rng.randrange(num_templates)
            ops.append(("arrive", t, rng.choice((0.0, 0.0, 0.8)), rng.randint(0, 3)))
        elif name == "step":
            ops.append(("step", rng.choice((1, 1, 1, 2, 3))))
        elif name in PICKING_OPS:
            ops.append((name, rng.choice(KINDS), rng.randint(0, 3)))
        elif name in NOTICE_OPS:
            ops.append((name, rng.choice(("unknown", "terminated")), rng.randint(0, 5)))
        else:
            ops.append((name, rng.randint(0, 3)))
    if once:
        ops += [("arrive", t, 0.0, 0) for t in pending]  # every request of the scenario does arrive
    return tuple(_with_refusals(_side(rng, 0x4EF), ops))


def _with_refusals(side: random.Random, ops: list[Op]) -> list[Op]:
    """In a third of the programs, one to three client calls the engine must refuse (an expiry of a
    request that is not blocked, a test hook on a terminated or unknown one), each right after an
    arrival or a step, where there are requests to name; drawn from a generator of their own, so the
    rest of a program is what it was before. A correct engine changes nothing on them, so the run
    around them is the same run."""
    if side.random() >= 1 / 3:
        return ops
    out = list(ops)
    for _ in range(side.randint(1, 3)):
        call = side.choice(("expire", "expire", "hold", "fault"))
        after = [n + 1 for n, op in enumerate(out) if op[0] in SUBMIT_OPS or op[0] == "step"]
        where = side.choice(after) if after else side.randint(0, len(out))
        out.insert(where, ("refuse", call, side.choice(REFUSALS[call]), side.randint(0, 3)))
    return out


def random_program(rng: random.Random, *, fixed: dict | None = None) -> Program:
    """A free program: a random setup and random operations; one in five is a memory-pressure program
    instead (see :func:`pressure_program`), drawn from a generator of its own so that the others are
    the programs they were before."""
    side = _side(rng, 0x5EED)
    if side.random() < 0.2:
        return pressure_program(side, fixed=fixed)
    setup = random_setup(rng, fixed=fixed)
    return Program(setup, random_ops(rng, len(setup.templates)))


def pressure_program(rng: random.Random, *, fixed: dict | None = None) -> Program:
    """A program that keeps the cache full: several prompts (sharing pages or not) arrive a few at a
    time and mostly finish before the next ones, earlier prompts come back (cache hits that must make
    their pages recently used), and the pool holds the largest request with room for only a page or
    two of cache. So admissions wait for memory, allocations evict one unreferenced leaf after
    another, and which leaf goes (the least recently used) is checked many times a run, where the free
    programs evict about once in fourteen."""
    prompts = tree_shapes(rng.randint, rng.choice, rng.randint(3, 5))
    templates = tuple(Template(tuple(p), rng.randint(1, 3), f"P{c}:{len(p)}") for c, p in enumerate(prompts))
    lifetime = max(lifetime_pages(len(t.tokens), t.max_tokens) for t in templates)
    capacity = rng.randint(1, 2)
    config = {
        "coordination": rng.choice(COORDINATIONS), "release": rng.choice(RELEASES),
        "publication": rng.choice(PUBLICATIONS), "leader_loss": rng.choice(LEADER_LOSSES), "prefix_caching": True,
        "max_running": capacity, "prefill_chunk_pages": rng.choice((1, 2, 64)),
        "num_pages": lifetime + rng.randint(0, 2) + (lifetime if capacity > 1 and rng.random() < 0.5 else 0),
        "follower_wait_bound": None, "min_shared_pages": 1,
    }
    config.update(fixed or {})
    if config["coordination"] != "none":
        config["prefix_caching"] = True
    ops: list[Op] = []
    for _ in range(rng.randint(6, 12)):
        for _ in range(rng.choice((1, 1, 1, 2))):
            ops.append(("arrive", rng.randrange(len(templates)), 0.0, 0))
        if rng.random() < 0.1:
            ops.append(("abort", rng.choice(KINDS), rng.randint(0, 3)))
        ops.append(("step", rng.choice((3, 4, 5, 6))))
    return Program(Setup(config, templates), tuple(ops))


def scenario_setup(rng: random.Random, name: str, policy: dict | None = None) -> Setup:
    """A setup bound to default scenario ``name`` (under ``policy`` changes): its requests as templates.

    With a pool the engine's pool is the scenario's and every request keeps its full decode bound and
    tail (memory depends on both); without one, requests may finish earlier, tails vary, and the pool is
    tight enough to evict only where the scenario allows background eviction."""
    from flightcheck.checks.conform.policy_map import config_of

    scn = SCENARIOS[name].with_policy(**(policy or {}))
    templates = []
    exact = scenario_tokens(scn)
    varied = scenario_tokens(scn, {c: rng.choice((1, 5, 15)) for c in scn.classes})
    for r in scn.requests:
        if scn.has_pool:
            tokens, max_tokens = exact[r.cls], r.num_decode + 1
        else:
            tokens, max_tokens = varied[r.cls], rng.randint(1, r.num_decode + 1)
        templates.append(Template(tuple(tokens), max_tokens, f"P{scn.classes.index(r.cls)}:{len(tokens)}"))
    lifetimes = [lifetime_pages(len(t.tokens), t.max_tokens) for t in templates]
    roomy = sum(lifetimes) + sum(r.num_shareable for r in scn.requests) + 2
    if scn.has_pool:
        num_pages = scn.num_pages
    elif scn.eviction:
        num_pages = rng.randint(max(lifetimes), roomy)
    else:
        num_pages = roomy
    config = config_of(scn.policy, num_pages)
    fields = {k: getattr(config, k) for k in ("coordination", "release", "publication", "leader_loss", "prefix_caching",
                                              "max_running", "prefill_chunk_pages", "num_pages", "min_shared_pages")}
    # Early finishes are the spec's only without a pool (with one, memory depends on the whole decode).
    eos = None if scn.has_pool else _eos_template(rng, len(templates))
    stop = None if scn.has_pool else _stop_template(rng, len(templates))
    return Setup(fields, tuple(templates), name, dict(policy or {}), eos, stop)


def scenario_program(rng: random.Random, name: str, policy: dict | None = None) -> Program:
    """A program bound to default scenario ``name``: only the client operations its options allow."""
    scn = SCENARIOS[name]
    allowed = ("hold",) + (("abort",) if scn.aborts else ()) + (("notify",) if scn.notifications else ()) \
        + (("expire",) if scn.expiry else ()) + (("fault",) if scn.failures else ())
    setup = scenario_setup(rng, name, policy)
    return Program(setup, random_ops(rng, len(setup.templates), allowed, once=True))

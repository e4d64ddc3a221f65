"""States in the design's own words: what a person reads in counterexamples, graphs and reports.

:func:`describe` turns a state into a readable dictionary (requests with their phase, role and progress,
open flights, the index, the released set, cached pages with their references, raised ghosts);
:func:`label` is the compact multi-line form drawn in graph nodes; :func:`changes` says what one step
changed ("r1: blocked -> waiting", "flight f0 closed", "page A0 ready refs=1"). They read only the
layout, so every checker and every picture speaks the same vocabulary.

For example::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec, Action
    >>> spec = FlightSpec(SCENARIOS["burst2"])
    >>> s = spec.apply(spec.initial(), Action("arrive", 0))
    >>> changes(spec, spec.initial(), s)
    'r0: waiting, leads f0; index A -> f0'
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from flightcheck.spec.state import CLOSED, DRAINING, OPEN, PAGE_NAMES, PHASE_NAMES, State

if TYPE_CHECKING:
    from flightcheck.spec.model import FlightSpec

#: What each phase of a request means, by its name in :data:`~flightcheck.spec.state.PHASE_NAMES`.
PHASE_MEANINGS = {
    "absent": "not arrived yet",
    "blocked": "a follower waiting for its flight's release (or a leader waiting via another prompt's flight); "
               "it holds no pages of its own",
    "waiting": "queued for admission; a released follower pins the pages its leader held",
    "prefill": "running: computing its prompt's pages, a chunk per step",
    "decode": "running: its prefill is done, it produces a token per step",
    "finished": "ended normally (its pages published, its references dropped)",
    "aborted": "ended by a client cancel",
    "failed": "ended by a failed forward pass",
}
#: What each state of a cached page means, by its name in :data:`~flightcheck.spec.state.PAGE_NAMES`.
PAGE_MEANINGS = {
    "-": "not cached (a page still referenced after its eviction shows so)",
    "reserved": "allocated, its KV not computed yet (only a wrong design makes it visible)",
    "ready": "computed and published: a lookup hits it",
}
#: The flight states a state shows (a closed flight is not shown), by their slot value.
FLIGHT_STATES = {OPEN: "open", DRAINING: "draining"}
#: What each shown flight state means.
FLIGHT_MEANINGS = {
    "open": "its leader computes; requests for the same input follow it (the index points here)",
    "draining": "released but kept until its members terminate (the draining design's flights)",
}
#: What each field of a request in :func:`describe` means.
REQUEST_FIELDS = {
    "phase": "where the request is (see the phases)",
    "flight": "the flight it belongs to, named after the request that leads it",
    "role": "leader (computes the shared pages) or follower (waits for them)",
    "via": "the other prompt's flight whose shared pages it waits for (prefix coordination)",
    "released": "in the coordinator's released set: its termination will be accepted",
    "expired": "its wait ran out: it computes what it needs itself",
    "hit": "pages found in the cache at admission",
    "done": "prompt units computed so far",
    "published": "shareable pages it holds references on (published or hit)",
    "decoded": "tokens produced so far",
    "pinned": "pages it holds references on while waiting (its leader's, pinned at release)",
    "holding": "pages a terminated leader still holds until its flight is released",
}
#: What each ghost means when it is raised: a slot that only the properties read.
GHOST_MEANINGS = {"g_term": "termination misjudged", "g_early": "released early", "g_dup": "page prefilled twice"}


def class_name(c: int) -> str:
    """Class slot 0 -> ``A``, 1 -> ``B``, ..."""
    return chr(ord("A") + c) if c < 26 else f"C{c}"


def page_name(spec: FlightSpec, k: int) -> str:
    """Page slot ``k`` -> ``A0`` (class A, page 0; a page shared in a prompt tree is named after the
    first class that has it)."""
    c, p = spec.layout.page_slots[k]
    return f"{class_name(c)}{p}"


def _name(names: tuple[str, ...], value: int) -> str:
    """A slot value's name; a value out of its range (a counterexample to induction starts from a state no
    lemma constrains yet) reads as the number, marked."""
    return names[value] if 0 <= value < len(names) else f"?{value}"


def describe(spec: FlightSpec, state: State) -> dict[str, Any]:
    """A readable dictionary of a state: requests, flights, index, released IDs, cached pages, ghosts."""
    s = spec.view(state)
    n = spec.num_requests
    reqs = {}
    for i in range(n):
        ph = _name(PHASE_NAMES, s.ph[i])
        d: dict[str, Any] = {"phase": ph}
        if s.mem[i]:
            f = s.mem[i] - 1
            d["flight"] = f"f{f}"
            d["role"] = "leader" if f == i else "follower"
        if s.via[i]:
            d["via"] = f"f{s.via[i] - 1}"
        if s.rel[i]:
            d["released"] = True
        if s.exp[i]:
            d["expired"] = True
        if ph in ("prefill", "decode"):
            d.update(hit=s.hit[i], done=s.done[i], published=s.pubd[i], decoded=s.dec[i])
        elif s.pubd[i]:
            d["pinned" if ph == "waiting" else "holding"] = s.pubd[i]
        reqs[f"r{i}"] = d
    flights = {
        f"f{f}": FLIGHT_STATES[OPEN if s.fl[f] == OPEN else DRAINING]
        for f in range(n) if s.fl[f] != CLOSED
    }
    index = {class_name(c): f"f{s.idx[c] - 1}" for c in range(len(spec.layout.classes)) if s.idx[c]}
    pages = {
        page_name(spec, k): {"state": _name(PAGE_NAMES, s.pg[k]), "refs": s.ref[k]}
        for k in range(len(spec.layout.page_slots)) if s.pg[k] or s.ref[k]
    }
    ghosts = {g: getattr(s, g) for g in GHOST_MEANINGS if getattr(s, g)}
    out = {"requests": reqs, "flights": flights, "index": index,
           "released": [f"r{i}" for i in range(n) if s.rel[i]], "pages": pages, "ghosts": ghosts}
    if spec.scenario.has_pool:
        from flightcheck.spec import pool
        out["pool"] = {"free": pool.free_pages(spec, s), "evictable": pool.num_evictable(spec, s),
                       "reserved": pool.total_reserved(spec, s)}
    return out


def label(spec: FlightSpec, state: State) -> str:
    """A compact multi-line label for graph nodes, one fact per line.

    One line per request that has arrived (``r0 L prefill 1/3 pub1``: leader, prefill units done of
    the prompt's units, shareable pages published; ``F`` a follower, ``hit2`` pages recovered from the
    cache, ``decode 0/1`` decode steps taken), then the open flights with the index, the released set,
    the cached pages with their references (``A0 ref1``; ``A1 rsv`` a reserved page), and any ghost a
    property flags. For example::

        >>> from flightcheck.spec.scenario import SCENARIOS
        >>> from flightcheck.spec.model import FlightSpec, Action
        >>> spec = FlightSpec(SCENARIOS["burst2"])
        >>> print(label(spec, spec.apply(spec.initial(), Action("arrive", 0))))
        r0 L waiting
        flight f0 open; index A->f0
    """
    d = describe(spec, state)
    lines = []
    for i, (r, info) in enumerate(d["requests"].items()):
        ph = info["phase"]
        if ph == "absent":
            continue
        role = {"leader": " L", "follower": " F"}.get(info.get("role", ""), "")
        extra = ""
        if ph == "prefill":
            extra = f" {info['done']}/{spec.scenario.requests[i].num_units} pub{info['published']}"
        elif ph == "decode":
            extra = f" {info['decoded']}/{spec.scenario.requests[i].num_decode} pub{info['published']}"
        if info.get("hit"):
            extra += f" hit{info['hit']}"
        if info.get("pinned"):
            extra += f" pin{info['pinned']}"
        if info.get("holding"):
            extra += f" holds{info['holding']}"
        if info.get("via"):
            extra += f" via {info['via']}"
        if info.get("expired"):
            extra += " expired"
        lines.append(f"{r}{role} {ph}{extra}")
    if d["flights"]:
        fl = ", ".join(f"{k} {v}" for k, v in d["flights"].items())
        idx = ", ".join(f"{c}->{f}" for c, f in d["index"].items())
        lines.append(("flights " if len(d["flights"]) > 1 else "flight ") + fl + (f"; index {idx}" if idx else ""))
    elif d["index"]:
        lines.append("index " + ", ".join(f"{c}->{f}" for c, f in d["index"].items()))
    if d["released"]:
        lines.append("released " + ",".join(d["released"]))
    if d["pages"]:
        lines.append("pages " + ", ".join(
            f"{k} ref{v['refs']}" if v["state"] == "ready" else f"{k} rsv{v['refs']}" if v["state"] == "reserved"
            else f"{k} gone ref{v['refs']}" for k, v in d["pages"].items()))
    for g in d["ghosts"]:
        lines.append("!! " + GHOST_MEANINGS[g])
    return "\n".join(lines) or "nothing arrived"


def changes(spec: FlightSpec, before: State, after: State) -> str:
    """What changed between two states, in the design's words."""
    a, b = describe(spec, before), describe(spec, after)
    out = []
    for r, info in b["requests"].items():
        old = a["requests"][r]
        if info == old:
            continue
        bits = []
        if info["phase"] != old["phase"]:
            bits.append(info["phase"])
        if info.get("flight") != old.get("flight") and info.get("flight"):
            bits.append(("leads " if info.get("role") == "leader" else "follows ") + info["flight"])
        elif old.get("flight") and not info.get("flight"):
            bits.append(f"left {old['flight']}")
        if info.get("via") != old.get("via"):
            bits.append(f"waits via {info['via']}" if info.get("via") else f"stops waiting via {old['via']}")
        if info.get("released") != old.get("released"):
            bits.append("released" if info.get("released") else "unreleased")
        if info.get("expired") and not old.get("expired"):
            bits.append("wait expired")
        for k in ("hit", "done", "published", "decoded", "pinned", "holding"):
            if k in info and info[k] != old.get(k) and not (k == "hit" and info[k] == 0):
                bits.append(f"{k}={info[k]}")
        out.append(f"{r}: " + ", ".join(bits))
    for f in sorted(set(a["flights"]) | set(b["flights"])):
        if a["flights"].get(f) != b["flights"].get(f) and f in a["flights"]:
            out.append(f"flight {f} " + (b["flights"].get(f) or "closed"))
    for c in sorted(set(a["index"]) | set(b["index"])):
        if a["index"].get(c) != b["index"].get(c):
            out.append(f"index {c} -> {b['index'].get(c, '-')}")
    for pg in sorted(set(a["pages"]) | set(b["pages"])):
        if a["pages"].get(pg) != b["pages"].get(pg):
            v = b["pages"].get(pg)
            out.append(f"page {pg} " + (f"{v['state']} refs={v['refs']}" if v else "evicted"))
    if "pool" in b and a["pool"] != b["pool"]:
        out.append("pool " + ", ".join(f"{k}={v}" for k, v in b["pool"].items() if a["pool"].get(k) != v))
    for g, v in b["ghosts"].items():
        if a["ghosts"].get(g) != v:
            out.append(GHOST_MEANINGS[g].upper())
    return "; ".join(out) if out else "(state unchanged)"

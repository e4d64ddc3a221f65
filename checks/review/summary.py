"""One tree's behaviour as JSON: every default scenario's state graph and verdicts, and every variant's.

Run inside a side's process by :mod:`bootstrap` (loaded by path, so it must import nothing of
``flightcheck.checks.review``, which an old baseline lacks); everything else it imports is the tree's
own: its scenarios, policy grid, variants and explorer. Per scenario and policy the summary holds the
explorer's counts, each property's verdict and counterexample, and the graph: a node per state, keyed by
:func:`state_key` (a hash of the spec's own ``describe()`` of the state, with request names replaced by
what the requests are, so that neither a renumbering of states, nor a reordering of slots, nor another
choice of symmetry representative is a change), a one-line label per node, and its edges.

For example::

    >>> own = {"r0": '["A",{"phase":"prefill"}]', "r1": '["A",{"phase":"waiting"}]'}
    >>> rename({"requests": {"r1": {"phase": "waiting", "flight": "f0"}}, "index": {"A": "f0"}}, own)
    {'requests': [['["A",{"phase":"waiting"}]', {'phase': 'waiting', 'flight': '@["A",{"phase":"prefill"}]'}]], 'index': {'A': '@["A",{"phase":"prefill"}]'}}
    >>> compact({"requests": {"r0": {"phase": "absent"}, "r1": {"phase": "waiting", "role": "leader"}},
    ...          "flights": {"f1": "open"}, "index": {"A": "f1"}, "released": [], "pages": {}})
    'r1 waiting role=leader; flights f1=open; index A=f1'
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

SCHEMA = 1
_NAME = re.compile(r"^[rf](\d+)$")  # a request (r3) or the flight its leader opened (f3)


def load_api() -> SimpleNamespace:
    """The tree's scenarios, policy grid, variants, spec class and explorer (ImportError or AttributeError
    when the tree has another layout)."""
    from flightcheck.spec.model import FlightSpec
    from flightcheck.spec.scenario import SCENARIOS, policy_grid
    from flightcheck.spec.variants import VARIANTS

    try:
        from flightcheck.checks.explore.choose import explore_with as explore
    except ImportError:  # before the batched explorer: the reference one
        from flightcheck.checks.explore.explorer import explore
    for name in ("describe",):
        if not hasattr(FlightSpec, name):
            raise AttributeError(f"FlightSpec has no {name}(): states cannot be matched by the spec's words")
    return SimpleNamespace(SCENARIOS=SCENARIOS, policy_grid=policy_grid, VARIANTS=VARIANTS, FlightSpec=FlightSpec,
                           explore=explore)


def rename(obj: Any, own: dict[str, str]) -> Any:
    """``obj`` (a ``describe()`` dictionary or part of it) with every request or flight name replaced by
    ``@`` and the signature of that request (``own``), and every mapping keyed by such names turned into
    a list of ``[signature, value]`` pairs, sorted: a form that does not depend on request numbering."""
    if isinstance(obj, str):
        m = _NAME.match(obj)
        return "@" + own[f"r{m.group(1)}"] if m and f"r{m.group(1)}" in own else obj
    if isinstance(obj, dict):
        if obj and all(isinstance(k, str) and _NAME.match(k) for k in obj):
            pairs = [[own.get("r" + k[1:], k), rename(v, own)] for k, v in obj.items()]
            return sorted(pairs, key=lambda p: json.dumps(p, sort_keys=True))
        return {k: rename(v, own) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        items = [rename(x, own) for x in obj]
        if items and all(isinstance(x, str) and x.startswith("@") for x in items):
            return sorted(items)
        return items
    return obj


def state_key(described: dict[str, Any], requests: list[str]) -> str:
    """A 16-hex-digit key of a state from its ``describe()`` and each request's scenario entry (``repr``):
    equal for states that differ only by which interchangeable request is which."""
    own = {}
    for i, (name, info) in enumerate(described.get("requests", {}).items()):
        plain = {k: v for k, v in info.items() if not (isinstance(v, str) and _NAME.match(v))}
        own[name] = json.dumps([requests[i] if i < len(requests) else "", plain], sort_keys=True,
                               separators=(",", ":"))
    text = json.dumps(rename(described, own), sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()


def compact(described: dict[str, Any]) -> str:
    """A one-line label of a ``describe()`` dictionary: each arrived request, then every other non-empty
    part (flights, index, released, pages, ghosts, pool)."""
    parts = []
    for name, info in described.get("requests", {}).items():
        if info.get("phase") == "absent":
            continue
        rest = " ".join(k if v is True else f"{k}={v}" for k, v in info.items() if k != "phase")
        parts.append(f"{name} {info.get('phase')}" + (f" {rest}" if rest else ""))
    for part, value in described.items():
        if part == "requests" or not value:
            continue
        if isinstance(value, dict):
            text = ", ".join(f"{k}=" + ("/".join(map(str, v.values())) if isinstance(v, dict) else str(v))
                             for k, v in value.items())
        elif isinstance(value, (list, tuple)):
            text = ",".join(map(str, value))
        else:
            text = str(value)
        parts.append(f"{part} {text}")
    return "; ".join(parts) or "nothing arrived"


def _key(scn: Any) -> str:
    """The row key ``flightcheck check`` uses for a scenario and policy (its explore stage's)."""
    p = scn.policy
    coordination = f" {p.coordination}" if getattr(scn, "prefixes", None) else ""
    return f"{scn.name}{coordination} {p.release} {p.publication} {getattr(p, 'leader_loss', '')}".rstrip()


def _verdicts(result: Any) -> tuple[dict[str, str], dict[str, int], dict[str, list[str]]]:
    verdicts, lengths, paths = {}, {}, {}
    for p in result.properties:
        verdicts[p.name] = p.verdict
        if not p.holds and p.counterexample is not None:
            lengths[p.name] = len(p.counterexample)
            paths[p.name] = list(p.counterexample.actions)
    return verdicts, lengths, paths


def graph_summary(result: Any) -> dict[str, Any]:
    """The graph of one exploration: ``nodes`` (keys, the initial state first), ``labels`` and ``arcs``
    (``[from, to, action]`` by node index, one per ordered pair of states)."""
    spec, graph = result.spec, result.graph
    requests = [repr(r) for r in getattr(spec.scenario, "requests", ())]
    order = [result.initial] + [s for s in graph.nodes if s != result.initial]
    index = {s: i for i, s in enumerate(order)}
    keys, labels = [], []
    for s in order:
        d = spec.describe(s)
        keys.append(state_key(d, requests))
        labels.append(compact(d))
    arcs = [[index[u], index[v], (data.get("actions") or ["?"])[0]] for u, v, data in graph.edges(data=True)]
    return {"nodes": keys, "labels": labels, "arcs": arcs}


def explore_item(api: Any, scn: Any, spec: Any = None, **explore_options: Any) -> dict[str, Any]:
    """One scenario under one policy (the design's, or ``spec``: a variant's over ``scn``): counts,
    verdicts, counterexamples and the graph."""
    r = api.explore(spec if spec is not None else api.FlightSpec(scn), **explore_options)
    verdicts, lengths, paths = _verdicts(r)
    return {"key": _key(scn), "scenario": scn.name, "policy": dataclasses.asdict(scn.policy),
            "states": r.stats.states, "edges": r.stats.edges, "verdicts": verdicts, "lengths": lengths,
            "paths": paths, **graph_summary(r)}


def variant_item(api: Any, variant: Any) -> dict[str, Any]:
    """One design variant on its demo scenario: what it must violate, and every verdict."""
    r = api.explore(variant.demo_spec())
    verdicts, lengths, paths = _verdicts(r)
    return {"name": variant.name, "expected": variant.expected_violation,
            "scenario": getattr(variant, "demo", None), "states": r.stats.states, "verdicts": verdicts,
            "lengths": lengths, "paths": paths}


def summarise(api: Any, root: Path, scenarios: list[str] | None = None) -> dict[str, Any]:
    """The whole summary of the tree at ``root``: every default scenario (or those named) under every
    policy of its grid, every variant, and where the code was imported from."""
    names = [n for n in api.SCENARIOS if scenarios is None or n in scenarios]
    items = [explore_item(api, scn) for n in names for scn in api.policy_grid(api.SCENARIOS[n])]
    return _document(root, names, items, [variant_item(api, v) for v in api.VARIANTS.values()])


def _document(root: Path, names: list[str], items: list[dict[str, Any]], variants: list[dict[str, Any]]) -> dict[str, Any]:
    """A summary: what was compared, and where ``flightcheck``, its spec and its explorer were imported from."""
    import flightcheck
    import flightcheck.checks.explore
    import flightcheck.spec

    origin = {"flightcheck": flightcheck.__file__, "spec": flightcheck.spec.__file__,
              "explore": flightcheck.checks.explore.__file__}
    return {"schema": SCHEMA, "root": str(root), "origin": origin, "scenarios": names, "items": items,
            "variants": variants, "python": sys.version.split()[0]}


def corpus_summary(scenarios: list[str] | None, own_policy_only: bool) -> tuple[list[dict[str, Any]], str] | None:
    """The tree's own regression corpus run on the tree's own engine: per program, the entry (scenario
    and policy), a hash of the program, whether the run conformed, and the spec actions the engine took;
    per entry, a row with the number of spec edges its runs covered (``coverage``); with the file
    ``flightcheck.impl`` was imported from. None when the tree has no corpus or engine of
    this layout. ``own_policy_only`` keeps each scenario's own policy (as ``check --quick`` does)."""
    try:
        import flightcheck.impl  # the fast BLAS before MLX, as every engine process does
        from flightcheck.checks.conform.corpus import edges_of, load, policy_key
        from flightcheck.checks.conform.runner import run_program
        from flightcheck.spec.scenario import SCENARIOS
    except ImportError:
        return None
    own = {n: policy_key(s) for n, s in SCENARIOS.items()}
    runs = []
    for entry in load():
        if (scenarios is not None and entry.scenario not in scenarios) or (own_policy_only and own.get(entry.scenario) != entry.policy):
            continue
        covered: set = set()
        for n, program in enumerate(entry.programs, 1):
            text = json.dumps(program.to_json(), sort_keys=True, separators=(",", ":"))
            out = run_program(program, "tiny")
            covered |= edges_of(out)
            runs.append({"entry": entry.key, "index": n, "program": hashlib.sha256(text.encode()).hexdigest()[:16],
                         "ok": out.ok, "actions": list(out.actions)})
        # the spec edges the entry's runs walked, all programs together (the engine's coverage of the graph)
        runs.append({"entry": entry.key, "coverage": len(covered)})
    return runs, flightcheck.impl.__file__


def write(api: Any, root: Path, out: Path, scenarios: list[str] | None = None, corpus: str | None = None) -> None:
    """Write :func:`summarise` of ``root`` to ``out`` as JSON; with ``corpus`` (``own`` for each scenario's
    own policy, ``all`` for every entry) the corpus runs of :func:`corpus_summary` too."""
    summary = summarise(api, root, scenarios)
    if corpus is not None:
        got = corpus_summary(scenarios, corpus == "own")
        summary["corpus"] = None if got is None else got[0]
        if got is not None:
            summary["origin"]["impl"] = got[1]
    out.write_text(json.dumps(summary, separators=(",", ":")))


def one_item(api: Any, request: dict[str, Any]) -> dict[str, Any]:
    """The graph of one scenario under one policy and design variant (``flightcheck diff --base``):
    ``request`` holds ``scenario`` (a name), ``policy`` (changes to its policy), ``variant`` (a name),
    ``symmetry`` and ``max_states``. A name this tree does not know is a ValueError saying so."""
    name, variant = request["scenario"], request.get("variant", "correct")
    if name not in api.SCENARIOS:
        raise ValueError(f"this tree has no scenario {name!r}")
    if variant not in api.VARIANTS:
        raise ValueError(f"this tree has no variant {variant!r}")
    scn = api.SCENARIOS[name]
    scn = scn.with_policy(**request["policy"]) if request.get("policy") else scn
    return explore_item(api, scn, api.VARIANTS[variant].build(scn), symmetry=request.get("symmetry", True),
                        max_states=request.get("max_states", 200_000))


def write_one(api: Any, root: Path, out: Path, request: dict[str, Any]) -> None:
    """Write the summary of :func:`one_item` alone (no variants) of ``root`` to ``out`` as JSON, in the
    form of :func:`summarise`'s, so that the same comparison reads it."""
    summary = _document(root, [request["scenario"]], [one_item(api, request)], [])
    out.write_text(json.dumps(summary, separators=(",", ":")))

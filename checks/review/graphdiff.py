"""The comparison of two summaries: a pure function from the baseline's and the candidate's JSON to a diff.

Per scenario and policy (matched by the row key ``flightcheck check`` uses): the states and edges only
in the baseline (removed) and only in the candidate (added), matched by the spec's ``describe()`` of
each state (the summary's node keys), never by state numbers; the first change, the added or removed
edge nearest the initial state, with the shortest path to it in its own graph; each property whose
verdict moved; each counterexample that appeared, went away or changed length. Per design variant the
same for its verdicts, and whether it is still caught.

A *regression* is a verdict that got worse: a property that held (or a ``sometimes`` that was found)
and now fails, for the design under every policy and for the correct variants, or a mutant variant that
no longer violates the property its story is about (its other verdicts moving is a change). Everything else
that moved is a *behaviour change*.

For example::

    >>> item = {"key": "k", "scenario": "s", "policy": {}, "states": 2, "edges": 1, "verdicts": {"p": "holds"},
    ...         "lengths": {}, "paths": {}, "nodes": ["a", "b"], "labels": ["start", "one"], "arcs": [[0, 1, "go"]]}
    >>> same = compare({"items": [item], "variants": []}, {"items": [item], "variants": []})
    >>> same["changed"], same["regressions"]
    (False, [])
    >>> bigger = dict(item, nodes=["a", "b", "c"], labels=["start", "one", "two"], arcs=[[0, 1, "go"], [1, 2, "on"]],
    ...               verdicts={"p": "violated"}, lengths={"p": 2})
    >>> d = compare({"items": [item], "variants": []}, {"items": [bigger], "variants": []})
    >>> d["items"][0]["states_added"], d["items"][0]["first"]["path"], d["regressions"]
    (1, ['go', 'on'], ['k: p held and is now violated'])
"""

from __future__ import annotations

from collections import deque
from typing import Any

GOOD = ("holds", "found")  # verdicts that pass


def _bfs(item: dict[str, Any]) -> tuple[list[int], list[int | None], list[str | None]]:
    """Depth, parent and the action from the parent of every node (from node 0, the initial state)."""
    n = len(item["nodes"])
    out: list[list[tuple[int, str]]] = [[] for _ in range(n)]
    for u, v, a in item["arcs"]:
        out[u].append((v, a))
    depth: list[int] = [-1] * n
    parent: list[int | None] = [None] * n
    via: list[str | None] = [None] * n
    if n:
        depth[0] = 0
        queue = deque([0])
        while queue:
            u = queue.popleft()
            for v, a in out[u]:
                if depth[v] < 0:
                    depth[v], parent[v], via[v] = depth[u] + 1, u, a
                    queue.append(v)
    return depth, parent, via


def _path(parent: list[int | None], via: list[str | None], node: int) -> list[str]:
    steps = []
    while parent[node] is not None:
        steps.append(via[node])
        node = parent[node]
    return steps[::-1]


def _pairs(item: dict[str, Any]) -> dict[tuple[str, str], int]:
    """Each edge by its states' keys -> its index in ``arcs`` (the first, if keys repeat)."""
    nodes, out = item["nodes"], {}
    for i, (u, v, _a) in enumerate(item["arcs"]):
        out.setdefault((nodes[u], nodes[v]), i)
    return out


def first_change(base: dict[str, Any], cand: dict[str, Any]) -> dict[str, Any] | None:
    """The added or removed edge nearest the initial state (an added one first at equal distance), with
    the shortest path to it in its own graph; None when both graphs have the same edges."""
    best: tuple[Any, ...] | None = None
    for kind, mine, other in (("added", cand, base), ("removed", base, cand)):
        theirs = _pairs(other)
        missing = [i for pair, i in _pairs(mine).items() if pair not in theirs]
        if not missing:
            continue
        depth, parent, via = _bfs(mine)
        for i in missing:
            u, v, a = mine["arcs"][i]
            rank = (depth[u] if depth[u] >= 0 else len(depth), kind != "added", mine["labels"][u], a)
            if best is None or rank < best[0]:
                best = (rank, kind, mine, u, v, a, parent, via)
    if best is None:
        return None
    _rank, kind, mine, u, v, a, parent, via = best
    path = _path(parent, via, u) + [a]
    return {"kind": kind, "steps": len(path), "path": path, "action": a,
            "from": mine["labels"][u], "to": mine["labels"][v],
            "to_is_new": mine["nodes"][v] not in set((cand if kind == "removed" else base)["nodes"])}


def _verdict_moves(where: str, was: dict[str, str], now: dict[str, str]) -> tuple[list[dict[str, Any]], list[str]]:
    moves, regressions = [], []
    for prop in sorted(set(was) | set(now)):
        a, b = was.get(prop), now.get(prop)
        if a == b:
            continue
        regressed = a in GOOD and b is not None and b not in GOOD
        moves.append({"property": prop, "was": a, "now": b, "regressed": regressed})
        if regressed:
            regressions.append(f"{where}: {prop} {'held' if a == 'holds' else 'was found'} and is now {b}")
    return moves, regressions


def _counterexamples(was: dict[str, Any], now: dict[str, Any]) -> list[dict[str, Any]]:
    """Counterexamples that appeared (``was`` None), went away (``now`` None) or changed length."""
    out = []
    for prop in sorted(set(was["lengths"]) | set(now["lengths"])):
        a, b = was["lengths"].get(prop), now["lengths"].get(prop)
        if a != b:
            out.append({"property": prop, "was": a, "now": b,
                        "path": now["paths"].get(prop) if b is not None else None})
    return out


def compare_item(base: dict[str, Any], cand: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """One scenario and policy compared: counts, first change, verdict moves, counterexamples."""
    nb, nc = set(base["nodes"]), set(cand["nodes"])
    eb, ec = set(_pairs(base)), set(_pairs(cand))
    moves, regressions = _verdict_moves(cand["key"], base["verdicts"], cand["verdicts"])
    out = {"key": cand["key"], "scenario": cand["scenario"], "policy": cand["policy"],
           "states": [base["states"], cand["states"]], "edges": [base["edges"], cand["edges"]],
           "states_added": len(nc - nb), "states_removed": len(nb - nc),
           "edges_added": len(ec - eb), "edges_removed": len(eb - ec),
           "first": first_change(base, cand) if eb != ec else None,
           "verdicts": moves, "counterexamples": _counterexamples(base, cand)}
    out["changed"] = bool(out["states_added"] or out["states_removed"] or out["edges_added"]
                          or out["edges_removed"] or moves or out["counterexamples"])
    return out, regressions


def compare_variant(base: dict[str, Any], cand: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """One design variant compared: still caught, verdict moves, counterexamples."""
    expected = cand["expected"]
    where = f"variant {cand['name']}"
    moves, regressions = _verdict_moves(where, base["verdicts"], cand["verdicts"])
    caught = [None, None]
    if expected is not None:
        caught = [base["verdicts"].get(expected) not in GOOD, cand["verdicts"].get(expected) not in GOOD]
        regressions = []  # a mutant's other verdicts moving is a change; its story no longer shown is a regression
        if caught[0] and not caught[1]:
            regressions.append(f"{where} is no longer caught: {expected} now {cand['verdicts'].get(expected)}")
    out = {"name": cand["name"], "expected": expected, "caught": caught, "verdicts": moves,
           "states": [base.get("states"), cand.get("states")],
           "counterexamples": _counterexamples(base, cand)}
    out["changed"] = bool(moves or out["counterexamples"] or base.get("states") != cand.get("states"))
    return out, regressions


def compare_corpus(base: list[dict[str, Any]] | None, cand: list[dict[str, Any]] | None) -> tuple[dict[str, Any], list[str]]:
    """The conformance corpus run by each side's engine: programs (matched by entry and program hash, so
    a program the corpus rebuild added or dropped is counted apart) whose spec actions differ, each with
    its first differing event; entries whose runs cover another number of spec edges (``coverage``);
    programs that conform on the baseline and not on the candidate are regressions."""
    if base is None or cand is None:
        why = "not run" if base is None and cand is None else \
            f"the {'baseline' if base is None else 'candidate'} has no corpus of this layout"
        return {"compared": False, "why": why}, []
    cover_was = {r["entry"]: r["coverage"] for r in base if "coverage" in r}
    coverage = [{"entry": r["entry"], "was": cover_was[r["entry"]], "now": r["coverage"]}
                for r in cand if "coverage" in r and r["entry"] in cover_was and cover_was[r["entry"]] != r["coverage"]]
    base, cand = [r for r in base if "program" in r], [r for r in cand if "program" in r]
    was = {(r["entry"], r["program"]): r for r in base}
    changed, regressions, common = [], [], 0
    for r in cand:
        b = was.get((r["entry"], r["program"]))
        if b is None:
            continue
        common += 1
        if b["ok"] and not r["ok"]:
            regressions.append(f"corpus {r['entry']}: program {r['index']} conformed on the baseline and does not now")
        if b["actions"] != r["actions"]:
            k = next((j for j, (x, y) in enumerate(zip(b["actions"], r["actions"])) if x != y),
                     min(len(b["actions"]), len(r["actions"])))
            changed.append({"entry": r["entry"], "index": r["index"], "event": k + 1,
                            "was": b["actions"][k] if k < len(b["actions"]) else "the end",
                            "now": r["actions"][k] if k < len(r["actions"]) else "the end",
                            "ok": [b["ok"], r["ok"]]})
    keys = {(r["entry"], r["program"]) for r in cand}
    return {"compared": True, "programs": common, "changed": changed, "coverage": coverage,
            "only_baseline": sum(1 for k in was if k not in keys),
            "only_candidate": sum(1 for r in cand if (r["entry"], r["program"]) not in was)}, regressions


def compare(baseline: dict[str, Any], candidate: dict[str, Any]) -> dict[str, Any]:
    """The whole diff of two summaries: ``items`` (scenario and policy), ``variants``, ``only_baseline`` and
    ``only_candidate`` (keys and variant names on one side only), ``corpus`` (:func:`compare_corpus`, when
    the sides ran it), ``regressions`` (one line each) and ``changed`` (any behaviour moved at all)."""
    items, variants, regressions = [], [], []
    base_items = {i["key"]: i for i in baseline["items"]}
    cand_items = {i["key"]: i for i in candidate["items"]}
    for key, cand in cand_items.items():
        if key in base_items:
            out, bad = compare_item(base_items[key], cand)
            items.append(out)
            regressions += bad
    base_vars = {v["name"]: v for v in baseline["variants"]}
    cand_vars = {v["name"]: v for v in candidate["variants"]}
    for name, cand in cand_vars.items():
        if name in base_vars:
            out, bad = compare_variant(base_vars[name], cand)
            variants.append(out)
            regressions += bad
    only_baseline = [k for k in base_items if k not in cand_items] + [f"variant {n}" for n in base_vars if n not in cand_vars]
    only_candidate = [k for k in cand_items if k not in base_items] + [f"variant {n}" for n in cand_vars if n not in base_vars]
    corpus, bad = compare_corpus(baseline.get("corpus"), candidate.get("corpus"))
    regressions += bad
    changed = bool(only_baseline or only_candidate or any(i["changed"] for i in items)
                   or any(v["changed"] for v in variants) or corpus.get("changed") or corpus.get("coverage") or bad)
    return {"items": items, "variants": variants, "only_baseline": only_baseline, "only_candidate": only_candidate,
            "corpus": corpus, "regressions": regressions, "changed": changed}

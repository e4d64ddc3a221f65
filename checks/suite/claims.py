"""How strong each row of ``check`` is, the summary's count of them, and ``check --require-proof``.

A row that checks properties makes a claim (:class:`~flightcheck.checks.strength.Claim`), read from its
evidence with the words of :mod:`flightcheck.checks.strength`: an ``explore`` row visited every reachable
state of its scenario (proved for that scenario, or violated); a ``prove`` row per scenario is as strong
as its weakest property (k-induction, or only bounded to the BMC depth); a ``prove`` row "for all sizes"
is proved for all sizes when every property the relational model carries is (the properties it does not
carry are named in its detail, and proved per scenario by the other rows); the ``equiv`` row of a design
meant to be equivalent is proved by induction or only bounded. Every other row (a variant caught, a
conformance campaign, a drift check, the workload) claims no property and carries no claim.

:func:`require_proof` is the flag's rule: every row whose claim is not a proof fails, unless each of its
properties that is not proved there is proved on the same scenario and policy by the exhaustive
exploration of another row (a bounded k-induction on a scenario the explorer covered leaves nothing
unproved).

For example::

    >>> from flightcheck.checks.suite.job import Row
    >>> row = Row("prove", "burst2 x", True, "", evidence={"depth": 2, "details": {
    ...     "single_prefill": {"status": "bounded", "k": 2, "lemma": False},
    ...     "known_once": {"status": "proved", "k": 1, "lemma": False}}})
    >>> claim_of(row).words(), sorted(claim_of(row).weak)
    ('no counterexample up to depth 2 (not a proof)', ['single_prefill'])
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from flightcheck.checks.strength import (
    FROM_EXPLORER, FROM_UNBOUNDED, ORDER, Claim, Strength, induction_claim, row_claim,
)


def claim_of(row: Any) -> Claim | None:
    """The claim of a :class:`~flightcheck.checks.suite.job.Row` (None: the row checks no property)."""
    ev = row.evidence or {}
    if row.error or row.item == "(stage)":
        return None
    if row.stage == "explore" and "properties" in ev:
        return row_claim({n: FROM_EXPLORER[v] for n, v in ev["properties"].items() if v in FROM_EXPLORER})
    if row.stage == "prove" and "details" in ev:
        claims = {n: c for n, c in proof_claims(ev).items() if not ev["details"][n].get("lemma")}
        failures = (ev.get("nonvacuity") or {}).get("failures") or []
        if failures:  # a configuration of the relational model whose proof is vacuous proves nothing
            claims["(non-vacuity)"] = Claim(Strength.UNPROVED, reason="vacuous: " + failures[0])
        return row_claim(claims)
    if row.stage == "equiv" and ev.get("verdict") in ("proved", "bounded") and _meant_equivalent(ev):
        return induction_claim(ev["verdict"], ev.get("depth") or 0)
    return None


def proof_claims(evidence: dict[str, Any]) -> dict[str, Claim]:
    """Each property's and lemma's claim in a ``prove`` row's evidence: for all sizes when the row is a
    configuration of the relational model (its evidence names the ``config``), else for its scenario."""
    if "config" in evidence:
        return {n: FROM_UNBOUNDED[d["status"]] for n, d in evidence["details"].items()}
    return {n: induction_claim(d["status"], d["k"]) for n, d in evidence["details"].items()}


def _meant_equivalent(ev: dict[str, Any]) -> bool:
    """An equiv row about a design meant to be equivalent (a mutant's row claims a difference, no proof)."""
    from flightcheck.spec.variants import VARIANTS

    v = VARIANTS.get(ev.get("variant_b", ""))
    return v is not None and v.expected_violation is None


def annotate(rows: list[Any]) -> None:
    """Set each row's ``claim`` (JSON-ready, or None) from its evidence."""
    for row in rows:
        claim = claim_of(row)
        row.claim = claim.to_json() if claim is not None else None


def counts(rows: list[Any]) -> dict[str, int]:
    """How many rows make each claim (by strength's name, strongest first), and ``none``: rows claiming none."""
    seen = Counter(r.claim["strength"] if r.claim else "none" for r in rows)
    return {s.value: seen[s.value] for s in ORDER if seen[s.value]} | ({"none": seen["none"]} if seen["none"] else {})


def summary_line(rows: list[Any]) -> str:
    """The summary's count of the rows by what they establish, e.g. ``by strength: 40 proved for all sizes, ...``."""
    got = counts(rows)
    parts = [f"{got[s.value]} {s.counted}" for s in ORDER if s.value in got]
    if "none" in got:
        parts.append(f"{got['none']} claim no property (tests, comparisons)")
    return "rows by strength: " + ", ".join(parts)


def strength_cell(claim: dict[str, Any] | None) -> str:
    """A row's claim in the summary table's narrow column ("" for a row that claims no property)."""
    return Claim.from_json(claim).short() if claim else ""


def _proved_by_exploration(rows: list[Any]) -> dict[str, set[str]]:
    """Per explore row's item (scenario and policy): the properties its exhaustive exploration proved."""
    return {r.item: {n for n, v in r.evidence.get("properties", {}).items() if FROM_EXPLORER.get(v, Claim(
        Strength.VIOLATED)).is_proof} for r in rows if r.stage == "explore" and r.claim is not None}


def require_proof(rows: list[Any]) -> list[str]:
    """``--require-proof``: fail every row whose claim is not a proof (``ok`` False, the detail says why),
    unless the explorer proved each of its unproved properties on the same scenario and policy. Returns a
    line per row failed, naming it and the properties that are not proved."""
    explored = _proved_by_exploration(rows)
    failed = []
    for row in rows:
        if row.claim is None or row.claim["proof"]:
            continue
        claim = Claim.from_json(row.claim)
        if claim.strength is Strength.VIOLATED:
            continue  # already a failed row
        left = {n: w for n, w in claim.weak.items() if n not in explored.get(row.item, set())}
        if not left and row.item in explored:
            continue
        names = ", ".join(left or claim.weak) or "the row"
        row.ok = False
        row.detail = f"--require-proof: {names}: {claim.words()}; " + row.detail
        failed.append(f"{row.stage} {row.item}: {names}")
    return failed

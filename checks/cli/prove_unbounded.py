"""``prove --unbounded``: the relational model's proofs for all sizes (:mod:`flightcheck.checks.unbounded`),
printed and turned into the exit status."""

from __future__ import annotations

import json
from typing import Any, Optional

import typer

from flightcheck.checks.errors import usage_error
from flightcheck.checks.strength import FROM_UNBOUNDED, Claim, not_modelled_claim, not_proofs
from flightcheck.spec.scenario import PUBLICATIONS, RELEASES
from flightcheck.spec.variants import VARIANTS


def prove_unbounded_command(variant: str, release: Optional[str], publication: Optional[str], timeout: float,
                            as_json: bool, require_proof: bool = False) -> None:
    """``prove --unbounded``: the relational model's proofs, printed and turned into the exit status; with
    ``require_proof``, exit 1 unless every property is proved for all sizes (a property the model does not
    carry is not)."""
    from flightcheck.checks.unbounded.config import grid
    from flightcheck.checks.unbounded.render import format_report, report_json
    from flightcheck.checks.unbounded.run import explorer_confirms, prove_unbounded, variant_config
    from flightcheck.checks.unbounded.variants import NOT_MODELLED as UNMODELLED_VARIANTS

    for opt, value, allowed in (("release", release, RELEASES), ("publication", publication, PUBLICATIONS)):
        if value is not None and value not in allowed:
            raise usage_error(f"--{opt} must be one of {', '.join(allowed)}; got {value!r}")
    if not 0 < timeout <= 600:
        raise usage_error(f"--timeout must be 0 < seconds <= 600; got {timeout}")
    if variant in UNMODELLED_VARIANTS:
        _not_modelled(variant, UNMODELLED_VARIANTS[variant], as_json, require_proof)
    configs = grid() if variant == "correct" else [variant_config(variant)]
    configs = [c for c in configs if (release is None or c.release == release)
               and (publication is None or c.publication == publication)]
    if not configs:
        raise usage_error("--unbounded: no configuration matches --release and --publication")
    report = prove_unbounded(variant, configs, timeout_ms=int(timeout * 1000))
    confirm = None if variant == "correct" else explorer_confirms(variant)
    claims = unbounded_claims(report)
    weak = not_proofs(claims)
    if as_json:
        out = report_json(report)
        out["claims"] = {n: c.to_json() for n, c in claims.items()}
        out["not_proofs"] = weak
        if confirm is not None:
            out["explorer"] = {"scenario": confirm[0], "property": VARIANTS[variant].expected_violation,
                               "shortest_path": confirm[1]}
        print(json.dumps(out, indent=2))
    else:
        print(format_report(report))
        if confirm is not None:
            must = VARIANTS[variant].expected_violation
            found = f"violated in {confirm[1]} steps" if confirm[1] is not None else "not violated"
            print(f"\nexplorer on {confirm[0]}: {must} {found} (`flightcheck explore --variant {variant}`): "
                  "the violation is reachable at that size; the CTI above is the unbounded proof's evidence")
        if weak:
            print(("--require-proof: " if require_proof else "") + "not proved for all sizes: " + "; ".join(weak))
    raise typer.Exit(0 if report.ok and not (require_proof and weak) else 1)


def unbounded_claims(report: Any) -> dict[str, Claim]:
    """Each property's claim over every configuration of ``report`` (an
    :class:`~flightcheck.checks.unbounded.result.UnboundedReport`), the properties it does not model
    included (not proved for all sizes)."""
    claims = {n: FROM_UNBOUNDED[report.status(n)] for n in report.property_names()}
    return {**claims, **{n: not_modelled_claim(why) for n, why in report.not_modelled.items() if n not in claims}}


def _not_modelled(variant: str, why: str, as_json: bool, require_proof: bool = False) -> None:
    """A variant the relational model does not carry: why, and the explorer's bounded counterexample in
    place of a CTI (exit 1 when it violates its property, 0 for a correct variant)."""
    from flightcheck.checks.unbounded.run import bounded_counterexample

    must = VARIANTS[variant].expected_violation
    scenario, actions = bounded_counterexample(variant)
    if as_json:
        print(json.dumps({"variant": variant, "modelled": False, "why": why, "explorer": {
            "scenario": scenario, "property": must, "counterexample": actions,
            "shortest_path": len(actions) if actions is not None else None},
            "claims": {"(every property)": not_modelled_claim(why).to_json()}}, indent=2))
    else:
        print(f"variant {variant} is not modelled for all sizes: {why}")
        if must is None:
            print("it violates no property (a correct design)")
        elif actions is None:
            print(f"explorer on {scenario}: {must} not violated")
        else:
            print(f"its bounded counterexample instead: explorer on {scenario}, {must} violated in {len(actions)} "
                  f"steps (`flightcheck explore --variant {variant}`):\n  " + " ".join(actions))
        if require_proof:
            print(f"--require-proof: not proved for all sizes: {not_modelled_claim(why).words()}")
    raise typer.Exit(1 if (must is not None and actions is not None) or require_proof else 0)

"""``prove`` on one scenario: BMC and k-induction of every safety property under each policy asked for
(:mod:`flightcheck.checks.proofs.induction`), as tables or JSON, turned into the exit status."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from flightcheck.checks.cli.common import scenario_named, scenario_policies, variant_named
from flightcheck.checks.errors import usage_error
from flightcheck.checks.strength import induction_claim, not_proofs
from flightcheck.checks.suite.defaults import PROVE_DEPTH, is_mutant, variant_scenario
from flightcheck.spec.scenario import RELEASES, Scenario
from flightcheck.spec.variants import VARIANTS


def _mutant_depth(variant: str, scn: Scenario) -> tuple[int, str]:
    """A mutant's BMC depth: at least its shortest path to the property it must violate (the explorer
    finds that length exhaustively and cheaply), so the default run reports the violation z3 finds."""
    from flightcheck.checks.explore.explorer import explore

    must = VARIANTS[variant].expected_violation
    result = explore(VARIANTS[variant].build(scn))
    cx = result.result(must).counterexample if must in {p.name for p in result.properties} else None
    if cx is None:
        return PROVE_DEPTH, ""
    return max(PROVE_DEPTH, len(cx)), f"BMC depth {max(PROVE_DEPTH, len(cx))}: the explorer's shortest path to {must} has {len(cx)} steps"


def _result_json(spec: Any, r: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": r.property, "status": r.status, "k": r.k, "seconds": round(r.seconds, 4),
                           "claim": induction_claim(r.status, r.k).to_json()}
    if r.support:
        out["support"] = list(r.support)
    if r.counterexample is not None:
        out["counterexample"] = r.counterexample.to_json(spec)
    if r.cti is not None:
        out["counterexample_to_induction"] = r.cti.to_json(spec)
    return out


def _uses(support: tuple[str, ...]) -> str:
    """The invariants a proof used: named when few, counted when many (--json lists them all)."""
    return ", ".join(support) if len(support) <= 2 else f"{len(support)} invariants"


def prove_bounded_command(scenario: Optional[str], variant: str, depth: Optional[int], max_k: int,
                          release: Optional[str], publication: Optional[str], coordination: Optional[str],
                          path_out: Optional[Path], as_json: bool, require_proof: bool = False) -> None:
    """``prove`` without ``--unbounded`` or ``--engine`` (see ``flightcheck prove --help``); with
    ``require_proof``, exit 1 unless every property is proved (a bounded one names itself)."""
    if (depth is not None and depth < 0) or not 1 <= max_k <= 5:
        raise usage_error(f"--depth must be >= 0 and --max-k 1..5; got depth={depth}, max-k={max_k}")
    variant_named(variant)
    scn = scenario_named(scenario) if scenario is not None else variant_scenario(variant)
    demo = scenario is None and is_mutant(variant)
    from flightcheck.checks.proofs.induction import prove as run_prove

    console = Console()
    runs, violated, weak = [], False, []
    for policy_scn in scenario_policies(scn, release, publication, coordination,
                                        (scn.policy.release,) if demo else RELEASES):
        spec = VARIANTS[variant].build(policy_scn)
        run_depth, why = (depth, "") if depth is not None else (
            _mutant_depth(variant, policy_scn) if is_mutant(variant) else (PROVE_DEPTH, ""))
        if why and not as_json:
            console.print(why, highlight=False)
        report = run_prove(spec, max_k=max_k, depth=run_depth)
        first = next((r for r in report.results if r.status == "violated"), None)
        if first is not None and path_out is not None and not violated:
            path_out.write_text(json.dumps({
                "scenario": scn.name, "variant": variant, "policy": dataclasses.asdict(spec.policy),
                "property": first.property, "counterexample": first.counterexample.actions}, indent=2) + "\n")
        violated |= not report.ok
        claims = {r.property: induction_claim(r.status, r.k) for r in report.results if r.status != "violated"}
        weak += [f"{line} under {spec.policy.label()}" for line in not_proofs(claims)]
        runs.append({"policy": spec.policy.label(), "release": spec.policy.release, "depth": run_depth,
                     "seconds": round(report.seconds, 3), "bmc_seconds": round(report.bmc_seconds, 3),
                     "properties": [_result_json(spec, r) for r in report.results],
                     "lemmas": [_result_json(spec, r) for r in report.lemmas]})
        if as_json:
            continue
        table = Table(title=f"{variant} on {scn.name}: {spec.policy.label()} ({report.seconds:.1f} s)")
        for col in ("property", "verdict", "k", "seconds", "uses"):
            table.add_column(col, no_wrap=col == "property", overflow="fold")
        for r in report.results + report.lemmas:
            colour = {"proved": "green", "bounded": "yellow", "violated": "red"}[r.status]
            word = induction_claim(r.status, r.k).words() + (f" at depth {r.k}" if r.status == "violated" else "")
            lemma = " (lemma)" if r in report.lemmas else ""
            table.add_row(r.property + lemma, f"[{colour}]{word}[/]", str(r.k) if r.status == "proved" else "",
                          f"{r.seconds:.2f}", _uses(r.support))
        console.print(table)
        for r in report.results:
            if r.status == "violated":
                console.print(f"[bold red]{r.property}[/] violated; path:")
                console.print(r.counterexample.format(spec), markup=False, highlight=False)
            elif r.status == "bounded" and r.cti is not None:
                console.print(r.cti.format(spec), markup=False, highlight=False)
    if as_json:
        print(json.dumps({"scenario": scn.name, "variant": variant, "depth": depth, "max_k": max_k,
                          "ok": not violated, "proved": not violated and not weak, "not_proofs": weak,
                          "runs": runs}, indent=2))
    elif weak:
        console.print(f"{'[bold red]--require-proof:[/] ' if require_proof else ''}not a proof: "
                      + "; ".join(weak), highlight=False)
    raise typer.Exit(1 if violated or (require_proof and weak) else 0)

"""Commands ``prove`` (BMC + k-induction of every safety property) and ``equiv`` (refactor equivalence).

Without ``--scenario`` a variant runs on its demo scenario under its demo policy (a mutant under that
policy only), and ``equiv`` compares two designs on the demo of the one that is not ``correct``, as
``explore --variant`` and ``check`` do (:mod:`flightcheck.checks.suite.defaults`), so the lengths agree.

For example::

    $ flightcheck prove --scenario burst3-abort
    $ flightcheck prove --variant forget-at-release --path-out cx.json
    $ flightcheck replay cx.json
    $ flightcheck prove --scenario mixed3 --release on-completion --json
    $ flightcheck equiv correct draining
    $ flightcheck equiv correct early-release --scenario burst2 --publication on-completion
    $ flightcheck prove --unbounded                          # every safety property modelled, for all sizes
    $ flightcheck prove --unbounded --variant early-release --json

``prove --unbounded`` runs the relational model's proofs (:mod:`flightcheck.checks.unbounded`): one line
per property, "proved for all sizes" (with the lemmas used and the solver time), "not inductive" with
the counterexample to induction (the correct design) or "fails (CTI)" (a variant, beside the explorer's
shortest path on its demo scenario), "unknown (timeout)", or "not modelled: reason". Exit 0 when every
modelled property is proved, 1 otherwise, 2 for bad arguments.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any, Optional

import typer
from rich.console import Console
from rich.table import Table

from flightcheck.checks.suite.defaults import (
    PROVE_DEPTH, equiv_depth, is_mutant, pair_scenario, variant_scenario,
)
from flightcheck.checks.errors import check_choice, usage_error
from flightcheck.spec.scenario import COORDINATIONS, PUBLICATIONS, RELEASES, SCENARIOS, Scenario
from flightcheck.spec.variants import VARIANTS


def _scenario(name: str) -> Scenario:
    if name not in SCENARIOS:
        raise usage_error(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
    return SCENARIOS[name]


def _variant(name: str, option: str = "--variant") -> str:
    if name not in VARIANTS:
        raise usage_error(f"{option}: unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    return name


def _policies(scn: Scenario, release: Optional[str], publication: Optional[str],
              coordination: Optional[str], releases: tuple[str, ...] = RELEASES) -> list[Scenario]:
    """The scenario under each policy asked for (``releases`` when --release is not given)."""
    for opt, value, allowed in (("release", release, RELEASES), ("publication", publication, PUBLICATIONS),
                                ("coordination", coordination, COORDINATIONS)):
        if value is not None and value not in allowed:
            raise usage_error(f"--{opt} must be one of {', '.join(allowed)}; got {value!r}")
    changes = {k: v for k, v in (("publication", publication), ("coordination", coordination)) if v}
    base = scn.with_policy(**changes) if changes else scn
    return [base.with_policy(release=r) for r in ([release] if release else list(releases))]


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
    out: dict[str, Any] = {"name": r.property, "status": r.status, "k": r.k, "seconds": round(r.seconds, 4)}
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


def _prove_unbounded(variant: str, release: Optional[str], publication: Optional[str], timeout: float,
                     as_json: bool) -> None:
    """``prove --unbounded``: the relational model's proofs, printed and turned into the exit status."""
    from flightcheck.checks.unbounded.config import grid
    from flightcheck.checks.unbounded.render import format_report, report_json
    from flightcheck.checks.unbounded.run import explorer_confirms, prove_unbounded, variant_config
    from flightcheck.checks.unbounded.variants import NOT_MODELLED as UNMODELLED_VARIANTS

    if variant in UNMODELLED_VARIANTS:
        raise usage_error(f"--unbounded: variant {variant!r} is not modelled: {UNMODELLED_VARIANTS[variant]}")
    for opt, value, allowed in (("release", release, RELEASES), ("publication", publication, PUBLICATIONS)):
        if value is not None and value not in allowed:
            raise usage_error(f"--{opt} must be one of {', '.join(allowed)}; got {value!r}")
    if not 0 < timeout <= 600:
        raise usage_error(f"--timeout must be 0 < seconds <= 600; got {timeout}")
    configs = grid() if variant == "correct" else [variant_config(variant)]
    configs = [c for c in configs if (release is None or c.release == release)
               and (publication is None or c.publication == publication)]
    if not configs:
        raise usage_error("--unbounded: no configuration matches --release and --publication")
    report = prove_unbounded(variant, configs, timeout_ms=int(timeout * 1000))
    confirm = None if variant == "correct" else explorer_confirms(variant)
    if as_json:
        out = report_json(report)
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
    raise typer.Exit(0 if report.ok else 1)


def _prove_engine(bound_text: Optional[str], mutant: Optional[str], method: str, seconds: Optional[float],
                  program_out: Optional[Path], as_json: bool) -> None:
    """``prove --engine``: the engine's guard/command pairs against the spec's actions at every engine state
    in the bound (:mod:`flightcheck.checks.symbolic`); exit 1 on a counterexample, 0 only when every action
    is verified (an unfinished action is not a pass: exit 1, said so)."""
    from flightcheck.checks.conform.mutants import MUTANTS
    from flightcheck.checks.symbolic.bound import parse_bound
    from flightcheck.checks.symbolic.check import METHODS, check_engine

    try:
        bound = parse_bound(bound_text or "2,3")
    except ValueError as error:
        raise usage_error(f"--bound: {error}") from None
    if mutant is not None and mutant not in MUTANTS:
        raise usage_error(f"unknown --mutant {mutant!r}; known: {', '.join(MUTANTS)}")
    check_choice("method", method, METHODS)
    if seconds is not None and seconds <= 0:
        raise usage_error(f"--seconds must be > 0; got {seconds}")
    rows = check_engine(bound, mutant=mutant, method=method, time_limit=seconds)
    found = next((r.counterexample for r in rows if r.counterexample is not None), None)
    if program_out is not None and found is not None and found.program is not None:
        program_out.write_text(json.dumps(found.program, indent=1) + "\n", encoding="utf-8")
    if as_json:
        print(json.dumps({"bound": str(bound), "mutant": mutant, "method": method,
                          "verdict": "ok" if all(r.verdict == "verified" for r in rows) else
                          ("counterexample" if found else "unfinished"),
                          "actions": [r.to_json() for r in rows]}))
    else:
        for r in rows:
            print(r.line())
        if found is not None:
            print("\n" + found.format())
            if program_out is not None:
                print(f"\nthe conformance program is in {program_out}; replay it on the engine with "
                      f"`flightcheck conform --replay {program_out}`")
    raise typer.Exit(0 if all(r.verdict == "verified" for r in rows) else 1)


def register(app: typer.Typer) -> None:
    """Add ``prove`` and ``equiv`` to the app."""

    @app.command()
    def prove(
        scenario: Optional[str] = typer.Option(None, help=f"A default scenario: {', '.join(SCENARIOS)} "
                                               "(default: the variant's demo scenario and policy)."),
        variant: str = typer.Option("correct", help=f"Design variant: {', '.join(VARIANTS)}."),
        depth: Optional[int] = typer.Option(None, help="BMC depth: the base case, and how far unproved properties "
                                            f"are checked (default {PROVE_DEPTH}; a mutant's at least its shortest path)."),
        max_k: int = typer.Option(2, "--max-k", help="Largest k tried for k-induction."),
        release: Optional[str] = typer.Option(None, help="after-prefill | on-completion (default: both; a mutant on "
                                              "its demo scenario: its demo policy's)."),
        publication: Optional[str] = typer.Option(None, help="incremental | on-completion (default: the scenario's)."),
        coordination: Optional[str] = typer.Option(None, help="single-flight | prefix | none (default: the scenario's)."),
        path_out: Optional[Path] = typer.Option(None, "--path-out",
                                                help="Write the first violation's path for `flightcheck replay`."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object instead of tables."),
        unbounded: bool = typer.Option(False, "--unbounded", help="Prove the safety properties for all sizes "
                                       "(any number of requests, classes, pages) on the relational model."),
        timeout: float = typer.Option(30.0, "--timeout", help="With --unbounded: seconds per solver query "
                                      "(a query that runs out is 'unknown', never proved)."),
        engine: bool = typer.Option(False, "--engine", help="Check the engine's own guard/command pairs against "
                                    "the spec's actions at every engine state within --bound."),
        bound: Optional[str] = typer.Option(None, "--bound", metavar="N,M[,SET]", help="With --engine: requests, "
                                            "pages (default 2,3), and the prompt templates: tree (default) or "
                                            "branches (two prompts off one first page)."),
        mutant: Optional[str] = typer.Option(None, "--mutant", help="With --engine: a planted engine bug to check."),
        method: str = typer.Option("exhaustive", "--method", help="With --engine: exhaustive | crosshair."),
        seconds: Optional[float] = typer.Option(None, "--seconds", help="With --engine: seconds per configuration "
                                                "(past it an action is 'unfinished', never verified)."),
        program_out: Optional[Path] = typer.Option(None, "--program-out", help="With --engine: write the "
                                                   "counterexample's conformance program (for conform --replay)."),
    ) -> None:
        """Prove every safety property by k-induction; BMC to --depth for the rest. Exit 1 on a violation."""
        if engine:
            given = [o for o, v in (("--scenario", scenario), ("--depth", depth), ("--path-out", path_out),
                                    ("--release", release), ("--publication", publication),
                                    ("--coordination", coordination)) if v is not None]
            if given or unbounded or variant != "correct":
                raise usage_error("--engine checks the engine against the spec over its own configurations; it takes "
                                  f"no {', '.join(given) or ('--unbounded' if unbounded else '--variant')}")
            _prove_engine(bound, mutant, method, seconds, program_out, as_json)
        elif any(v is not None for v in (bound, mutant, seconds, program_out)) or method != "exhaustive":
            raise usage_error("--bound, --mutant, --method, --seconds and --program-out go with --engine")
        if unbounded:
            _variant(variant)
            given = [o for o, v in (("--scenario", scenario), ("--depth", depth), ("--path-out", path_out),
                                    ("--coordination", coordination)) if v is not None]
            if given or max_k != 2:
                raise usage_error(f"--unbounded proves for all sizes; it takes no {', '.join(given) or '--max-k'}")
            _prove_unbounded(variant, release, publication, timeout, as_json)
        if (depth is not None and depth < 0) or not 1 <= max_k <= 5:
            raise usage_error(f"--depth must be >= 0 and --max-k 1..5; got depth={depth}, max-k={max_k}")
        _variant(variant)
        scn = _scenario(scenario) if scenario is not None else variant_scenario(variant)
        demo = scenario is None and is_mutant(variant)
        from flightcheck.checks.proofs.induction import prove as run_prove

        console = Console()
        runs, violated = [], False
        for policy_scn in _policies(scn, release, publication, coordination,
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
            runs.append({"policy": spec.policy.label(), "release": spec.policy.release, "depth": run_depth,
                         "seconds": round(report.seconds, 3), "bmc_seconds": round(report.bmc_seconds, 3),
                         "properties": [_result_json(spec, r) for r in report.results],
                         "lemmas": [_result_json(spec, r) for r in report.lemmas]})
            if as_json:
                continue
            table = Table(title=f"{variant} on {scn.name}: {spec.policy.label()} ({report.seconds:.1f} s)")
            for col in ("property", "verdict", "k", "seconds", "uses"):
                table.add_column(col)
            for r in report.results + report.lemmas:
                colour = {"proved": "green", "bounded": "yellow", "violated": "red"}[r.status]
                word = {"proved": "proved", "bounded": f"holds to depth {r.k}, not proved",
                        "violated": f"VIOLATED at depth {r.k}"}[r.status]
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
                              "ok": not violated, "runs": runs}, indent=2))
        raise typer.Exit(1 if violated else 0)

    @app.command()
    def equiv(
        variant_a: str = typer.Argument(..., help="First design variant."),
        variant_b: str = typer.Argument(..., help="Second design variant."),
        scenario: Optional[str] = typer.Option(None, help="The scenario both run (default: the demo scenario and "
                                               "policy of the design that is not `correct`, a mutant's first)."),
        depth: Optional[int] = typer.Option(None, help="Look for a distinguishing sequence up to this many steps "
                                            "(default: as deep as `check` looks, 10 with a mutant, 6 otherwise)."),
        release: Optional[str] = typer.Option(None, help="after-prefill | on-completion (default: the scenario's)."),
        publication: Optional[str] = typer.Option(None, help="incremental | on-completion (default: the scenario's)."),
        no_proof: bool = typer.Option(False, "--no-proof", help="Skip the induction on the product."),
        search: str = typer.Option("explicit", help="explicit (breadth-first over concrete pairs) | z3 (BMC on the "
                                   "symbolic product): how the shortest distinguishing sequence is searched."),
        as_json: bool = typer.Option(False, "--json", help="Print one JSON object."),
    ) -> None:
        """Are two designs indistinguishable from outside? Exit 0 if so, 1 with a shortest distinguishing sequence."""
        if depth is not None and depth < 0:
            raise usage_error(f"--depth must be >= 0; got {depth}")
        if search not in ("explicit", "z3"):
            raise usage_error(f"--search must be explicit or z3; got {search!r}")
        _variant(variant_a, "VARIANT_A")
        _variant(variant_b, "VARIANT_B")
        base = _scenario(scenario) if scenario is not None else pair_scenario(variant_a, variant_b)
        scn = _policies(base, release or base.policy.release, publication, None)[0]
        depth = equiv_depth(variant_a, variant_b) if depth is None else depth
        from flightcheck.checks.proofs.equivalence import check_equivalence
        from flightcheck.checks.report.lockstep import lockstep_steps

        r = check_equivalence(variant_a, variant_b, scn, depth=depth, prove_unbounded=not no_proof, search=search)
        steps = lockstep_steps(VARIANTS[variant_a].build(scn), VARIANTS[variant_b].build(scn), r.sequence)
        if as_json:
            print(json.dumps({"variant_a": variant_a, "variant_b": variant_b, "scenario": scn.name,
                              "policy": scn.policy.label(), "verdict": r.verdict, "equivalent": r.equivalent,
                              "depth": r.depth, "search": search, "sequence": r.sequence, "difference": r.difference,
                              "steps": [{"action": a, variant_a: ca, variant_b: cb} for _n, a, ca, cb in steps],
                              "seconds": round(r.seconds, 3)}, indent=2))
        else:
            console = Console()
            colour = "green" if r.equivalent else "red"
            console.print(f"{scn.name} · {scn.policy.label()}", highlight=False)
            console.print(f"[{colour}]{r.summary()}[/]")
            if not r.equivalent:
                width = max(len(variant_a), len(variant_b)) + 1
                for n, a, ca, cb in steps:  # what each step changed in each design
                    console.print(f"{n:2d}. {a}", highlight=False)
                    console.print(f"    {variant_a + ':':<{width}} {ca}", markup=False, highlight=False)
                    console.print(f"    {variant_b + ':':<{width}} {'(the same)' if cb == ca else cb}",
                                  markup=False, highlight=False)
        raise typer.Exit(0 if r.equivalent else 1)

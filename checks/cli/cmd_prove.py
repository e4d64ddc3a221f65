"""Command ``prove``: BMC and k-induction of every safety property on one scenario, ``--unbounded`` for all
sizes, ``--engine`` the engine's own code against the spec.

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
shortest path on its demo scenario), "unknown (timeout)", or "not modelled: reason". A variant the model
does not carry prints why, and the explorer's counterexample in place of a CTI. Exit 0 when every
modelled property is proved (or the variant is a correct one), 1 otherwise, 2 for bad arguments.

Every verdict says how strong it is (:mod:`flightcheck.checks.strength`): "proved for all sizes",
"proved for this scenario (k-induction)", or "no counterexample up to depth N (not a proof)"; ``--json``
gives each property's ``claim``. A bounded verdict alone exits 0 (nothing is violated);
``--require-proof`` makes it exit 1, naming every property that is not proved (with ``--unbounded``,
also each property the relational model does not carry).
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from flightcheck.checks.cli.common import variant_named
from flightcheck.checks.cli.prove_bounded import prove_bounded_command
from flightcheck.checks.cli.prove_engine import prove_engine_command
from flightcheck.checks.cli.prove_unbounded import prove_unbounded_command
from flightcheck.checks.errors import usage_error
from flightcheck.checks.suite.defaults import PROVE_DEPTH
from flightcheck.spec.scenario import SCENARIOS
from flightcheck.spec.variants import VARIANTS


def register(app: typer.Typer) -> None:
    """Add ``prove`` to the app."""

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
        require_proof: bool = typer.Option(False, "--require-proof", help="Exit 1 unless every property is proved "
                                           "(for all sizes with --unbounded; else for the scenario), naming each "
                                           "that is only bounded or not proved."),
    ) -> None:
        """Prove every safety property by k-induction; BMC to --depth for the rest (no counterexample up to
        that depth: not a proof). Exit 1 on a violation, and with --require-proof on any property not proved."""
        if engine:
            given = [o for o, v in (("--scenario", scenario), ("--depth", depth), ("--path-out", path_out),
                                    ("--release", release), ("--publication", publication),
                                    ("--coordination", coordination)) if v is not None]
            given += ["--require-proof"] if require_proof else []
            if given or unbounded or variant != "correct":
                raise usage_error("--engine checks the engine against the spec over its own configurations; it takes "
                                  f"no {', '.join(given) or ('--unbounded' if unbounded else '--variant')}")
            prove_engine_command(bound, mutant, method, seconds, program_out, as_json)
        elif any(v is not None for v in (bound, mutant, seconds, program_out)) or method != "exhaustive":
            raise usage_error("--bound, --mutant, --method, --seconds and --program-out go with --engine")
        if unbounded:
            variant_named(variant)
            given = [o for o, v in (("--scenario", scenario), ("--depth", depth), ("--path-out", path_out),
                                    ("--coordination", coordination)) if v is not None]
            if given or max_k != 2:
                raise usage_error(f"--unbounded proves for all sizes; it takes no {', '.join(given) or '--max-k'}")
            prove_unbounded_command(variant, release, publication, timeout, as_json, require_proof)
        prove_bounded_command(scenario, variant, depth, max_k, release, publication, coordination, path_out, as_json,
                              require_proof)

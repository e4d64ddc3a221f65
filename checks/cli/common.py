"""What several commands share: a mutant named by ``--mutant``, a saved conformance program read and
checked against the model, text that quotes the input printed as it is, and a scenario, a variant and
the policies asked for, each checked (a usage error, exit 2, naming what is wrong).

For example::

    >>> mutant_named(None) is None, mutant_named("forget-released").name
    (True, 'forget-released')
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from rich.console import Console

from flightcheck.checks.errors import usage_error
from flightcheck.checks.inputs import shown
from flightcheck.spec.scenario import COORDINATIONS, PUBLICATIONS, RELEASES, SCENARIOS, Scenario
from flightcheck.spec.variants import VARIANTS


def mutant_named(name: Optional[str]):
    """The mutant ``--mutant`` names (None for none), or a usage error (exit 2) listing the known names."""
    from flightcheck.checks.conform.mutants import MUTANTS
    if name is None:
        return None
    if name not in MUTANTS:
        raise usage_error(f"unknown --mutant {shown(name)}; known: {', '.join(MUTANTS)}")
    return MUTANTS[name]


def read_program_file(path: Path):
    """A saved conformance program, every field checked (:func:`~flightcheck.checks.conform.program.read_program`),
    or a usage error (exit 2) naming the file and the field."""
    from flightcheck.checks.conform.program import read_program
    from flightcheck.checks.inputs import InputError

    try:
        return read_program(path)
    except InputError as error:
        raise usage_error(str(error)) from None


def check_program_for_model(program, path: Path, model: str) -> None:
    """What of a program depends on the model (token ids, context, pages, the pool's memory), checked
    before any engine runs: a program the engine would refuse is bad input (exit 2), not a departure."""
    from flightcheck.checks.conform.program import check_for_model, model_limits
    from flightcheck.checks.inputs import InputError

    vocab, context, page_bytes = model_limits(model)
    try:
        check_for_model(program, str(path), vocab=vocab, context=context, page_bytes=page_bytes)
    except InputError as error:
        raise usage_error(str(error)) from None


def print_quoted(console: Console, text: str) -> None:
    """Print text that quotes the input (a diagnosis, a failing run) as it is: no markup, escaped."""
    from flightcheck.checks.inputs import printable

    console.print(printable(text), markup=False, highlight=False)


def scenario_named(name: str) -> Scenario:
    """The default scenario ``name``, or a usage error (exit 2) listing the known ones."""
    if name not in SCENARIOS:
        raise usage_error(f"unknown scenario {name!r}; known: {', '.join(SCENARIOS)}")
    return SCENARIOS[name]


def variant_named(name: str, option: str = "--variant") -> str:
    """``name`` when it is a design variant, or a usage error (exit 2) naming ``option`` and the known ones."""
    if name not in VARIANTS:
        raise usage_error(f"{option}: unknown variant {name!r}; known: {', '.join(VARIANTS)}")
    return name


def scenario_policies(scn: Scenario, release: Optional[str], publication: Optional[str],
              coordination: Optional[str], releases: tuple[str, ...] = RELEASES) -> list[Scenario]:
    """The scenario under each policy asked for (``releases`` when --release is not given)."""
    for opt, value, allowed in (("release", release, RELEASES), ("publication", publication, PUBLICATIONS),
                                ("coordination", coordination, COORDINATIONS)):
        if value is not None and value not in allowed:
            raise usage_error(f"--{opt} must be one of {', '.join(allowed)}; got {value!r}")
    changes = {k: v for k, v in (("publication", publication), ("coordination", coordination)) if v}
    base = scn.with_policy(**changes) if changes else scn
    return [base.with_policy(release=r) for r in ([release] if release else list(releases))]

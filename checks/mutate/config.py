"""What one ``flightcheck mutate`` asks for, checked and planned before anything runs.

:class:`MutateConfig` holds the command's options; :func:`prepare` checks them in the order the command
reports them (the ``--stage`` functions, the ``--from-results`` file, the files, operators and the
equivalence file), generates the mutants (:func:`~flightcheck.checks.mutate.plan.plan`) and raises
:class:`OptionError` with the message to show for anything wrong.

For example::

    >>> check_stage("os:no_such_stage")
    Traceback (most recent call last):
    ...
    flightcheck.checks.mutate.config.OptionError: --stage 'os:no_such_stage': module 'os' has no attribute 'no_such_stage'
    >>> MutateConfig(quick=True).run_options().quick
    True
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from flightcheck.checks.inputs import InputError, shown
from flightcheck.checks.mutate.plan import DEFAULT_FILES, Plan, Target, plan, resolve_target
from flightcheck.checks.mutate.runner import RunOptions, stages_for_files, stages_of


class OptionError(ValueError):
    """A bad option of ``flightcheck mutate``; the message is the one line the command prints (exit 2)."""


@dataclass(frozen=True)
class MutateConfig:
    """The options of one mutation run (empty tuples and None: the defaults the command documents)."""

    files: tuple[str, ...] = ()              # empty: DEFAULT_FILES
    stages: Optional[tuple[str, ...]] = None  # None: each file's own stages
    quick: bool = False
    jobs: int = 2
    scheduler: Optional[str] = None
    all_rows: bool = False
    timeout: Optional[float] = None
    sample: Optional[int] = None
    seed: int = 0
    ids: tuple[str, ...] = ()
    operators: tuple[str, ...] = ()          # empty: DEFAULT_OPERATORS
    no_skip: tuple[str, ...] = ()
    skip_functions: tuple[str, ...] = ()
    equivalent: Optional[Path] = None        # None: the committed equivalence file
    baseline: bool = True
    out: Optional[Path] = None
    from_results: Optional[Path] = None

    def run_options(self) -> RunOptions:
        """What each mutant runs: the stages given (or None), quick, jobs, timeout and all rows."""
        return RunOptions(stages=self.stages, quick=self.quick, jobs=self.jobs, timeout=self.timeout,
                          all_rows=self.all_rows)

    def equivalence_file(self) -> str:
        """The equivalence file as the record names it."""
        from flightcheck.checks.mutate.equivalent import DEFAULT_PATH

        return str(self.equivalent or DEFAULT_PATH)


@dataclass
class Prepared:
    """A checked configuration with its plan: the targets, operators, the engine's digest at plan time,
    the saved results of ``--from-results`` (None without it) and the stages each file runs."""

    config: MutateConfig
    targets: list[Target]
    operators: tuple[str, ...]
    plan: Plan
    digest: str
    saved: Optional[tuple[list, dict]]

    @property
    def files(self) -> list[str]:
        """The engine files mutated, as reports name them."""
        return [t.file for t in self.targets]

    @property
    def stages(self) -> tuple[str, ...]:
        """The stages given, else the union of the files' own stages."""
        return self.config.stages if self.config.stages is not None else stages_for_files(self.files)

    def stages_by_file(self) -> dict[str, list[str]]:
        """The stages each file's mutants run."""
        opts = self.config.run_options()
        return {f: list(stages_of(opts, f)) for f in self.files}

    def run_meta(self) -> dict[str, Any]:
        """What this run would run: the stages (all, and by file) and quick."""
        return {"stages": list(self.stages), "stages_by_file": self.stages_by_file(), "quick": self.config.quick}


def check_stage(path: str) -> str:
    """``path`` (``MODULE:FUNCTION``) when it names a function that can be imported; an
    :class:`OptionError` otherwise."""
    module, sep, name = path.partition(":")
    if not sep or not module or not name:
        raise OptionError(f"--stage must be MODULE:FUNCTION (as flightcheck check lists them); got {shown(path)}")
    try:
        fn = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as e:
        raise OptionError(f"--stage {shown(path)}: {e}") from None
    if not callable(fn):
        raise OptionError(f"--stage {shown(path)} is not a function")
    return path


def read_saved(path: Path) -> tuple[list, dict]:
    """The outcomes and meta of ``--from-results FILE``
    (:func:`~flightcheck.checks.mutate.report.read_saved_results`), or an :class:`OptionError` naming
    the file, the line and the field."""
    from flightcheck.checks.mutate.report import read_saved_results

    try:
        return read_saved_results(path)
    except InputError as e:
        raise OptionError(f"--from-results {e}") from None


def prepare(config: MutateConfig) -> Prepared:
    """Check ``config`` and plan its mutants; an :class:`OptionError` for the first thing wrong."""
    from flightcheck.checks.mutate.equivalent import load_equivalents
    from flightcheck.checks.mutate.operators import DEFAULT_OPERATORS, OPERATORS
    from flightcheck.checks.mutate.plan import impl_digest  # looked up at each call (tests replace it)
    from flightcheck.checks.mutate.skips import DEBUG_FUNCTIONS

    for stage in config.stages or ():
        check_stage(stage)
    saved = read_saved(config.from_results) if config.from_results is not None else None  # bad input first
    digest = impl_digest()   # the engine's sources as the mutants are generated from them
    try:
        targets = [resolve_target(f) for f in (config.files or DEFAULT_FILES)]
        ops = tuple(config.operators or DEFAULT_OPERATORS)
        unknown = [o for o in ops if o not in OPERATORS]
        if unknown:
            raise ValueError(f"--operator: unknown {', '.join(unknown)}; known: {', '.join(OPERATORS)}")
        equivalents = load_equivalents(config.equivalent)
        p = plan(targets, operators=ops, equivalents=equivalents, no_skip=config.no_skip,
                 debug_functions=DEBUG_FUNCTIONS + config.skip_functions, sample=config.sample, seed=config.seed,
                 ids=config.ids)
    except ValueError as e:
        raise OptionError(str(e)) from None
    return Prepared(config, targets, ops, p, digest, saved)


"""Which mutants a run takes: the engine files, their mutants, the skipped and the equivalent, a sample.

:func:`resolve_target` turns ``--file`` values (``impl/scheduler.py``, ``scheduler.py``,
``flightcheck.impl.scheduler``, or a module of the server: ``impl/server/app.py``) into the module and
file to mutate; :func:`plan` generates every mutant of each, marks those a skip rule or the equivalence
file takes out, and picks the ones to run (all, or a seeded random sample, or the IDs asked for).

For example::

    >>> resolve_target("impl/pages.py").module
    'flightcheck.impl.pages'
    >>> resolve_target("checks/cli/app.py")
    Traceback (most recent call last):
    ...
    ValueError: --file must name a module of flightcheck.impl (impl/NAME.py or impl/server/NAME.py); got 'checks/cli/app.py'
"""

from __future__ import annotations

import importlib.util
import random
from dataclasses import dataclass, field
from pathlib import Path

from flightcheck.checks.mutate.generate import Mutant, generate
from flightcheck.checks.mutate.operators import DEFAULT_OPERATORS
from flightcheck.checks.mutate.skips import DEBUG_FUNCTIONS, SKIP_RULES

# The coordinator, the scheduler with its flight lifecycle (impl/flights.py, mixed into Scheduler: release,
# promotion, expiry and the ends of a request), and the page pool.
DEFAULT_FILES: tuple[str, ...] = ("impl/coordinator.py", "impl/scheduler.py", "impl/flights.py", "impl/pages.py")


@dataclass(frozen=True)
class Target:
    """An engine module to mutate: its import name, its file, and the name reports show."""

    module: str
    path: str
    file: str


def _impl_dir() -> Path:
    # Found without importing any engine module beyond the package itself (its __init__ loads BLAS only):
    # resolving impl/server/app.py must not import the server package (uvicorn, the app) in this process.
    spec = importlib.util.find_spec("flightcheck.impl")
    assert spec is not None and spec.submodule_search_locations, "flightcheck.impl is a package"
    return Path(list(spec.submodule_search_locations)[0])


def resolve_target(name: str) -> Target:
    """The engine module that ``name`` names; a ValueError for anything outside ``flightcheck.impl``.

    ``name`` is a file (``impl/NAME.py``, ``impl/server/NAME.py``, a path ending in either, or a bare
    ``NAME.py`` of ``impl/``) or a module name (``flightcheck.impl.NAME``, ``flightcheck.impl.server.NAME``);
    ``impl/server/__init__.py`` (module ``flightcheck.impl.server``) is the server package itself.

    For example::

        >>> t = resolve_target("impl/server/loop.py")
        >>> t.module, t.file
        ('flightcheck.impl.server.loop', 'impl/server/loop.py')
        >>> resolve_target("flightcheck.impl.server.app").file
        'impl/server/app.py'
        >>> resolve_target("impl/server/__init__.py").module
        'flightcheck.impl.server'
    """
    text = name.strip()
    error = ValueError(f"--file must name a module of flightcheck.impl (impl/NAME.py or impl/server/NAME.py); "
                       f"got {name!r}")
    if text.endswith(".py"):
        parts = Path(text).with_suffix("").parts
        if len(parts) == 1:
            rel = list(parts)                               # NAME.py: a module of impl/
        elif "impl" in parts[:-1]:
            rel = list(parts[len(parts) - 1 - parts[::-1].index("impl"):])   # what follows the last impl/
            rel = rel[1:] if rel and rel[0] == "impl" else rel
        else:
            raise error
        if rel and rel[-1] == "__init__":
            rel = rel[:-1]
    elif text.startswith("flightcheck.impl."):
        rel = text.removeprefix("flightcheck.impl.").split(".")
    else:
        raise error
    if not rel or len(rel) > 2 or (len(rel) == 2 and rel[0] != "server") or not all(p.isidentifier() for p in rel):
        raise error
    module = "flightcheck.impl." + ".".join(rel)
    base = _impl_dir().joinpath(*rel)
    path = base / "__init__.py" if base.is_dir() else base.with_suffix(".py")
    if not path.is_file():
        raise ValueError(f"--file {name!r}: no engine module {module}")
    return Target(module, str(path), "impl/" + path.relative_to(_impl_dir()).as_posix())


def impl_digest() -> str:
    """A digest of every engine source file (``impl/**/*.py``): a run compares it before and after, since
    each mutant carries a copy of its whole file taken at plan time, and a file edited meanwhile (the
    mutated one or one it imports) makes the mutant a mix of two versions that fails for no bug of its own."""
    import hashlib

    root = _impl_dir()
    h = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return h.hexdigest()[:16]


@dataclass
class Plan:
    """Every generated mutant, and the IDs to run, with why the others are left out."""

    mutants: list[Mutant]
    to_run: list[Mutant]
    skipped: dict[str, str] = field(default_factory=dict)      # id -> skip rule
    equivalent: dict[str, str] = field(default_factory=dict)   # id -> recorded reason
    stale: dict[str, str] = field(default_factory=dict)        # equivalence entries matching no mutant
    paths: dict[str, str] = field(default_factory=dict)        # module -> file path

    def listing(self) -> list[tuple[Mutant, str]]:
        """Every mutant with its status: ``run``, ``skip:RULE``, ``equivalent`` or ``not sampled``."""
        run_ids = {m.id for m in self.to_run}
        return [(m, "run" if m.id in run_ids else f"skip:{self.skipped[m.id]}" if m.id in self.skipped
                 else "equivalent" if m.id in self.equivalent else "not sampled") for m in self.mutants]


def plan(targets: list[Target], *, operators: tuple[str, ...] = DEFAULT_OPERATORS,
         equivalents: dict[str, str] | None = None, no_skip: tuple[str, ...] = (),
         debug_functions: tuple[str, ...] = DEBUG_FUNCTIONS, sample: int | None = None, seed: int = 0,
         ids: tuple[str, ...] = ()) -> Plan:
    """Generate, mark and select: see the module docstring."""
    bad = [r for r in no_skip if r not in SKIP_RULES]
    if bad:
        raise ValueError(f"--no-skip: unknown rule(s) {', '.join(bad)}; known: {', '.join(SKIP_RULES)}")
    equivalents = dict(equivalents or {})
    mutants: list[Mutant] = []
    for t in targets:
        source = Path(t.path).read_text(encoding="utf-8")
        mutants += generate(source, file=t.file, module=t.module, operators=operators,
                            debug_functions=debug_functions)
    result = Plan(mutants, [], paths={t.module: t.path for t in targets})
    by_id = {m.id: m for m in mutants}
    runnable = []
    for m in mutants:
        if m.skip is not None and m.skip not in no_skip:
            result.skipped[m.id] = m.skip
        elif m.id in equivalents:
            result.equivalent[m.id] = equivalents[m.id]
        else:
            runnable.append(m)
    files = {t.file for t in targets}
    result.stale = {i: r for i, r in equivalents.items() if i not in by_id and i.split("::")[0] in files}
    if ids:
        missing = [i for i in ids if i not in by_id]
        if missing:
            raise ValueError(f"--id: no such mutant: {missing[0]!r} (flightcheck mutate --list shows the IDs)")
        wanted = set(ids)
        runnable = [m for m in runnable if m.id in wanted]
    if sample is not None and sample < len(runnable):
        chosen = set(random.Random(seed).sample(range(len(runnable)), sample))
        runnable = [m for k, m in enumerate(runnable) if k in chosen]
    result.to_run = runnable
    return result

"""Running SPIN on an exported model and reading its answer back: state counts and verdicts.

:func:`spin_safety` checks every safety property and ``no_deadlock`` of a spec with SPIN: it exports
the model (:mod:`flightcheck.checks.promela.export`), generates the verifier (``spin -a -o2``), compiles
it (``gcc -O2 -DNOREDUCE -DSAFETY``) and runs it (``pan``); SPIN stops at its first assertion
violation, so a violated property is taken out of the model and the run repeated until none fails.
:func:`spin_liveness` checks ``eventually_terminates`` request by request on the process-per-engine-
action model under SPIN's weak fairness (``pan -a -f``). Both give wall times as pan reports them.

Two settings keep SPIN's state count comparable with the explorer's. ``-o2`` turns off SPIN's dead
variable elimination: a slot that no step and no assertion reads (``hit``, read only by a
``sometimes`` property, which has no assertion) would otherwise be treated as dead and states that
differ only there merged. ``-DNOREDUCE`` turns off partial-order reduction. The count is then the
explorer's plus one: the process's start before its first step checks the initial state.

For example (needs Debian's ``spin`` and a C compiler, as ``scripts/setup.sh`` installs)::

    >>> from flightcheck.spec.scenario import SCENARIOS
    >>> from flightcheck.spec.model import FlightSpec
    >>> run = spin_safety(FlightSpec(SCENARIOS["burst2"]))  # doctest: +SKIP
    >>> run.states, run.violated  # doctest: +SKIP
    (103, [])
"""

from __future__ import annotations

import re
import resource
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flightcheck.checks.promela.export import export_promela

SPIN_START_STATES = 1  # SPIN counts the start state before the initial check, the explorer does not


class SpinError(RuntimeError):
    """SPIN or the C compiler is missing, or the verifier failed to build or run."""


@dataclass
class SpinRun:
    """What SPIN reported: states stored, transitions, depth, errors, time, memory, and verdicts."""

    states: int = 0
    transitions: int = 0
    depth: int = 0
    seconds: float = 0.0          # pan's own "elapsed time" (search only)
    cpu_seconds: float = 0.0      # CPU time of the pan runs (user + system)
    wall_seconds: float = 0.0     # spin -a + gcc + pan, all runs
    memory_mb: float = 0.0
    violated: list[str] = field(default_factory=list)
    complete: bool = True         # False when pan stopped early (memory bound)
    output: str = ""

    @property
    def states_per_second(self) -> float:
        """States stored per second of pan's search (pan reports its time in hundredths)."""
        return self.states / max(self.seconds, 0.01)


def available() -> bool:
    """True when ``spin`` and ``gcc`` are on the PATH."""
    return shutil.which("spin") is not None and shutil.which("gcc") is not None


def _build(text: str, work: Path, defines: list[str], optimize: str = "-O2") -> Path:
    if not available():
        raise SpinError("spin and gcc are needed: apt-get install spin gcc (scripts/setup.sh does it)")
    (work / "model.pml").write_text(text)
    for cmd in (["spin", "-a", "-o2", "model.pml"],
                ["gcc", optimize, "-w", "-DNOREDUCE", *defines, "-o", "pan", "pan.c"]):
        r = subprocess.run(cmd, cwd=work, capture_output=True, text=True)
        if r.returncode != 0:
            raise SpinError(f"{' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}")
    return work / "pan"


def _children_cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def _run(pan: Path, args: list[str], timeout: float | None, run: "SpinRun") -> str:
    c = _children_cpu()
    r = subprocess.run([str(pan), *args], cwd=pan.parent, capture_output=True, text=True, timeout=timeout)
    run.cpu_seconds += _children_cpu() - c
    return r.stdout + r.stderr


def _number(pattern: str, text: str, cast: Any = int, default: Any = 0) -> Any:
    m = re.search(pattern, text)
    return cast(m.group(1)) if m else default


def _parse(out: str, run: SpinRun) -> None:
    run.states = _number(r"(\d+) states, stored", out)
    run.transitions = _number(r"(\d+) transitions", out)
    run.depth = _number(r"depth reached (\d+)", out)
    run.seconds += _number(r"elapsed time ([\d.e+-]+) seconds", out, float, 0.0)
    run.memory_mb = max(run.memory_mb, _number(r"([\d.]+)\s+total actual memory usage", out, float, 0.0))
    run.complete = "reached -DMEMLIM bound" not in out and "out of memory" not in out
    run.output = out


def _refuse_errors(out: str) -> None:
    """Raise when pan stopped without searching (``pan: error: ...``, e.g. too many processes for its
    fairness bookkeeping): its "0 states" and absent violation would otherwise read as a verdict."""
    m = re.search(r"pan: error: (.*)", out)
    if m or "states, stored" not in out:
        raise SpinError(f"pan did not search: {m.group(1) if m else out.strip()[-300:]}")


def _normal(expr: str) -> str:
    """An assertion's text as SPIN prints it and as it was written, made comparable (SPIN prints
    ``(c -> a : b)`` as ``( (c) ? (a) : (b) )``, ``true`` and ``false`` as ``1`` and ``0``, and drops
    spaces)."""
    expr = re.sub(r"\btrue\b", "1", re.sub(r"\bfalse\b", "0", expr))
    return re.sub(r"[\s()]", "", expr).replace("->", "?")


def _assertion_name(printed: str, texts: dict[str, str], violated: list[str]) -> str | None:
    """The property whose assertion SPIN printed. pan cuts the text it prints at 1,000 characters (a
    long invariant such as ``quiescent_clean`` on four requests), so a printed text that is not a
    whole assertion names the one property, not yet reported, that it is the beginning of."""
    seen = _normal(printed)
    name = texts.get(seen)
    if name is None:
        starts = [n for t, n in texts.items() if t.startswith(seen) and n not in violated]
        name = starts[0] if len(starts) == 1 else None
    return None if name in violated else name


def spin_safety(spec: Any, *, memory_mb: int = 8192, hash_bits: int = 24, max_depth: int = 100_000,
                timeout: float | None = None, collapse: bool = False, optimize: str = "-O2") -> SpinRun:
    """Every safety property and ``no_deadlock`` of ``spec``, checked by SPIN (see the module docstring)."""
    model = export_promela(spec)
    texts = {_normal(t): name for name, t in model.assertions.items()}
    run = SpinRun()
    t0 = time.perf_counter()
    defines = ["-DSAFETY", f"-DMEMLIM={memory_mb}"] + (["-DCOLLAPSE"] if collapse else [])
    with tempfile.TemporaryDirectory(prefix="flightcheck-spin-") as tmp:
        work = Path(tmp)
        text = model.text
        while True:
            pan = _build(text, work, defines, optimize)
            out = _run(pan, [f"-m{max_depth}", f"-w{hash_bits}"], timeout, run)
            _refuse_errors(out)
            _parse(out, run)
            if "max search depth too small" in out:
                raise SpinError(f"pan's depth bound -m{max_depth} is too small for this model; raise max_depth")
            m = re.search(r"assertion violated (.*) \(at depth \d+\)", out)
            if not m:
                break
            name = _assertion_name(m.group(1), texts, run.violated)
            if name is None:
                raise SpinError(f"SPIN reports an assertion that is not a property's: {m.group(1)[:200]}")
            run.violated.append(name)
            text = text.replace(f"    assert({model.assertions[name]});  /* {name} */\n", "")
    run.wall_seconds = time.perf_counter() - t0
    return run


def spin_liveness(spec: Any, *, memory_mb: int = 8192, hash_bits: int = 22,
                  timeout: float | None = None, optimize: str = "-O2") -> SpinRun:
    """``eventually_terminates`` under weak fairness, one LTL formula per request; stops at the first
    request that can stay live forever (``violated == ["eventually_terminates"]``)."""
    model = export_promela(spec, liveness=True)
    run = SpinRun()
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="flightcheck-spin-") as tmp:
        # pan's fairness bookkeeping holds 4 * NFAIR - 2 processes, and the never claim of the LTL
        # formula is one of them.
        nfair = max(2, -(-(model.num_processes + 1 + 2) // 4))
        pan = _build(model.text, Path(tmp), [f"-DMEMLIM={memory_mb}", f"-DNFAIR={nfair}"], optimize)
        for name in model.ltl:
            out = _run(pan, ["-a", "-f", "-A", "-m1000000", f"-w{hash_bits}", "-N", name], timeout, run)
            _refuse_errors(out)
            _parse(out, run)
            if "acceptance cycle" in out:
                run.violated = ["eventually_terminates"]
                break
    run.wall_seconds = time.perf_counter() - t0
    return run

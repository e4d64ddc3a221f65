"""A conformance run as a program: recorded draws replayed without Hypothesis, and minimised.

Every rule the state machine runs logs the values it drew, so a run is a program ``(set-up draws,
[(rule, draws), ...])`` that :func:`replay_program` runs again on a fresh engine with every check. After
Hypothesis's own shrinking, :func:`minimize` deletes rules (and cuts multi-step rules to one step)
while the run still fails with the same property, so the run a person reads keeps only what matters.
"""

from __future__ import annotations

from typing import Any

from flightcheck.checks.conform.diagnosis import ConformanceError, Diagnosis
from flightcheck.checks.conform.machine import MAX_ARRIVALS, Skip, campaign_machine
from flightcheck.checks.conform.results import ConformFailure, ConformOptions, ConformResult


class Script:
    """Stands in for Hypothesis's ``data`` when a recorded program is replayed: yields the logged values."""

    def __init__(self, values: list[Any]) -> None:
        self.values = list(values)

    def draw(self, strategy: Any, label: str | None = None) -> Any:
        if not self.values:
            raise Skip(label or "draw")
        return self.values.pop(0)


def replay_program(opts: ConformOptions, setup: list[Any], program: list[tuple[str, list[Any]]]
                    ) -> tuple[Diagnosis | None, list[str]]:
    """Run a recorded program on a fresh engine with every check; returns (diagnosis or None, rule log)."""
    machine = campaign_machine(opts, ConformResult(ok=True))()
    try:
        try:
            machine.setup(data=Script(setup))
            machine.conforms()
            for name, values in program:
                if name == "arrive" and len(machine.engine.scheduler.requests) >= MAX_ARRIVALS:
                    continue
                try:
                    if name == "step":
                        machine.step(num=values[0])
                    else:
                        getattr(machine, name)(data=Script(values))
                except Skip:
                    continue
                machine.conforms()
        finally:
            machine.teardown()
    except ConformanceError as error:
        return error.diagnosis, list(machine.rules)
    return None, list(machine.rules)


def same_failure(a: Diagnosis, b: Diagnosis | None) -> bool:
    return b is not None and (a.properties[:1] == b.properties[:1] if a.properties else a.kind == b.kind)


def minimize(opts: ConformOptions, failure: ConformFailure, program: tuple) -> ConformFailure:
    """Delete rules from a failing program while it fails the same way (after Hypothesis's shrinking).

    Hypothesis shrinks the choice sequence; a state machine's run can still keep rules that do not
    matter (it prefers the simplest rule at each step, which may add arrivals). This pass tries
    removing each rule, and cutting multi-step rules to one step, keeping every change under which the
    run still fails with the same property.
    """
    setup, prog = program
    prog = list(prog)
    changed = True
    while changed:
        changed = False
        for k in reversed(range(len(prog))):
            candidates = [prog[:k] + prog[k + 1:]]
            if prog[k][0] == "step" and prog[k][1][0] > 1:
                candidates.append(prog[:k] + [("step", [1])] + prog[k + 1:])
            for cand in candidates:
                diagnosis, _rules = replay_program(opts, setup, cand)
                if same_failure(failure.diagnosis, diagnosis):
                    prog, changed = cand, True
                    break
    diagnosis, rules = replay_program(opts, setup, prog)
    if not same_failure(failure.diagnosis, diagnosis):
        return failure
    return ConformFailure(rules, diagnosis)

"""One default per variant, used by every command: the scenario and policy a variant's story shows on.

``flightcheck explore --variant X``, ``prove --variant X``, ``equiv correct X`` and ``check`` all run a
variant on its demo scenario under its demo policy (:attr:`Variant.demo`, :attr:`Variant.demo_policy`)
unless the user names a scenario or a policy, so the path lengths they print agree. Two designs compared
by ``equiv`` run on the demo of the one that is not ``correct`` (a mutant's first), and BMC looks as
deep as ``check`` does.

For example::

    >>> variant_scenario("early-release").policy.publication
    'on-completion'
    >>> pair_scenario("correct", "stranded-followers").name
    'burst2-abort'
    >>> equiv_depth("correct", "draining"), equiv_depth("correct", "forget-at-release")
    (6, 12)
"""

from __future__ import annotations

from flightcheck.spec.scenario import Scenario
from flightcheck.spec.variants import VARIANTS

# BMC depth for a distinguishing sequence: deep enough for every mutant's demo (check records each
# length), shallower for two correct designs, whose equivalence the product induction then proves.
MUTANT_EQUIV_DEPTH, CORRECT_EQUIV_DEPTH = 12, 6
PROVE_DEPTH = 6  # prove's BMC depth for a correct design (a mutant's is as deep as its shortest path)


def variant_scenario(name: str) -> Scenario:
    """The variant's demo scenario under its demo policy (:meth:`~flightcheck.spec.variants.Variant.demo_scenario`)."""
    return VARIANTS[name].demo_scenario()


def is_mutant(name: str) -> bool:
    """A variant that must violate a property (not one of the correct designs)."""
    return VARIANTS[name].expected_violation is not None


def pair_scenario(a: str, b: str) -> Scenario:
    """The scenario two designs are compared on: the demo of a mutant among them (``b`` first), else of
    the one that is not ``correct``, else ``correct``'s own."""
    for name in (b, a):
        if is_mutant(name):
            return variant_scenario(name)
    for name in (b, a):
        if name != "correct":
            return variant_scenario(name)
    return variant_scenario(a)


def equiv_depth(a: str, b: str) -> int:
    """How deep ``equiv`` and ``check`` look for a distinguishing sequence between ``a`` and ``b``."""
    return MUTANT_EQUIV_DEPTH if is_mutant(a) or is_mutant(b) else CORRECT_EQUIV_DEPTH

"""The ``equiv`` stage of ``flightcheck check``: the seed's refactor and every mutant against ``correct``.

``draining`` must be equivalent to ``correct``, and every mutant must differ from it with a
distinguishing sequence, each pair on the scenario and at the depth the ``equiv`` command uses by default
(:mod:`flightcheck.checks.suite.defaults`), so the two agree.
"""

from __future__ import annotations

from flightcheck.checks.suite.context import Context, where
from flightcheck.checks.suite.defaults import equiv_depth, pair_scenario
from flightcheck.checks.suite.expect import is_count, is_text, pair_of
from flightcheck.checks.suite.job import Row
from flightcheck.checks.suite.registry import Stage
from flightcheck.spec.variants import VARIANTS


def equiv_stage(ctx: Context) -> list[Row]:
    """The seed's refactor: ``draining`` against ``correct`` must be equivalent, and every mutant must
    differ from ``correct`` with a distinguishing sequence (each pair on the scenario and at the depth the
    ``equiv`` command uses by default: :mod:`flightcheck.checks.suite.defaults`)."""
    from flightcheck.checks.proofs.equivalence import check_equivalence

    rows = []
    for v in VARIANTS.values():
        if v.name == "correct":
            continue
        scn = pair_scenario("correct", v.name)
        # The product induction proves the correct pair for every depth; BMC first rules out short differences.
        depth = equiv_depth("correct", v.name)
        res = check_equivalence("correct", v.name, scn, depth=depth)
        ok = res.equivalent if v.expected_violation is None else not res.equivalent
        detail = res.summary()
        changed = ctx.expect.compare("equiv", v.name, [res.verdict, len(res.sequence)])
        if changed:
            ok, detail = False, f"verdict changed ({changed}); " + detail
        rows.append(Row("equiv", f"correct vs {v.name}", ok, detail, res.seconds,
                        {**where(scn), "variant_a": "correct", "variant_b": v.name, "depth": depth,
                         "verdict": res.verdict, "sequence": res.sequence, "difference": res.difference}))
    return rows


STAGE = Stage(
    "equiv", equiv_stage,
    depends=("spec/**", "checks/explore/**", "checks/proofs/**", "checks/suite/defaults.py"),
    report="equivalences",
    expects={"equiv": ("[verdict, sequence length]", pair_of(is_text, is_count))},
)

"""The spec read symbolically by z3: bounded model checking, k-induction proofs, refactor equivalence."""

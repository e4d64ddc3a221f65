"""Pinned numbers that more than one checker must reproduce exactly (explorer, BMC)."""

# variant -> (the property it must violate, its shortest counterexample length on its demo scenario)
MUTANTS = {
    "forget-at-release": ("termination_validated", 9),
    "no-unknown-check": ("termination_validated", 1),
    "insert-on-miss": ("visible_after_compute", 2),
    "early-release": ("release_after_publication", 6),
    "stranded-followers": ("no_deadlock", 3),
}

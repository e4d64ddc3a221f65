"""Pinned numbers that more than one checker must reproduce exactly (explorer, BMC)."""

# variant -> (the property it must violate, its shortest counterexample length on its demo scenario)
MUTANTS = {
    "forget-at-release": ("termination_validated", 9),
    "no-unknown-check": ("termination_validated", 1),
    "insert-on-miss": ("visible_after_compute", 2),
    "early-release": ("release_after_publication", 6),
    "stranded-followers": ("no_deadlock", 3),
    "unpinned-release": ("single_prefill", 16),
    "promote-released": ("known_once", 11),
    "promote-loses-followers": ("blocked_in_open_flight", 5),
    "expire-forgets": ("termination_validated", 10),
    "admit-ignores-reservations": ("admission_has_room", 4),
    "evict-referenced": ("in_use_never_evicted", 5),
    "via-unshared": ("waits_for_shared_pages", 2),
    "sibling-under-parent-key": ("visible_after_compute", 6),
    "waiter-pins-unpublished": ("in_use_never_evicted", 4),
}

"""The explicit-state explorer: every reachable state of a scenario, every property, shortest paths, pictures."""

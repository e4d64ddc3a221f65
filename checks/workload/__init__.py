"""The workload model: how often a real trace needs the same cold block while its first load is in flight."""

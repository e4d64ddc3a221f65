"""flightcheck: check a prefix-cache single-flight coordinator.

The package has three parts, installed under this namespace:

- ``flightcheck.spec``: the executable spec (a pure transition system) and its properties;
- ``flightcheck.impl``: a real MLX engine with paged KV cache, prefix caching and single-flight;
- ``flightcheck.checks``: explorer, z3 checks, conformance, workload model, rendering and the CLI.
"""

__version__ = "0.1.0"

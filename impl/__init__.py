"""A real MLX engine: paged KV cache, prefix caching, continuous batching and single-flight coordination."""

# Why first: Debian's OpenBLAS must be loaded with global symbols before anything imports mlx
# (10-30x faster matmuls on Linux CPUs); importing any flightcheck.impl module runs this line.
from flightcheck.impl import blas as _blas  # noqa: F401

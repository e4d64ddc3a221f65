# Load Debian's OpenBLAS before any test module imports mlx (see impl/blas.py): without this, a test
# file that starts with `import mlx...` would bind MLX to the reference BLAS for the whole session
# and the real-model tests would run 10-30x slower.
import flightcheck.impl.blas  # noqa: F401

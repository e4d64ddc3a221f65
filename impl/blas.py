"""The fast CPU path for MLX: an optimised BLAS loaded with global symbols before MLX itself.

The Linux ``mlx[cpu]`` wheel resolves ``sgemm`` and friends dynamically; left alone it finds the
reference BLAS (about 6 GFLOP/s for an fp32 matmul here). If Debian's pthread OpenBLAS is loaded
first with ``RTLD_GLOBAL``, its symbols win and the same matmul runs at 150-200 GFLOP/s. The order
matters, so every impl module imports MLX through this one::

    from flightcheck.impl.blas import mx

On macOS (Accelerate / Metal) nothing is loaded: MLX's own backends serve.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
import time
import warnings
from dataclasses import dataclass
from typing import Any

# Why these paths: Debian's libopenblas0-pthread installs the library under the multiarch folder and
# registers libopenblas.so.0 as an alternative; the openblas-pthread folder is the real file.
_CANDIDATES = [
    "/usr/lib/{arch}-linux-gnu/libopenblas.so.0",
    "/usr/lib/{arch}-linux-gnu/openblas-pthread/libopenblas.so.0",
    "/usr/lib/{arch}-linux-gnu/openblas-pthread/libblas.so.3",
]

# Below this an fp32 matmul is the reference BLAS, not an optimised one. Measured here: reference
# ~6 GFLOP/s, OpenBLAS 150-190 when the machine is quiet and ~30 when other jobs load both cores,
# so the threshold sits well between the two.
FAST_GFLOPS_THRESHOLD = 15.0


def _load_openblas() -> str | None:
    """Loads OpenBLAS globally if MLX is not loaded yet; returns the path loaded, or None."""
    if platform.system() != "Linux":
        return None
    if "mlx.core" in sys.modules:
        # Too late: MLX already bound its BLAS symbols. Say so rather than pretend.
        return None
    override = os.environ.get("FLIGHTCHECK_BLAS")
    arch = platform.machine()
    paths = [override] if override else [p.format(arch=arch) for p in _CANDIDATES]
    for path in paths:
        if path and os.path.exists(path):
            try:
                ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
                return path
            except OSError:
                continue
    return None


_MLX_WAS_LOADED_FIRST = "mlx.core" in sys.modules
LOADED_PATH = _load_openblas()


def _mlx() -> Any:
    """``mlx.core``, imported on first use (after the BLAS load above, which importing this module did)."""
    import mlx.core

    globals()["mx"] = mlx.core
    return mlx.core


def __getattr__(name: str) -> Any:
    """``mx`` on first use (PEP 562), so that importing :mod:`flightcheck.impl` for its configuration (the
    command line's options) costs no MLX import; ``from flightcheck.impl.blas import mx`` imports it."""
    if name == "mx":
        return _mlx()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


@dataclass(frozen=True)
class BlasStatus:
    """What the fast path looks like on this machine: the library loaded and a measured matmul rate."""

    system: str
    loaded_path: str | None
    mlx_loaded_first: bool
    matmul_gflops: float
    device: str
    mlx_version: str

    @property
    def is_fast(self) -> bool:
        # On macOS Accelerate is always in effect. On Linux OpenBLAS must have been loaded before MLX
        # (so MLX's BLAS symbols bind to it) and the measured rate must confirm it.
        if self.system == "Darwin":
            return True
        return self.loaded_path is not None and not self.mlx_loaded_first and self.matmul_gflops >= FAST_GFLOPS_THRESHOLD

    def describe(self) -> str:
        if self.is_fast:
            return f"fast BLAS in effect ({self.matmul_gflops:.0f} GFLOP/s fp32 matmul, {self.loaded_path or 'native'})"
        why = "MLX was imported before flightcheck.impl.blas" if self.mlx_loaded_first else (
            "no OpenBLAS found (install Debian's libopenblas0-pthread: apt-get install libopenblas0-pthread)"
            if self.loaded_path is None else f"{self.loaded_path} loaded but not used")
        return f"SLOW reference BLAS ({self.matmul_gflops:.1f} GFLOP/s fp32 matmul): {why}"


_STATUS: BlasStatus | None = None


def measure_matmul_gflops(size: int = 384, repeats: int = 6) -> float:
    """Times an fp32 ``size x size`` matmul on MLX's default device and returns GFLOP/s."""
    mx = _mlx()
    a = mx.random.normal((size, size), key=mx.random.key(0))
    b = mx.random.normal((size, size), key=mx.random.key(1))
    mx.eval(a, b)
    mx.eval(a @ b)  # warm-up: thread pools, first-call allocation
    best = float("inf")
    for _ in range(repeats):
        # Best of several: other processes on the machine slow some runs, never speed one up.
        start = time.perf_counter()
        mx.eval(a @ b)
        best = min(best, time.perf_counter() - start)
    return 2.0 * size**3 / max(best, 1e-9) / 1e9


def blas_status() -> BlasStatus:
    """Measures once (about 0.1 s with the fast path) and caches the result."""
    global _STATUS
    if _STATUS is None:
        mx = _mlx()
        _STATUS = BlasStatus(
            system=platform.system(),
            loaded_path=LOADED_PATH,
            mlx_loaded_first=_MLX_WAS_LOADED_FIRST,
            matmul_gflops=measure_matmul_gflops(),
            device=str(mx.default_device()),
            mlx_version=mx.__version__,
        )
    return _STATUS


def is_fast_blas() -> bool:
    """True when MLX's fp32 matmul runs on an optimised BLAS (or a non-Linux backend)."""
    return blas_status().is_fast


def warn_if_slow() -> None:
    """Emits a RuntimeWarning naming the fix when the slow reference BLAS is in use."""
    status = blas_status()
    if not status.is_fast:
        warnings.warn(f"flightcheck: {status.describe()}; the model will run 10-30x slower.",
                      RuntimeWarning, stacklevel=2)


__all__ = ["mx", "BlasStatus", "blas_status", "is_fast_blas", "warn_if_slow", "measure_matmul_gflops", "LOADED_PATH"]

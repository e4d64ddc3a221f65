"""A bad model file, for every command that loads a model: exit 2, the file named, the fix that fits.

The files are made here: a directory, a missing path, a FIFO, a truncated file and a file of the right
size with the wrong bytes (sparse, so it costs no disk). A path the user gave (``--model`` or
``FLIGHTCHECK_MODEL``) is never answered with "run the fetch", which fills the cache and not that path.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from bad_input import flat, invoke

from flightcheck.checks.conform import engines
from flightcheck.impl.model_file import (ARGUMENT, CACHE, ENVIRONMENT, FILE_SIZE, ModelFileError, loading, locate,
                                         main as model_file_main, model_file_error)

REPO = Path(__file__).resolve().parents[2]
FETCH = "model_file --fetch"


@pytest.fixture
def bad_models(tmp_path):
    """``{what is wrong: (path, what the message says)}``."""
    truncated = tmp_path / "truncated.gguf"
    truncated.write_bytes(b"GGUF" + bytes(996))
    altered = tmp_path / "altered.gguf"
    with open(altered, "wb") as f:
        f.truncate(FILE_SIZE)  # the pinned size, all zeros: only the checksum can tell
    os.mkfifo(tmp_path / "fifo.gguf")
    (tmp_path / "folder").mkdir()
    (tmp_path / "loop.gguf").symlink_to(tmp_path / "loop2.gguf")
    (tmp_path / "loop2.gguf").symlink_to(tmp_path / "loop.gguf")
    (tmp_path / "dangling.gguf").symlink_to(tmp_path / "gone.gguf")
    return {"directory": (tmp_path / "folder", "is a directory, not a GGUF file"),
            "missing": (tmp_path / "absent.gguf", "is missing"),
            "symlink loop": (tmp_path / "loop.gguf", "is a symlink loop"),
            "broken symlink": (tmp_path / "dangling.gguf", "is a broken symlink"),
            "fifo": (tmp_path / "fifo.gguf", "is not a regular file"),
            "truncated": (truncated, "is 1000 bytes, expected 98362432 (truncated or wrong file)"),
            "altered": (altered, "has sha256 ")}


@pytest.fixture
def no_loaded_model(monkeypatch):
    """The conformance engines' per-process model cache emptied, so a command really loads the file."""
    monkeypatch.setattr(engines, "_MODELS", {})
    monkeypatch.delenv("FLIGHTCHECK_MODEL", raising=False)


def assert_model_error(result, path, problem, origin):
    message = flat(result.output)
    assert result.exit_code == 2, (result.exit_code, message)
    assert f"model file {path} {problem}" in message, message
    assert "departs from the spec" not in message and "Traceback" not in result.output
    if origin == CACHE:
        assert FETCH in message, message
    else:
        assert FETCH not in message, message  # the fetch fills the cache, not the path given
        assert ("leave it out" if origin == ARGUMENT else "unset it") in message, message


@pytest.mark.parametrize("what", ["directory", "missing", "symlink loop", "broken symlink", "fifo", "truncated",
                                  "altered"])
def test_generate_with_a_bad_model_path_exits_2_without_the_fetch_hint(bad_models, what):
    path, problem = bad_models[what]
    assert_model_error(invoke("generate", "hi", "--model", path), path, problem, ARGUMENT)


@pytest.mark.parametrize("what", ["directory", "symlink loop", "broken symlink", "truncated", "altered"])
def test_doctor_reports_a_bad_model_and_exits_2(bad_models, what):
    path, problem = bad_models[what]
    result = invoke("doctor", "--model", path)
    assert result.exit_code == 2 and problem in flat(result.output)


@pytest.mark.parametrize("command", [["conform", "--model", "smollm2", "--examples", "2"],
                                     ["probe", "--model", "smollm2"]])
@pytest.mark.parametrize("what", ["directory", "truncated"])
def test_conform_and_probe_report_a_file_problem_not_a_conformance_failure(bad_models, no_loaded_model, command,
                                                                           what):
    path, problem = bad_models[what]
    result = invoke(*command, env={"FLIGHTCHECK_MODEL": str(path)})
    assert_model_error(result, path, problem, ENVIRONMENT)


def test_an_empty_cache_says_to_run_the_fetch(tmp_path, no_loaded_model):
    env = {"FLIGHTCHECK_CACHE": str(tmp_path)}
    cached = tmp_path / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    for command in (["generate", "hi"], ["conform", "--model", "smollm2"], ["probe", "--model", "smollm2"]):
        assert_model_error(invoke(*command, env=env), cached, "is missing", CACHE)
    result = invoke("doctor", "--json", env=env)
    assert result.exit_code == 2 and f'"model_file": "{cached}"' in result.output


def test_the_verifier_exits_2_on_a_bad_file(bad_models, monkeypatch, capsys):
    path, problem = bad_models["truncated"]
    monkeypatch.setenv("FLIGHTCHECK_MODEL", str(path))
    assert model_file_main([]) == 2
    assert problem in capsys.readouterr().err


@pytest.mark.parametrize("script", ["bench_engine.py", "bench_model.py"])
def test_the_model_benchmarks_exit_2_on_a_bad_file(bad_models, script):
    path, problem = bad_models["directory"]
    args = ["--model", "smollm2"] if script == "bench_engine.py" else []
    done = subprocess.run([sys.executable, str(REPO / "scripts" / script), *args], capture_output=True, text=True,
                          env=dict(os.environ, FLIGHTCHECK_MODEL=str(path)), timeout=120)
    assert done.returncode == 2, done.stderr
    assert f"model file {path} {problem}" in done.stderr and "Traceback" not in done.stderr


def test_one_function_classifies_any_failure_for_the_server_and_the_rest(bad_models, monkeypatch):
    """What ``serve`` (or any new command) calls: ``loading(path)`` around building the engine."""
    monkeypatch.delenv("FLIGHTCHECK_MODEL", raising=False)
    folder = bad_models["directory"][0]
    with pytest.raises(ModelFileError) as raised:
        with loading(folder):
            open(folder, "rb")  # an OSError from anywhere in the load
    assert raised.value.origin == ARGUMENT and raised.value.path == folder
    assert "is a directory, not a GGUF file" in str(raised.value) and FETCH not in str(raised.value)
    # An error raised without its origin (deep in the GGUF reader) gets the hint for where the path came from.
    bare = ModelFileError("cannot be read as GGUF (bad magic)", folder)
    assert FETCH not in str(bare) and "leave it out" in str(model_file_error(bare, folder))
    monkeypatch.setenv("FLIGHTCHECK_CACHE", str(folder))
    assert FETCH in str(model_file_error(FileNotFoundError(2, "No such file"), None))
    with pytest.raises(ValueError):  # anything else is not a file problem and passes through
        with loading(folder):
            raise ValueError("a bug, not a file")
    with pytest.raises(ModelFileError, match="is missing; run `python -m flightcheck.impl.model_file --fetch`"):
        locate()


def test_an_empty_model_path_is_an_error_not_the_cached_file(no_loaded_model):
    """``--model ''`` must not quietly mean "the cache" (an unset shell variable): exit 2, naming it."""
    for command in (["generate", "hi", "--model", ""], ["doctor", "--model", ""]):
        result = invoke(*command)
        message = flat(result.output)
        assert result.exit_code == 2 and "the model file path is empty ('')" in message, (command, message)
        assert FETCH not in message and "Traceback" not in result.output
    with pytest.raises(ModelFileError, match=r"path is empty \(''\); the path was given explicitly"):
        locate("")


def test_a_symlink_loop_met_while_loading_is_named_a_loop(bad_models, monkeypatch):
    monkeypatch.delenv("FLIGHTCHECK_MODEL", raising=False)
    loop = bad_models["symlink loop"][0]
    with pytest.raises(ModelFileError, match="is a symlink loop"):
        with loading(loop):
            open(loop, "rb")

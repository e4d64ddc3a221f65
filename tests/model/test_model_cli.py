"""`flightcheck generate` and `flightcheck doctor`, run in-process, plus the BLAS loader's order rule."""

from __future__ import annotations

import json
import subprocess
import sys

from typer.testing import CliRunner

from flightcheck.checks.cli.app import app

runner = CliRunner()


def test_generate_chat_streams_the_pinned_answer():
    result = runner.invoke(app, ["generate", "What is the capital of France?", "--chat", "--max-tokens", "12"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "The capital of France is Paris.\n"
    assert "37 prompt tokens" in result.stderr and "finish: eos" in result.stderr


def test_generate_stops_at_max_tokens():
    result = runner.invoke(app, ["generate", "The capital of France is", "--max-tokens", "2", "--no-stats"])
    assert result.exit_code == 0, result.output
    assert result.stdout == " Paris.\n"
    assert result.stderr == ""


def test_generate_sampling_is_seeded():
    args = ["generate", "Once upon a time", "--max-tokens", "6", "--temperature", "1.0", "--no-stats"]
    first = runner.invoke(app, args + ["--seed", "3"])
    again = runner.invoke(app, args + ["--seed", "3"])
    assert first.exit_code == again.exit_code == 0
    assert first.stdout == again.stdout and len(first.stdout) > 1


def test_generate_bad_arguments_exit_2():
    cases = [
        (["generate", "   "], "PROMPT is empty"),
        (["generate", "hi", "--temperature", "-1"], "--temperature must be a finite number >= 0"),
        (["generate", "hi", "--top-p", "0"], "--top-p must be in (0, 1]"),
        (["generate", "hi", "--max-tokens", "0"], "--max-tokens must be an integer >= 1"),
        (["generate", "hi", "--max-tokens", "9000"], "exceeds the model's context of 8192 tokens"),
        (["generate", "hi", "--system", "x"], "--system needs --chat"),
    ]
    for args, message in cases:
        result = runner.invoke(app, args)
        assert result.exit_code == 2, (args, result.output)
        assert message in " ".join(result.stderr.split()), (args, result.stderr)


def test_generate_missing_model_file_exit_2(tmp_path):
    result = runner.invoke(app, ["generate", "hi", "--model", str(tmp_path / "absent.gguf")])
    assert result.exit_code == 2  # a missing model is bad input
    assert "absent.gguf is missing" in " ".join(result.stderr.split()).replace("\n", "")
    assert "--fetch" not in result.stderr and "leave it out" in result.stderr  # the fetch fills the cache only


def test_doctor_json_reports_blas_mlx_and_model():
    result = runner.invoke(app, ["doctor", "--json"])
    found = json.loads(result.stdout)
    assert set(found) == {"platform", "mlx_version", "mlx_device", "blas_library", "matmul_gflops", "fast_blas",
                          "blas", "model_file", "model_ok", "model"}
    assert found["model_ok"] is True and found["model_file"].endswith("SmolLM2-135M-Instruct.Q4_1.gguf")
    assert found["blas_library"].endswith("libopenblas.so.0")  # conftest loads it before mlx
    assert result.exit_code == (0 if found["fast_blas"] else 1)


def test_doctor_flags_a_corrupt_model_file(tmp_path):
    bad = tmp_path / "bad.gguf"
    bad.write_bytes(b"GGUF" + bytes(100))
    result = runner.invoke(app, ["doctor", "--json", "--model", str(bad)])
    assert result.exit_code == 2  # a corrupt model file is bad input, whatever the BLAS
    found = json.loads(result.stdout)
    assert found["model_ok"] is False and "104 bytes" in found["model"] and "truncated" in found["model"]


def test_importing_mlx_first_is_detected_and_warned():
    """The order rule of impl/blas.py: MLX imported before flightcheck means the slow BLAS, said plainly."""
    code = ("import warnings, mlx.core\n"
            "from flightcheck.impl.blas import blas_status, warn_if_slow\n"
            "s = blas_status()\n"
            "with warnings.catch_warnings(record=True) as w:\n"
            "    warnings.simplefilter('always'); warn_if_slow()\n"
            "print(s.mlx_loaded_first, s.loaded_path, s.is_fast, len(w), str(w[0].message) if w else '')\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("True None False 1 flightcheck: SLOW reference BLAS")
    assert "MLX was imported before flightcheck.impl.blas" in out


def test_importing_flightcheck_first_loads_openblas():
    code = ("import flightcheck.impl\nimport mlx.core\nfrom flightcheck.impl.blas import blas_status\n"
            "s = blas_status()\nprint(s.mlx_loaded_first, s.loaded_path)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.startswith("False /usr/lib/") and "libopenblas.so.0" in out


def test_generate_with_an_empty_model_path_exits_2_naming_it():
    """``--model ''`` (a variable that expanded to nothing) used to load the cached model silently."""
    result = runner.invoke(app, ["generate", "hi", "--model", ""])
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert "the model file path is empty ('')" in message and "--model" in message
    assert "--fetch" not in message  # fetching fills the cache, not the path given
    assert result.stdout == ""


def test_doctor_with_an_empty_model_path_exits_2_naming_it():
    result = runner.invoke(app, ["doctor", "--json", "--model", ""])
    assert result.exit_code == 2, result.output
    findings = json.loads(result.stdout)
    assert findings["model_file"] == "''" and not findings["model_ok"]
    assert "the model file path is empty" in findings["model"]


def test_generate_reports_a_symlink_loop_as_a_loop(tmp_path):
    loop = tmp_path / "loop.gguf"
    loop.symlink_to(tmp_path / "other.gguf")
    (tmp_path / "other.gguf").symlink_to(loop)
    result = runner.invoke(app, ["generate", "hi", "--model", str(loop)])
    assert result.exit_code == 2, result.output
    message = " ".join(result.stderr.split())
    assert "loop.gguf is a symlink loop" in message and "is missing" not in message

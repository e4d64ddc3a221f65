"""``flightcheck serve`` as a real process with the ``openai`` client: it streams, writes the event log
under the online monitor, stops promptly on SIGINT, takes every EngineConfig field as an option, and
refuses bad arguments, a corrupt model file and a pool past what `ulimit -v` leaves with one line and exit
status 2."""

import dataclasses
import json
import re
import signal
import subprocess
import sys
import time

import pytest

from flightcheck.impl.config import EngineConfig

CLI = [sys.executable, "-m", "flightcheck.checks.cli.app", "serve"]


def start(args, **kwargs):
    proc = subprocess.Popen(CLI + args, stderr=subprocess.PIPE, text=True, **kwargs)
    line = proc.stderr.readline()
    match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    assert match, line + proc.stderr.read() if proc.poll() is not None else line
    return proc, f"http://127.0.0.1:{match.group(1)}"


def stop(proc):
    """SIGINT, then wait for the exit: a poll with a generous bound, never a tight timeout."""
    proc.send_signal(signal.SIGINT)
    deadline = time.monotonic() + 120
    while proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    if proc.poll() is None:
        proc.kill()
        pytest.fail("serve did not stop within 120 s of SIGINT")
    return proc.returncode, proc.stderr.read()


def test_serve_streams_tokens_writes_the_monitored_event_log_and_stops_on_sigint(tmp_path):
    from openai import OpenAI

    events = tmp_path / "events.jsonl"
    proc, url = start(["--model", "tiny", "--port", "0", "--num-pages", "64", "--events", str(events), "--monitor",
                       "--follower-wait-bound", "7"])
    try:
        client = OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=60)
        chunks = list(client.completions.create(model="tiny", prompt=list(range(1, 40)), max_tokens=5, stream=True))
        assert sum(len(c.choices[0].token_ids) for c in chunks) == 5 and chunks[-1].choices[0].finish_reason == "length"
        import urllib.request

        info = json.loads(urllib.request.urlopen(url + "/info", timeout=30).read())
        assert info["config"]["follower_wait_bound"] == 7 and info["config"]["num_pages"] == 64
        # A long stream is still running when SIGINT arrives: the process must stop promptly anyway.
        long = client.completions.create(model="tiny", prompt=[3] * 20, max_tokens=900, stream=True)
        next(iter(long))
    finally:
        code, err = stop(proc)
    assert code == 0, err
    assert "Traceback" not in err
    header, *log = [json.loads(x) for x in events.read_text().splitlines()]
    assert header["policy"]["coordination"] == "single-flight"
    actions = [e["action"] for e in log]
    # 39 tokens: 3 prefill units in one chunk; shareable pages (39-1)//16 = 2 published; release after prefill.
    assert actions[:10] == ["arrive", "admit", "prefill", "publish", "release"] + ["decode"] * 4 + ["finish"]
    assert [p["index"] for p in log[3]["pages"]] == [0, 1] and log[4]["reason"] == "after-prefill"
    assert actions[-1] == "abort"  # the long stream, ended by the shutdown
    check = subprocess.run([sys.executable, "-m", "flightcheck.checks.cli.app", "validate", str(events)],
                           capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr  # the log, offline, agrees with the spec too


def test_serve_takes_prefix_coordination_and_records_it_in_the_log_header_and_an_api_key(tmp_path):
    import urllib.error
    import urllib.request

    events = tmp_path / "events.jsonl"
    proc, url = start(["--model", "tiny", "--port", "0", "--num-pages", "64", "--events", str(events),
                       "--coordination", "prefix", "--min-shared-pages", "2", "--api-key", "sk-cli"])
    try:
        info = json.loads(urllib.request.urlopen(url + "/info", timeout=30).read())  # open without the key
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(url + "/v1/models", timeout=30)
        assert refused.value.code == 401
        keyed = urllib.request.Request(url + "/v1/models", headers={"Authorization": "Bearer sk-cli"})
        assert json.loads(urllib.request.urlopen(keyed, timeout=30).read())["data"][0]["id"] == "tiny"
    finally:
        code, err = stop(proc)
    assert code == 0, err
    assert (info["config"]["coordination"], info["config"]["min_shared_pages"]) == ("prefix", 2)
    header = json.loads(events.read_text().splitlines()[0])
    assert (header["policy"]["coordination"], header["policy"]["min_shared_pages"]) == ("prefix", 2)


def test_every_engine_config_field_is_a_serve_option():
    proc = subprocess.run(CLI + ["--help"], capture_output=True, text=True, timeout=60,
                          env={"COLUMNS": "200", "PATH": ""})
    assert proc.returncode == 0
    for field in dataclasses.fields(EngineConfig):
        assert f"--{field.name.replace('_', '-')}" in proc.stdout, field.name


@pytest.mark.parametrize("args, message", [
    (["--release", "later"], "config.release must be one of"),
    (["--max-running", "0"], "config.max_running must be an integer >= 1"),
    (["--min-shared-pages", "0"], "config.min_shared_pages must be an integer >= 1, got 0"),
    (["--coordination", "prefix", "--no-prefix-caching"], "config.coordination 'prefix' needs prefix_caching=True"),
    (["--coordination", "radix"], "config.coordination must be one of none, single-flight, prefix"),
    (["--model", "gpt5"], "--model must be smollm2 or tiny"),
    (["--port", "70000"], "--port must be in 0..65535"),
    (["--max-body-bytes", "0"], "max_body_bytes must be an integer >= 1"),
    (["--header-timeout", "0"], "header_timeout_s must be a number of seconds > 0"),
])
def test_bad_arguments_exit_2_naming_the_option(args, message):
    proc = subprocess.run(CLI + ["--model", "tiny", *args], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert message in re.sub(r"\s*│\s*|\s+", " ", proc.stderr)
    assert "Traceback" not in proc.stderr


def test_a_corrupt_model_file_is_one_line_and_exit_2(tmp_path):
    bad = tmp_path / "SmolLM2.gguf"
    bad.write_bytes(b"GGUF" + b"\0" * 1000)
    import os

    proc = subprocess.run(CLI + ["--port", "0"], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "FLIGHTCHECK_MODEL": str(bad)})
    assert proc.returncode == 2, proc.stderr
    assert "Traceback" not in proc.stderr and "truncated or wrong file" in proc.stderr
    assert proc.stderr.startswith("error: model file") and proc.stderr.count("error:") == 1


ULIMIT_KIB = 3_000_000  # ulimit -v: room for Python and MLX (about 0.3 GiB mapped at import), not for a big pool


def _under_ulimit(args):
    command = " ".join(["ulimit -v", str(ULIMIT_KIB), ";", "exec", *CLI, *args])
    return ["bash", "-c", command]


def test_a_pool_past_the_address_space_ulimit_leaves_is_exit_2_not_a_segfault():
    from flightcheck.impl.config import KV_MEMORY_FRACTION, MIN_KV_PAGE_BYTES, machine_memory_bytes

    pages = min(1_500_000, int(machine_memory_bytes() * KV_MEMORY_FRACTION) // MIN_KV_PAGE_BYTES)
    assert pages * MIN_KV_PAGE_BYTES > ULIMIT_KIB * 1024  # the premise: the machine's memory allows what the ulimit cannot
    proc = subprocess.run(_under_ulimit(["--model", "tiny", "--port", "0", "--num-pages", str(pages)]),
                          capture_output=True, text=True, timeout=120)
    # Before: rc 139, MLX's allocation failing under the limit with no message.
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    line = re.sub(r"\s+", " ", proc.stderr).strip()
    assert re.fullmatch(rf"error: config.num_pages is {pages}: at 8192 bytes of KV cache per page \(the smallest "
                        r"model's\) that is [\d.]+ GiB, more than 50% of the [\d.]+ GiB of address space this process "
                        r"may still map \(ulimit -v\): the limit is \d+ pages", line), proc.stderr


def test_under_the_same_ulimit_a_pool_that_fits_is_served():
    proc = subprocess.Popen(_under_ulimit(["--model", "tiny", "--port", "0", "--num-pages", "4096"]),
                            stderr=subprocess.PIPE, text=True)
    line = proc.stderr.readline()
    match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
    try:
        assert match, line + (proc.stderr.read() if proc.poll() is not None else "")
        from openai import OpenAI

        client = OpenAI(base_url=f"http://127.0.0.1:{match.group(1)}/v1", api_key="none", max_retries=0, timeout=60)
        assert len(client.completions.create(model="tiny", prompt=[1, 2, 3], max_tokens=4).choices[0].token_ids) == 4
    finally:
        code, err = stop(proc)
    assert code == 0, err


def test_only_the_moment_before_allocating_counts_the_address_space(monkeypatch):
    """The space left is that moment's: a config, or an engine over pools that exist, is not held to it."""
    from flightcheck.impl import config as config_module
    from flightcheck.impl.engine import Engine
    from flightcheck.impl.errors import InvalidConfigError

    monkeypatch.setattr(config_module, "address_space_left", lambda: 1 << 20)  # 1 MiB left: 64 tiny pages
    config = EngineConfig(num_pages=65)
    with pytest.raises(InvalidConfigError, match=r"num_pages is 65: .* of address space .* the limit is 64 pages"):
        Engine.tiny(config)
    Engine.tiny(EngineConfig(num_pages=64)).close()


@pytest.mark.parametrize("env, args, message", [
    ({"FLIGHTCHECK_API_KEY": ""}, [], "error: FLIGHTCHECK_API_KEY is set but empty: unset it to serve without a key, "
                                      "or set it to the key"),
    ({}, ["--api-key", ""], "error: --api-key must not be empty (leave it out to serve without a key)"),
    ({"FLIGHTCHECK_API_KEY": ""}, ["--api-key", ""], "error: --api-key must not be empty"),  # the option is read first
], ids=["environment", "option", "both"])
def test_an_empty_api_key_from_either_source_is_exit_2_naming_it(env, args, message):
    import os

    # Before: FLIGHTCHECK_API_KEY= served with no key while --api-key '' exited 2.
    proc = subprocess.run(CLI + ["--model", "tiny", "--port", "0", *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, **env})
    assert proc.returncode == 2, (proc.returncode, proc.stderr)
    assert re.sub(r"\s+", " ", proc.stderr).strip().startswith(message) and proc.stderr.count("error:") == 1, proc.stderr
    assert "Traceback" not in proc.stderr

"""``flightcheck serve`` as a real process, driven by a real HTTP client; bad arguments exit 2."""

import http.client
import json
import re
import signal
import subprocess
import sys
import time

import pytest

CLI = [sys.executable, "-m", "flightcheck.checks.cli.app", "serve"]


def test_serve_streams_tokens_and_writes_the_event_log(tmp_path):
    events = tmp_path / "events.jsonl"
    proc = subprocess.Popen(CLI + ["--model", "tiny", "--port", "0", "--num-pages", "64", "--events", str(events)],
                            stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stderr.readline()
        match = re.search(r"http://127\.0\.0\.1:(\d+)", line)
        assert match, line
        conn = http.client.HTTPConnection("127.0.0.1", int(match.group(1)), timeout=60)
        conn.request("POST", "/generate", json.dumps({"token_ids": list(range(1, 40)), "max_tokens": 5}))
        lines = [json.loads(x) for x in conn.getresponse().read().decode().splitlines()]
        assert len([x for x in lines if "token" in x]) == 5 and lines[-1]["finish_reason"] == "length"
    finally:
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    header, *log = [json.loads(x) for x in events.read_text().splitlines()]
    assert header["policy"]["coordination"] == "single-flight"
    actions = [e["action"] for e in log]
    # 39 tokens: 3 prefill units in one chunk; shareable pages (39-1)//16 = 2 published; release after prefill.
    assert actions == ["arrive", "admit", "prefill", "publish", "release"] + ["decode"] * 4 + ["finish"]
    assert [p["index"] for p in log[3]["pages"]] == [0, 1] and log[4]["reason"] == "after-prefill"


@pytest.mark.parametrize("args, message", [
    (["--release", "later"], "config.release must be one of"),
    (["--model", "gpt5"], "--model must be smollm2 or tiny"),
    (["--port", "70000"], "--port must be in 0..65535"),
])
def test_bad_arguments_exit_2_naming_the_option(args, message):
    proc = subprocess.run(CLI + args, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert message in re.sub(r"\s*│\s*|\s+", " ", proc.stderr)

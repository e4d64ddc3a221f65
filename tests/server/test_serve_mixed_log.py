"""A log written by ``flightcheck serve`` under concurrent clients validates: prefix coordination, a small
pool, prompts that share a document, identical ones, prompts shorter than a page, and streams a client
drops halfway (the server aborts them)."""

import json
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

from test_serve_cli import start, stop

from flightcheck.checks.conform.prompts import class_tokens


def test_the_log_of_concurrent_mixed_clients_under_prefix_coordination_validates(tmp_path):
    from openai import OpenAI

    events = tmp_path / "events.jsonl"
    proc, url = start(["--model", "tiny", "--port", "0", "--num-pages", "24", "--events", str(events),
                       "--coordination", "prefix", "--min-shared-pages", "1", "--max-running", "3",
                       "--prefill-chunk-pages", "1", "--follower-wait-bound", "40"])
    doc = class_tokens(0, 48, 256)
    prompts = ([doc + class_tokens(q + 1, 21, 256) for q in range(3)] * 2   # three questions, each twice
               + [doc[:20], class_tokens(9, 7, 256), class_tokens(9, 7, 256)])  # a shorter document, short prompts

    def ask(k: int) -> str:
        client = OpenAI(base_url=url + "/v1", api_key="none", max_retries=0, timeout=120)
        stream = client.completions.create(model="tiny", prompt=prompts[k % len(prompts)], max_tokens=4, stream=True)
        if k % 4 == 3:  # this client goes away after its first chunk: the server aborts the request
            next(iter(stream))
            stream.close()
            return "dropped"
        return "".join(c.choices[0].finish_reason or "" for c in stream)

    try:
        with ThreadPoolExecutor(6) as pool:
            endings = list(pool.map(ask, range(12)))
    finally:
        code, err = stop(proc)
    assert code == 0 and "Traceback" not in err, err
    assert endings.count("dropped") == 3 and all(e in ("length", "dropped") for e in endings)
    header, *log = [json.loads(x) for x in events.read_text().splitlines()]
    assert header["policy"]["coordination"] == "prefix" and header["policy"]["min_shared_pages"] == 1
    assert sum(e["action"] == "arrive" for e in log) == 12
    check = subprocess.run([sys.executable, "-m", "flightcheck.checks.cli.app", "validate", str(events)],
                           capture_output=True, text=True, timeout=300)
    assert check.returncode == 0, check.stdout + check.stderr

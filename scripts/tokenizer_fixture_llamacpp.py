"""Produces tests/fixtures/tokenizer_ids.json with llama.cpp's own tokenizer (an independent reference).

Not part of the project's dependencies or its test run: a one-off, documented route to the ids that
tests/test_model_tokenizer.py compares flightcheck's `tokenizers`-based tokenizer against.

How it was run (2026-11-29, Debian 12, Python 3.11):
  1. pip download llama-cpp-cffi --no-deps --only-binary=:all: -d /tmp/lcc   (0.4.42, a wheel that
     bundles a compiled llama.cpp; llama-cpp-python has no wheel on PyPI)
  2. unzip its llama/_llama_cpp_cpu*.so into /tmp/lcc/x/llama; python -m venv /tmp/tfenv; pip install cffi
  3. the .so references __cxa_call_terminate (GCC 14's libstdc++), which Debian 12 lacks, so a one-line
     shim is preloaded:  extern "C" void __cxa_call_terminate(void*) noexcept { std::terminate(); }
     g++ -shared -fPIC -o /tmp/lcc/x/libshim.so shim.cc
  4. LD_PRELOAD=/tmp/lcc/x/libshim.so /tmp/tfenv/bin/python scripts/tokenizer_fixture_llamacpp.py \
        /tmp/lcc/x/llama ~/.cache/flightcheck/models/SmolLM2-135M-Instruct.Q4_1.gguf
llama.cpp loads only the vocabulary (vocab_only) and tokenizes with its "smollm" pre-tokenizer
(split every digit, then the GPT-2 regex), special tokens parsed, no BOS added.
"""

import json
import sys
from pathlib import Path

STRINGS = [
    "Hello world",
    "The year 2026 had 365 days; 3.14159 is pi.",
    "Total:   42 items, x  12 and  9",  # runs of spaces before digits: where the per-digit split matters
    "  leading spaces,   runs of   spaces and a tab\there",
    "trailing newline\n\nand blank lines\n",
    "Punctuation!? (parens) [brackets] {braces} 'quotes' \"double\" -- dashes... don't we'll I'm",
    "Non-ASCII: café, naïve, Zürich, 東京, Москва, emoji 🙂👍",
    "<|im_start|>user\nWhat is 12+30?<|im_end|>\n<|im_start|>assistant\n",
    "<|endoftext|>after end",
    "def f(x):\n    return x**2  # code\n",
    "",
]


def main(lib_dir: str, model_path: str) -> None:
    sys.path.insert(0, lib_dir)
    import _llama_cpp_cpu as native  # type: ignore[import-not-found]

    lib, ffi = native.lib, native.ffi
    lib.llama_backend_init()
    params = lib.llama_model_default_params()
    params.vocab_only = True
    model = lib.llama_model_load_from_file(model_path.encode(), params)
    vocab = lib.llama_model_get_vocab(model)
    cases = []
    for text in STRINGS:
        raw = text.encode("utf-8")
        out = ffi.new("llama_token[]", 4096)
        n = lib.llama_tokenize(vocab, raw, len(raw), out, 4096, False, True)
        assert n >= 0, f"llama_tokenize failed for {text!r}: {n}"
        cases.append({"text": text, "ids": [out[i] for i in range(n)]})
    fixture = {
        "source": "llama.cpp (llama-cpp-cffi 0.4.42 wheel, vocab_only, parse_special=True, add_special=False)",
        "model_sha256": "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        "eos_id": lib.llama_vocab_eos(vocab),
        "bos_id": lib.llama_vocab_bos(vocab),
        "produced_by": "scripts/tokenizer_fixture_llamacpp.py (see its docstring)",
        "cases": cases,
    }
    target = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "tokenizer_ids.json"
    # One case a line, so a diff of the fixture stays readable.
    head = {k: v for k, v in fixture.items() if k != "cases"}
    lines = [json.dumps(c, ensure_ascii=False) for c in cases]
    body = json.dumps(head, ensure_ascii=False, indent=1)[:-2] + ',\n "cases": [\n  ' + ",\n  ".join(lines) + "\n ]\n}\n"
    json.loads(body)
    target.write_text(body)
    print(f"wrote {len(cases)} cases to {target}")


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])

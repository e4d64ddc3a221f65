"""The engines conformance runs: the tiny random-weight model or the real SmolLM2, loaded once per process.

For example::

    >>> from flightcheck.impl.config import EngineConfig
    >>> engine = build_engine("tiny", EngineConfig(num_pages=8))
    >>> engine.runner.num_pages, load_model("tiny")[2]
    (8, 256)
"""

from __future__ import annotations

from typing import Any, Sequence

_MODELS: dict[str, Any] = {}


def load_model(name: str) -> tuple[Any, list[int], int]:
    """``(model, eos_token_ids, vocab)`` for "tiny" or "smollm2", loaded once per process."""
    if name not in _MODELS:
        if name == "tiny":
            from flightcheck.impl.tiny import tiny_model
            _MODELS[name] = (tiny_model(0), [], 256)
        elif name == "smollm2":
            from flightcheck.impl.gguf import load_smollm2
            model, tokenizer, _info = load_smollm2()
            _MODELS[name] = (model, [tokenizer.eos_id], 49152)
        else:
            raise ValueError(f"unknown model {name!r}; expected tiny or smollm2")
    return _MODELS[name]


def build_engine(model_name: str, config: Any, extra_eos: Sequence[int] = ()) -> Any:
    """A fresh engine over a cached model with its own KV pools; ``extra_eos`` are end-of-sequence
    tokens beside the model's own."""
    from flightcheck.impl.engine import Engine
    from flightcheck.impl.runner import ModelRunner

    model, eos, _vocab = load_model(model_name)
    return Engine(ModelRunner(model, num_pages=config.num_pages), None, config,
                  eos_token_ids=[*eos, *extra_eos])


_FIRST: dict[tuple[str, tuple[int, ...]], int] = {}


def first_token(model_name: str, tokens: Sequence[int]) -> int:
    """The token the model emits first, greedily, after ``tokens`` (from an engine of its own,
    so that the run it is asked for starts from nothing); remembered per process."""
    key = (model_name, tuple(tokens))
    if key not in _FIRST:
        from flightcheck.impl.config import EngineConfig
        from flightcheck.impl.pages import PAGE_SIZE

        engine = build_engine(model_name, EngineConfig(num_pages=-(-len(tokens) // PAGE_SIZE) + 1))
        rid = engine.add_request(list(tokens), {"temperature": 0.0, "max_tokens": 1})
        out: list[int] = []
        while not out:
            out = engine.step().get(rid, [])
        _FIRST[key] = out[0]
    return _FIRST[key]

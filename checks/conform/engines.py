"""The engines conformance runs: the tiny random-weight model or the real SmolLM2, loaded once per process.

For example::

    >>> from flightcheck.impl.config import EngineConfig
    >>> engine = build_engine("tiny", EngineConfig(num_pages=8))
    >>> engine.runner.num_pages, load_model("tiny")[2]
    (8, 256)
"""

from __future__ import annotations

from typing import Any

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


def build_engine(model_name: str, config: Any) -> Any:
    """A fresh engine over a cached model with its own KV pools."""
    from flightcheck.impl.engine import Engine
    from flightcheck.impl.runner import ModelRunner

    model, eos, _vocab = load_model(model_name)
    return Engine(ModelRunner(model, num_pages=config.num_pages), None, config, eos_token_ids=eos)

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
_TEXT: dict[str, Any] = {}  # the tokenizer of each model loaded


def load_model(name: str) -> tuple[Any, list[int], int]:
    """``(model, eos_token_ids, vocab)`` for "tiny" or "smollm2", loaded once per process."""
    if name not in _MODELS:
        if name == "tiny":
            from flightcheck.impl.tiny import tiny_model
            _MODELS[name] = (tiny_model(0), [], 256)
            _TEXT[name] = TinyText()
        elif name == "smollm2":
            from flightcheck.impl.gguf import load_smollm2
            model, tokenizer, _info = load_smollm2()
            _MODELS[name] = (model, [tokenizer.eos_id], 49152)
            _TEXT[name] = tokenizer
        else:
            raise ValueError(f"unknown model {name!r}; expected tiny or smollm2")
    return _MODELS[name]


class TinyText:
    """Text for the tiny model's token ids, one character each (``chr(0x4E00 + id)``), so that its
    runs can use stop strings: the engine needs a tokenizer to look for them in the output."""

    BASE = 0x4E00

    def encode(self, text: str) -> list[int]:
        """Each character back to its token id."""
        return [ord(c) - self.BASE for c in text]

    def decode(self, token_ids: Sequence[int]) -> str:
        """One character per token id."""
        return "".join(chr(self.BASE + int(t)) for t in token_ids)


def text_codec(model_name: str) -> Any:
    """The tokenizer a conformance engine over ``model_name`` decodes its outputs with."""
    load_model(model_name)
    return _TEXT[model_name]


def build_engine(model_name: str, config: Any, extra_eos: Sequence[int] = ()) -> Any:
    """A fresh engine over a cached model with its own KV pools and a tokenizer (so that requests may
    carry stop strings); ``extra_eos`` are end-of-sequence tokens beside the model's own."""
    from flightcheck.impl.engine import Engine
    from flightcheck.impl.runner import ModelRunner

    model, eos, _vocab = load_model(model_name)
    return Engine(ModelRunner(model, num_pages=config.num_pages), text_codec(model_name), config,
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

"""The model's tokenizer, built with the ``tokenizers`` library from the GGUF metadata.

SmolLM2's GGUF says ``tokenizer.ggml.model = "gpt2"`` (byte-level BPE) with ``tokenizer.ggml.pre =
"smollm"``. llama.cpp's "smollm" pre-tokenizer splits every digit on its own and then applies the
GPT-2 regex, which is ``tokenizers``' ``Digits(individual_digits=True)`` followed by
``ByteLevel(use_regex=True)``. Tokens the file marks as control (type 3: ``<|im_start|>``,
``<|im_end|>``, ``<|endoftext|>`` ...) are special: matched whole in the text, never split, in a raw
prompt (:meth:`GGUFTokenizer.encode`); in a chat (:meth:`GGUFTokenizer.encode_messages`) only the
template's own markers are, and what a message says is plain text, so a user cannot forge a turn.

Text is encoded through ``encode_batch``, which releases the GIL while it works (``encode`` holds it):
a megabyte of prompt tokenizing on a worker thread would otherwise stall every other request's handler.

Checked against llama.cpp's own tokenizer on a fixture (tests/fixtures/tokenizer_ids.json).
"""

from __future__ import annotations

import copy
import re
from dataclasses import dataclass
from typing import Any

from tokenizers import AddedToken, Tokenizer, decoders, models, pre_tokenizers

CONTROL_TOKEN_TYPE = 3  # llama.cpp's LLAMA_TOKEN_TYPE_CONTROL

# Pre-tokenizers by the name in ``tokenizer.ggml.pre``; each mirrors llama.cpp's regexes for that name.
_PRE_TOKENIZERS = {
    "smollm": lambda: pre_tokenizers.Sequence([pre_tokenizers.Digits(individual_digits=True),
                                               pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)]),
    "gpt2": lambda: pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
    "default": lambda: pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True),
}

_CHATML_SYSTEM = re.compile(r"<\|im_start\|>system\n(.*?)<\|im_end\|>", re.S)
_IM_START, _IM_END = "<|im_start|>", "<|im_end|>"


class TokenizerError(ValueError):
    """The GGUF metadata describes a tokenizer this module cannot build."""


@dataclass(frozen=True)
class ChatMessage:
    role: str
    content: str


class GGUFTokenizer:
    """Encode/decode text for the loaded model, plus its ChatML chat template.

    For example::

        tok = GGUFTokenizer.from_metadata(meta)
        ids = tok.encode("Hello world")           # [19556, 905]
        tok.decode(ids)                           # 'Hello world'
        tok.encode_chat("Hi")                     # system + user turn + '<|im_start|>assistant\\n'
    """

    def __init__(self, tokenizer: Tokenizer, eos_id: int, bos_id: int | None, chat_template: str | None):
        self.tokenizer = tokenizer
        # Why a copy: ``encode_special_tokens`` is the tokenizer's state, not an argument, and worker
        # threads encode concurrently; this copy always reads special-token text as plain characters.
        self.plain_tokenizer = copy.deepcopy(tokenizer)
        self.plain_tokenizer.encode_special_tokens = True
        self.eos_id = eos_id
        self.bos_id = bos_id
        self.chat_template = chat_template
        self.vocab_size = tokenizer.get_vocab_size(with_added_tokens=True)
        # Why: the most characters one token can stand for bounds how long a text that fits a context can
        # be, so a server refuses a prompt far too long before spending seconds tokenizing it. A byte-level
        # BPE token's vocabulary string has a character per byte, and a byte is at most one character.
        self.max_token_chars = max(len(t) for t in tokenizer.get_vocab(with_added_tokens=True))

    @classmethod
    def from_metadata(cls, meta: dict[str, Any]) -> "GGUFTokenizer":
        kind = meta.get("tokenizer.ggml.model")
        if kind != "gpt2":
            raise TokenizerError(f"tokenizer.ggml.model is {kind!r}; only byte-level BPE ('gpt2') is supported")
        pre = meta.get("tokenizer.ggml.pre", "default")
        if pre not in _PRE_TOKENIZERS:
            raise TokenizerError(f"tokenizer.ggml.pre {pre!r} is not supported (known: {sorted(_PRE_TOKENIZERS)})")
        tokens: list[str] = list(meta["tokenizer.ggml.tokens"])
        merges = [tuple(m.split(" ", 1)) for m in meta["tokenizer.ggml.merges"]]
        vocab = {token: i for i, token in enumerate(tokens)}
        if len(vocab) != len(tokens):
            raise TokenizerError("tokenizer.ggml.tokens has duplicate entries")
        tokenizer = Tokenizer(models.BPE(vocab=vocab, merges=merges, fuse_unk=False, byte_fallback=False))
        tokenizer.pre_tokenizer = _PRE_TOKENIZERS[pre]()
        tokenizer.decoder = decoders.ByteLevel()
        raw_types = meta.get("tokenizer.ggml.token_type", [])
        # Why tolist: the metadata's arrays are MLX arrays, and reading one element at a time took 6 s.
        types = [int(t) for t in (raw_types.tolist() if hasattr(raw_types, "tolist") else raw_types)]
        control = [AddedToken(tokens[i], special=True, normalized=False)
                   for i, t in enumerate(types) if t == CONTROL_TOKEN_TYPE]
        tokenizer.add_special_tokens(control)
        eos = int(_item(meta, "tokenizer.ggml.eos_token_id"))
        bos = _item(meta, "tokenizer.ggml.bos_token_id")
        return cls(tokenizer, eos, None if bos is None else int(bos), meta.get("tokenizer.chat_template"))

    def encode(self, text: str) -> list[int]:
        """Token ids of ``text``; special markers like ``<|im_start|>`` in it become their single ids."""
        return self.tokenizer.encode_batch([_encodable(text)], add_special_tokens=False)[0].ids

    def encode_plain(self, text: str) -> list[int]:
        """Token ids of ``text`` read as characters only: ``<|im_end|>`` in it is seven tokens, not one."""
        return self.plain_tokenizer.encode_batch([_encodable(text)], add_special_tokens=False)[0].ids

    def decode(self, ids: list[int], skip_special: bool = False) -> str:
        return self.tokenizer.decode(ids, skip_special_tokens=skip_special)

    def token_text(self, token_id: int) -> str:
        return self.decode([token_id])

    def apply_chat_template(self, messages: list[ChatMessage], add_generation_prompt: bool = True) -> str:
        """Renders the metadata's ChatML template (a default system turn first when none is given)."""
        return "".join(self._chat_pieces(messages, add_generation_prompt))

    def encode_messages(self, messages: list[ChatMessage], add_generation_prompt: bool = True) -> list[int]:
        """Token ids of the rendered chat in which only the template's markers are special tokens.

        Why piecewise: encoding the rendered text would turn ``<|im_end|>`` typed in a message into the
        control token, ending the turn early (a forged system or assistant turn). The text between two
        markers is encoded as one piece, just as a whole-text encode splits at special tokens first, so
        a chat whose messages hold no marker text gets exactly the ids of ``encode(apply_chat_template())``.
        """
        pieces = self._chat_pieces(messages, add_generation_prompt)
        markers = {marker: self.tokenizer.token_to_id(marker) for marker in (_IM_START, _IM_END)}
        if None in markers.values():
            raise TokenizerError(f"the vocabulary lacks ChatML's markers {_IM_START} and {_IM_END}")
        texts = [_encodable(piece) for i, piece in enumerate(pieces) if i % 2]
        encoded = iter(self.plain_tokenizer.encode_batch(texts, add_special_tokens=False))
        ids: list[int] = []
        for i, piece in enumerate(pieces):
            ids += next(encoded).ids if i % 2 else [markers[piece]]
        return ids

    def _chat_pieces(self, messages: list[ChatMessage], add_generation_prompt: bool) -> list[str]:
        """The rendered chat as alternating pieces: marker, text, marker, text ... (even: a marker)."""
        if not self.chat_template or _IM_START not in self.chat_template:
            raise TokenizerError("the model's chat template is not ChatML; --chat is not supported for it")
        found = _CHATML_SYSTEM.search(self.chat_template)
        turns = [(m.role, m.content) for m in messages]
        if found and (not messages or messages[0].role != "system"):
            turns.insert(0, ("system", found.group(1)))
        pieces = []
        for role, content in turns:
            pieces += [_IM_START, f"{role}\n{content}", _IM_END, "\n"]
        if add_generation_prompt:
            pieces += [_IM_START, "assistant\n"]
        return pieces

    def encode_chat(self, prompt: str, system: str | None = None) -> list[int]:
        messages = ([ChatMessage("system", system)] if system else []) + [ChatMessage("user", prompt)]
        return self.encode_messages(messages)

    def stream_decoder(self) -> "StreamDecoder":
        return StreamDecoder(self)


class StreamDecoder:
    """Turns a stream of token ids into text pieces, holding back an incomplete UTF-8 character
    (a byte-level token can end in the middle of one, e.g. an emoji split over two tokens)."""

    def __init__(self, tokenizer: GGUFTokenizer):
        self.tokenizer = tokenizer
        self.ids: list[int] = []
        self.emitted = 0

    def push(self, token_id: int) -> str:
        self.ids.append(token_id)
        text = self.tokenizer.decode(self.ids)
        if text.endswith("\ufffd"):
            return ""
        piece, self.emitted = text[self.emitted:], len(text)
        return piece


def _encodable(text: str) -> str:
    """``text``, or a ``UnicodeEncodeError`` saying where it is not valid Unicode (a lone surrogate);
    ``tokenizers`` would raise a bare ``TypeError`` ("TextInputSequence must be str") instead."""
    if not isinstance(text, str):
        raise TypeError(f"text to tokenize must be a str, got {type(text).__name__}")
    if not text.isascii():
        text.encode("utf-8")
    return text


def _item(meta: dict[str, Any], key: str) -> Any:
    value = meta.get(key)
    return value.item() if hasattr(value, "item") else value

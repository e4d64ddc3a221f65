"""A Hugging Face style model folder (config.json, model.safetensors, tokenizer.json, tokenizer_config.json)
written from flightcheck's SmolLM2 GGUF, for mlx-lm's server, the outside probe's second peer
(BENCHMARKS.md, "The outside probe against other engines"); the hub is not reachable from here.

    python scripts/gguf_to_hf.py [GGUF] OUT_DIR        # GGUF: default, the verified cached file

It reuses flightcheck's own reading of the file (``impl/gguf.py``: the tensors, their Hugging Face names,
the model's arguments; ``impl/tokenizer.py``: the BPE tokenizer built from the GGUF's metadata), so the
peer serves the same weights. Weights are dequantized to float32. Q and K stay in GGUF's permuted layout,
so the config says ``rope_traditional: true`` (flightcheck's own model uses traditional RoPE for the same
reason).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import mlx.core as mx

from flightcheck.impl.gguf import GROUP_SIZE, _bits, _rename, args_from_metadata, read_gguf
from flightcheck.impl.model_file import locate
from flightcheck.impl.tokenizer import GGUFTokenizer


def _int(value) -> int:
    return int(value.item()) if hasattr(value, "item") else int(value)


def convert(src: Path, out: Path) -> None:
    """Write the folder ``out`` from the GGUF ``src``."""
    out.mkdir(parents=True, exist_ok=True)
    weights, meta = read_gguf(src)
    renamed = {_rename(k): v for k, v in weights.items()}
    for prefix in sorted({k.rsplit(".", 1)[0] for k in renamed if k.endswith(".scales")}):
        bits = _bits(renamed, prefix)
        scales = renamed.pop(prefix + ".scales").astype(mx.float32)
        biases = renamed.pop(prefix + ".biases").astype(mx.float32)
        renamed[prefix + ".weight"] = mx.dequantize(renamed.pop(prefix + ".weight"), scales, biases,
                                                    group_size=GROUP_SIZE, bits=bits)
    renamed = {k: v.astype(mx.float32) for k, v in renamed.items()}
    mx.eval(renamed)
    mx.save_safetensors(str(out / "model.safetensors"), renamed, metadata={"format": "mlx"})
    a = args_from_metadata(meta)
    tok = GGUFTokenizer.from_metadata(meta)
    config = {
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": a.hidden_size,
        "num_hidden_layers": a.num_hidden_layers, "intermediate_size": a.intermediate_size,
        "num_attention_heads": a.num_attention_heads, "num_key_value_heads": a.num_key_value_heads,
        "vocab_size": a.vocab_size, "rms_norm_eps": a.rms_norm_eps, "rope_theta": a.rope_theta,
        "max_position_embeddings": a.max_position_embeddings, "tie_word_embeddings": "lm_head.weight" not in renamed,
        "rope_traditional": True, "attention_bias": False, "mlp_bias": False, "torch_dtype": "float32",
        "bos_token_id": _int(meta["tokenizer.ggml.bos_token_id"]), "eos_token_id": tok.eos_id,
    }
    (out / "config.json").write_text(json.dumps(config, indent=2))
    tok.tokenizer.save(str(out / "tokenizer.json"))
    name = tok.tokenizer.id_to_token
    settings = {"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": a.max_position_embeddings,
                "bos_token": name(tok.bos_id) if tok.bos_id is not None else None, "eos_token": name(tok.eos_id),
                "unk_token": None, "pad_token": name(tok.eos_id), "add_bos_token": False,
                "clean_up_tokenization_spaces": False}
    if tok.chat_template:
        settings["chat_template"] = tok.chat_template
    (out / "tokenizer_config.json").write_text(json.dumps(settings, indent=2))
    (out / "generation_config.json").write_text(json.dumps({"bos_token_id": config["bos_token_id"],
                                                            "eos_token_id": tok.eos_id}))


if __name__ == "__main__":
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__.split("\n\n")[1])
    source = Path(sys.argv[1]) if len(sys.argv) == 3 else locate()
    convert(source, Path(sys.argv[-1]))
    print(f"wrote {sys.argv[-1]} from {source}")

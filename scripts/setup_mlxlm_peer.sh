#!/usr/bin/env bash
# The outside probe's second peer (BENCHMARKS.md, "The outside probe against other engines"), and
# nothing else: mlx-lm's OpenAI-compatible server in its own virtual environment, and a Hugging Face
# style folder of flightcheck's SmolLM2 written from the cached GGUF (scripts/gguf_to_hf.py).
#
#   bash scripts/setup_mlxlm_peer.sh [VENV] [MODEL_DIR]     # default: .venv-mlxlm, .peer-models/smollm2-hf
#
# Then (OpenBLAS preloaded as flightcheck's own engine loads it, impl/blas.py; HF_HUB_CACHE must name an
# existing folder, or GET /v1/models answers 200 with an empty body):
#   LD_PRELOAD=/usr/lib/x86_64-linux-gnu/libopenblas.so.0 HF_HUB_CACHE=$(mktemp -d) HF_HUB_OFFLINE=1 \
#       VENV/bin/python -m mlx_lm.server --model MODEL_DIR --port 8012
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$here/.venv-mlxlm}"
models="${2:-$here/.peer-models/smollm2-hf}"
python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
"$venv/bin/pip" install -q 'mlx[cpu]' mlx-lm
"$venv/bin/python" -c "import mlx_lm; print('mlx-lm', mlx_lm.__version__)"
python "$here/scripts/gguf_to_hf.py" "$models"   # with the project's own environment (flightcheck installed)
echo "peer server installed in $venv; model folder $models"

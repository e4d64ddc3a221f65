#!/usr/bin/env bash
# The peer server of the soak benchmark (scripts/bench_soak.py), and nothing else:
# llama-cpp-python's OpenAI-compatible server, built from source (cmake + gcc; 10-20
# minutes on 2 cores) into its own virtual environment, so that neither the project's
# environment nor scripts/setup.sh ever carries it.
#
#   bash scripts/setup_bench_peer.sh [VENV]      # default: .venv-peer beside the repository
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
venv="${1:-$here/.venv-peer}"
command -v cmake >/dev/null || { echo "cmake is needed (apt-get install cmake)" >&2; exit 2; }
command -v gcc >/dev/null || { echo "gcc is needed (apt-get install build-essential)" >&2; exit 2; }
python3 -m venv "$venv"
"$venv/bin/pip" install -q --upgrade pip
# A CPU build: no GPU backends; the server extra brings its FastAPI app.
CMAKE_ARGS="-DGGML_NATIVE=ON -DLLAMA_CURL=OFF" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
    "$venv/bin/pip" install -q 'llama-cpp-python[server]'
"$venv/bin/python" -c "import llama_cpp; print('llama-cpp-python', llama_cpp.__version__)"
echo "peer server installed in $venv: $venv/bin/python -m llama_cpp.server --model FILE.gguf"

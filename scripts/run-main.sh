#!/usr/bin/env bash
# The main job: installs dependencies, builds athanor, and trains the example model.
# (Until the Trainer exists, this is examples/train_synthetic.cpp: an MLP trained with autograd
# on synthetic data, printing its loss as it falls.)
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)" --target train_synthetic
exec ./build/examples/train_synthetic "$@"

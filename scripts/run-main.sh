#!/usr/bin/env bash
# The main job: installs dependencies, builds athanor, and runs `athanor fit` with its built-in
# config — W2's CNN trained on Fashion-MNIST (Debian's dataset-fashion-mnist) for 3 epochs with
# validation, checkpoints, metrics.csv and an HTML report under runs/, then tested on the 10k
# test images (it prints test_acc=...). Extra arguments go to `athanor fit`, e.g.
#   scripts/run-main.sh --trainer.max_epochs=1 --model.lr=3e-3
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release
cmake --build build -j"$(nproc)" --target athanor_app
exec ./build/apps/athanor fit "$@"

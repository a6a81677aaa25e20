#!/usr/bin/env bash
# Installs, with apt-get only, the Debian 12 packages athanor needs to build, test and run its
# main job. Idempotent: packages already present are skipped, so a second run is a no-op.
#
#   scripts/install-deps.sh            # build + test + main-job dependencies
#   scripts/install-deps.sh --bench    # also the side-by-side peers (Debian's python3-torch)
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config git
  clang clang-format clang-tidy libclang-rt-14-dev  # sanitizer/fuzzer runtimes, formatting
  libomp-dev             # OpenMP for clang builds (scripts/fuzz.sh)
  libdnnl-dev            # oneDNN: GEMM, convolution, pooling primitives
  libfmt-dev             # error messages and printing
  nlohmann-json3-dev     # golden-value files, checkpoint metadata, configs as JSON
  libsimdjson-dev        # safetensors headers (validated in one linear pass)
  zlib1g-dev             # gzip-compressed IDX files (MNIST)
  libyaml-cpp-dev        # run configs (athanor fit --config), hparams.yaml
  libcli11-dev           # the athanor command line
  libopenmpi-dev openmpi-bin  # the dist layer's collectives; mpirun for its tests
  iproute2               # `ip netns`: two machines in namespaces (dist.two_nodes_netns)
  libgtest-dev libgmock-dev
  libbenchmark-dev
  dataset-fashion-mnist  # the main job's data
  libonnx-dev libprotobuf-dev protobuf-compiler  # the onnx layer: ModelProto via protobuf
  libonnx-testdata       # ONNX's backend node tests (tests/onnx conformance runner)
)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(python3 python3-torch python3-numpy libopenblas0-pthread linux-perf)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then sudo="sudo"; fi
echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"

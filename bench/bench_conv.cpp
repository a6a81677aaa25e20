// The two convolutions of the W2 CNN (/work/shared/WORKLOADS.md) at batch 64, forward +
// backward per iteration, on 2 threads:
//   conv1: Conv2d(1, 32, 3, padding 1) on 64x1x28x28  (data input: no input gradient)
//   conv2: Conv2d(32, 64, 3, padding 1) on 64x32x14x14 (input, weight and bias gradients)
// bench/conv_torch.py times the same work in PyTorch; bench/run_conv_compare.sh runs both
// interleaved and prints athanor / torch.
//
//   ./build/bench/bench_conv --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "athanor/athanor.h"
#include "bench_host.h"

namespace {

// Normal(0, scale) values from a fixed seed (host-side, so the bench needs no RNG op).
ath::Tensor random(const ath::Shape& shape, float scale = 1.0f, unsigned seed = 0) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<std::size_t>(ath::numel(shape)));
  for (float& x : v) x = dist(rng);
  return ath::from_vector(v, shape);
}

struct ConvCase {
  int64_t in, out, hw;
  bool input_grad;
};

void conv_fwd_bwd(benchmark::State& state, ConvCase c) {
  ath::set_num_threads(2);
  const int64_t batch = 64;
  ath::Tensor x = random({batch, c.in, c.hw, c.hw}, 1, 1);
  ath::Tensor w = random({c.out, c.in, 3, 3}, 0.1f, 2).requires_grad_();
  ath::Tensor b = random({c.out}, 0.1f, 3).requires_grad_();
  ath::Tensor gy = random({batch, c.out, c.hw, c.hw}, 1, 4);
  std::vector<ath::Tensor> wrt{w, b};
  if (c.input_grad) {
    x.requires_grad_();
    wrt.push_back(x);
  }
  for (auto _ : state) {
    ath::Tensor y = ath::conv2d(x, w, b, {.padding = 1});
    std::vector<ath::Tensor> g = ath::grad({y}, wrt, {gy});
    benchmark::DoNotOptimize(g[0].data_ptr());
  }
}

}  // namespace

BENCHMARK_CAPTURE(conv_fwd_bwd, w2_conv1, ConvCase{1, 32, 28, false})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(conv_fwd_bwd, w2_conv2, ConvCase{32, 64, 14, true})
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

ATH_BENCHMARK_MAIN()

#include "athanor/core/thread_policy.h"
ATH_SHORT_OPENMP_SPIN();

// ctc_loss forward + backward per iteration, 2 threads, issue 18's shape: log_probs
// [T=100, N=32, C=30] (a log_softmax of normal logits, the leaf), targets [32, 30] of 30 labels
// each, every input 100 frames, mean reduction; the gradient of the loss w.r.t. log_probs.
// bench/ctc_torch.py times the same work in PyTorch; bench/run_ctc_compare.sh runs both
// interleaved and prints the speed-up (the issue asks >= 1.5x PyTorch 2.15).
//
//   ./build/bench/bench_ctc --benchmark_min_time=1
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "athanor/athanor.h"
#include "bench_host.h"

namespace {

constexpr int64_t kFrames = 100, kBatch = 32, kClasses = 30, kLabels = 30;

void ctc_fwd_bwd(benchmark::State& state) {
  ath::set_num_threads(ath::bench::bench_threads());
  std::mt19937 rng(0);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int64_t> label(1, kClasses - 1);
  std::vector<float> logits(static_cast<std::size_t>(kFrames * kBatch * kClasses));
  for (float& v : logits) v = normal(rng);
  std::vector<int64_t> targets(static_cast<std::size_t>(kBatch * kLabels));
  for (int64_t& v : targets) v = label(rng);
  ath::Tensor lp = ath::log_softmax(ath::from_vector(logits, {kFrames, kBatch, kClasses}), 2)
                       .detach()
                       .requires_grad_();
  ath::Tensor tg = ath::from_vector(targets, {kBatch, kLabels});
  ath::Tensor il = ath::full({kBatch}, kFrames), tl = ath::full({kBatch}, kLabels);
  for (auto _ : state) {
    ath::Tensor loss = ath::ctc_loss(lp, tg, il, tl);
    std::vector<ath::Tensor> g = ath::grad({loss}, {lp});
    benchmark::DoNotOptimize(g[0].data_ptr());
  }
  state.counters["seq/s"] = benchmark::Counter(static_cast<double>(kBatch),
                                               benchmark::Counter::kIsIterationInvariantRate);
}

}  // namespace

BENCHMARK(ctc_fwd_bwd)
    ->Name("ctc_fwd_bwd/t100_n32_c30_s30")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

ATH_BENCHMARK_MAIN()

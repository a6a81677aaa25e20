// The hand-vectorized kernels at each ISA level the host can run: the baseline x86-64 copy, the
// AVX2 copy and (on AVX-512 hosts) the AVX-512 copy, switched with ath::set_max_cpu_isa in one
// process, so each wide copy is measured next to its baseline in the same run. The shapes are
// the workloads' (W2's max-pool, W3's LSTM, W4's GELU and attention softmax, the losses and an
// Adam step on W1's 535,818 parameters).
//
//   ./build/bench/bench_isa --benchmark_repetitions=3 --benchmark_report_aggregates_only=true
//
// Each benchmark's argument is the level (0 baseline, 1 AVX2, 2 AVX-512), up to the host's. Compare
// a kernel's rows with each other, never with another host's.
#include <benchmark/benchmark.h>

#include <algorithm>
#include <functional>

#include "athanor/athanor.h"
#include "athanor/nn/rnn.h"
#include "athanor/optim/adam.h"
#include "bench_host.h"

namespace {

using namespace ath;

// Times fn() under the ISA cap state.range(0); fn returns a tensor so nothing is optimized away.
void at_isa(benchmark::State& state, const std::function<Tensor()>& fn) {
  const auto isa = static_cast<CpuIsa>(state.range(0));
  set_num_threads(bench::bench_threads());
  const CpuIsa saved = max_cpu_isa();
  set_max_cpu_isa(isa);
  for (int i = 0; i < 3; ++i) fn();  // warm-up
  for (auto _ : state) benchmark::DoNotOptimize(fn().data_ptr());
  set_max_cpu_isa(saved);
  state.SetLabel(std::string(cpu_isa_name(isa)));
}

void BM_Gelu(benchmark::State& state) {  // W4's feed-forward activation: [16, 128, 512]
  Tensor x = randn({16, 128, 512});
  at_isa(state, [&] { return gelu(x); });
}

void BM_GeluBackward(benchmark::State& state) {
  Tensor x = randn({16, 128, 512}).requires_grad_();
  Tensor g = randn({16, 128, 512});
  at_isa(state, [&] {
    x.set_grad(Tensor());
    gelu(x).backward(g);
    return x.grad();
  });
}

void BM_AttentionSoftmax(benchmark::State& state) {  // W4: [16 x 4 heads, 128, 128], causal
  Tensor x = randn({64, 128, 128});
  at_isa(state, [&] { return attention_softmax(x, 0.177, true); });
}

void BM_MaxPool2x2(benchmark::State& state) {  // W2's first pool: [64, 32, 28, 28]
  Tensor x = randn({64, 32, 28, 28});
  at_isa(state, [&] { return max_pool2d(x, {.kernel = 2}); });
}

void BM_CrossEntropyFwdBwd(benchmark::State& state) {  // W3's loss: [32 x 64, 256]
  Tensor x = randn({2048, 256}).requires_grad_();
  Tensor y = randint(0, 256, {2048});
  at_isa(state, [&] {
    x.set_grad(Tensor());
    cross_entropy(x, y).backward();
    return x.grad();
  });
}

void BM_MseLossFwdBwd(benchmark::State& state) {
  Tensor x = randn({1 << 20}).requires_grad_(), y = randn({1 << 20});
  at_isa(state, [&] {
    x.set_grad(Tensor());
    mse_loss(x, y).backward();
    return x.grad();
  });
}

void BM_LstmFwdBwd(benchmark::State& state) {  // W3's LSTM: 64 -> 256, batch 32, seq 64
  manual_seed(0);
  nn::LSTM lstm({.input_size = 64, .hidden_size = 256, .batch_first = true});
  Tensor x = randn({32, 64, 64});
  at_isa(state, [&] {
    lstm.zero_grad();
    lstm(x).sum().backward();
    return lstm.parameters()[0].grad();
  });
}

void BM_AdamStep(benchmark::State& state) {  // one update of W1's 535,818 parameters
  std::vector<Tensor> params{randn({512, 784}).requires_grad_(), randn({256, 512}).requires_grad_(),
                             randn({10, 256}).requires_grad_(), randn({778}).requires_grad_()};
  for (Tensor& p : params) p.set_grad(randn(p.shape()));
  optim::Adam adam(params, {.lr = 1e-3});
  at_isa(state, [&] {
    adam.step();
    return params[0];
  });
}

// Levels 0 (baseline) up to the host's widest copy (2: AVX-512; AVX512-BF16 adds no copy).
void isa_levels(benchmark::internal::Benchmark* b) {
  b->DenseRange(0, std::min(2, static_cast<int>(detected_cpu_isa())));
}
#define ATH_ISA_LEVELS ->Apply(isa_levels)->Unit(benchmark::kMicrosecond)->UseRealTime()
BENCHMARK(BM_Gelu) ATH_ISA_LEVELS;
BENCHMARK(BM_GeluBackward) ATH_ISA_LEVELS;
BENCHMARK(BM_AttentionSoftmax) ATH_ISA_LEVELS;
BENCHMARK(BM_MaxPool2x2) ATH_ISA_LEVELS;
BENCHMARK(BM_CrossEntropyFwdBwd) ATH_ISA_LEVELS;
BENCHMARK(BM_MseLossFwdBwd) ATH_ISA_LEVELS;
BENCHMARK(BM_LstmFwdBwd) ATH_ISA_LEVELS;
BENCHMARK(BM_AdamStep) ATH_ISA_LEVELS;

}  // namespace

ATH_BENCHMARK_MAIN()

#include "athanor/core/thread_policy.h"
ATH_SHORT_OPENMP_SPIN();

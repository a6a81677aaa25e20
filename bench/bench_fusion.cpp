// Pointwise fusion against its limit, in the same run: ReLU's backward (grad * (out > 0)) as
// the three ops eager runs (gt, to_dtype, mul) and as one fused_pointwise kernel, next to memcpy
// moving the bytes the fused kernel must move (read grad and out, write the result: 12 bytes an
// element). GB/s counts those 12 bytes an element for all three, so the ratio to memcpy is the
// share of the bandwidth limit. Sizes: W2's largest ReLU ([64,32,28,28], 1.6M elements, inside
// the last-level cache) and 16M elements (DRAM).
// Run: ./build/bench/bench_fusion --benchmark_counters_tabular=true  (2 threads by default)
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstring>
#include <vector>

#include "athanor/athanor.h"
#include "athanor/ops/fused_pointwise.h"
#include "bench_host.h"

namespace {

using namespace ath;

void set_rate(benchmark::State& state, int64_t n) {
  state.counters["GB/s"] =
      benchmark::Counter(12.0 * static_cast<double>(n) * static_cast<double>(state.iterations()),
                         benchmark::Counter::kIsRate);
}

PointwiseProgram relu_backward_program() {
  PointwiseProgram p;
  const int32_t grad = p.add_input(kFloat32), out = p.add_input(kFloat32);
  const int32_t zero = p.add_input(kFloat32);
  const int32_t mask = p.add_step(PointwiseCode::Gt, out, zero);
  p.add_step(PointwiseCode::Mul, grad, p.add_step(PointwiseCode::ToFloat, mask));
  return p;
}

void BM_ReluBackward_Eager3Ops(benchmark::State& state) {
  set_num_threads(ath::bench::bench_threads());
  const int64_t n = state.range(0);
  Tensor grad = randn({n}), out = relu(randn({n}));
  for (auto _ : state) {
    Tensor g = grad * gt(out, 0.0).to(kFloat32);
    benchmark::DoNotOptimize(g.data_ptr());
  }
  set_rate(state, n);
}

void BM_ReluBackward_Fused(benchmark::State& state) {
  set_num_threads(ath::bench::bench_threads());
  const int64_t n = state.range(0);
  Tensor grad = randn({n}), out = relu(randn({n})), zero = zeros({});
  const PointwiseProgram p = relu_backward_program();
  for (auto _ : state) {
    Tensor g = fused_pointwise({grad, out, zero}, p);
    benchmark::DoNotOptimize(g.data_ptr());
  }
  set_rate(state, n);
}

// The limit: memcpy of 12 bytes an element (6 read + 6 written), one half per thread.
void BM_Memcpy_SameBytes(benchmark::State& state) {
  const int threads = ath::bench::bench_threads();
  const int64_t n = state.range(0);
  std::vector<char> src(static_cast<std::size_t>(n) * 6, 1), dst(src.size());
  const std::size_t part = src.size() / static_cast<std::size_t>(threads);
  for (auto _ : state) {
#pragma omp parallel num_threads(threads)
    {
      const std::size_t begin = static_cast<std::size_t>(omp_get_thread_num()) * part;
      std::memcpy(dst.data() + begin, src.data() + begin, part);
    }
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  set_rate(state, n);
}

constexpr int64_t kW2Relu = 64 * 32 * 28 * 28;
constexpr int64_t kLarge = 16 << 20;
BENCHMARK(BM_Memcpy_SameBytes)
    ->Arg(kW2Relu)
    ->Arg(kLarge)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_ReluBackward_Eager3Ops)
    ->Arg(kW2Relu)
    ->Arg(kLarge)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();
BENCHMARK(BM_ReluBackward_Fused)
    ->Arg(kW2Relu)
    ->Arg(kLarge)
    ->Unit(benchmark::kMicrosecond)
    ->UseRealTime();

}  // namespace

ATH_BENCHMARK_MAIN()

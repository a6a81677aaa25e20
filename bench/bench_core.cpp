// Core overheads and bandwidth, each next to its machine reference in the same run:
//   add of two 16M-float tensors   vs  memcpy of the same bytes (3 streams: 2 reads + 1 write)
//   sum of 16M floats              vs  a plain read loop (the read bandwidth)
//   add of two 1-element tensors   dispatch overhead, without and with autograd recording
// Run: ./build/bench/bench_core --benchmark_counters_tabular=true  (2 threads by default)
#include <benchmark/benchmark.h>
#include <omp.h>

#include <cstring>
#include <vector>

#include "athanor/athanor.h"
#include "bench_host.h"

namespace {

using namespace ath;
constexpr int64_t kN = 16 << 20;

void threads() { set_num_threads(2); }

void BM_AddF32_16M(benchmark::State& state) {
  threads();
  Tensor a = ones({kN}), b = ones({kN});
  for (auto _ : state) {
    Tensor c = add(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  state.counters["GB/s"] =
      benchmark::Counter(3.0 * kN * 4 * state.iterations(), benchmark::Counter::kIsRate);
}

// Reference: the same 3 streams of bytes moved by memcpy (read 2N floats, write N... memcpy
// reads N and writes N, so copy 1.5N floats to move the same 12N bytes), split over the same 2
// threads as the add (one memcpy per thread, each on its half).
void BM_Memcpy_SameBytes(benchmark::State& state) {
  threads();
  std::vector<float> src(kN * 3 / 2, 1.0f), dst(kN * 3 / 2);
  const std::size_t half = src.size() / 2;
  for (auto _ : state) {
#pragma omp parallel num_threads(2)
    {
      std::size_t begin = static_cast<std::size_t>(omp_get_thread_num()) * half;
      std::memcpy(dst.data() + begin, src.data() + begin, half * sizeof(float));
    }
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] =
      benchmark::Counter(2.0 * src.size() * 4 * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_SumF32_16M(benchmark::State& state) {
  threads();
  Tensor a = ones({kN});
  for (auto _ : state) {
    Tensor s = sum(a);
    benchmark::DoNotOptimize(s.data_ptr());
  }
  state.counters["GB/s"] =
      benchmark::Counter(1.0 * kN * 4 * state.iterations(), benchmark::Counter::kIsRate);
}

// Reference: read bandwidth of a plain loop with 16 independent accumulators (so it is limited
// by memory, not by the latency of one add chain), split over the same 2 threads.
void BM_ReadLoop_16M(benchmark::State& state) {
  threads();
  std::vector<float> a(kN, 1.0f);
  for (auto _ : state) {
    float partial[2] = {0, 0};
#pragma omp parallel num_threads(2)
    {
      int t = omp_get_thread_num();
      const float* p = a.data() + t * (kN / 2);
      float acc[16] = {};
      for (int64_t i = 0; i < kN / 2; i += 16) {
        for (int l = 0; l < 16; ++l) acc[l] += p[i + l];
      }
      float s = 0;
      for (float v : acc) s += v;
      partial[t] = s;
    }
    benchmark::DoNotOptimize(partial[0] + partial[1]);
  }
  state.counters["GB/s"] =
      benchmark::Counter(1.0 * kN * 4 * state.iterations(), benchmark::Counter::kIsRate);
}

void BM_DispatchAdd_NoGrad(benchmark::State& state) {
  Tensor a = ones({1}), b = ones({1});
  for (auto _ : state) {
    Tensor c = add(a, b);
    benchmark::DoNotOptimize(c.impl());
  }
}

void BM_DispatchAdd_WithGrad(benchmark::State& state) {
  Tensor a = ones({1}).requires_grad_(), b = ones({1});
  for (auto _ : state) {
    Tensor c = add(a, b);
    benchmark::DoNotOptimize(c.impl());
  }
}

BENCHMARK(BM_AddF32_16M)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Memcpy_SameBytes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SumF32_16M)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ReadLoop_16M)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DispatchAdd_NoGrad);
BENCHMARK(BM_DispatchAdd_WithGrad);

}  // namespace

ATH_BENCHMARK_MAIN()

#include "athanor/core/thread_policy.h"
ATH_SHORT_OPENMP_SPIN();

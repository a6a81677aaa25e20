// Core overheads and bandwidth, each next to its machine reference in the same run:
//   add of two 16M-float tensors   vs  memcpy of the same bytes (3 streams: 2 reads + 1 write)
//   sum of 16M floats              vs  a plain read loop (the read bandwidth)
//   add of two 1-element tensors   dispatch overhead, without and with autograd recording
//   W2's max-pool kernels (2x2, stride 2: forward, backward, backward with the ReLU mask)
//                                  vs  memcpy of the same bytes, interleaved iteration by iteration
// Run: ./build/bench/bench_core --benchmark_counters_tabular=true  (2 threads by default)
#include <benchmark/benchmark.h>
#include <omp.h>

#include <chrono>
#include <cstring>
#include <functional>
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

// ---- max pooling -----------------------------------------------------------------------------
// W2's two pools at batch 64 (2x2, stride 2): the forward (values + int64 indices), the backward
// scatter and the backward with ReLU's mask folded in (the op the compiled step runs). Bytes are
// what the kernel must move: every input read once, every output written once. Each iteration
// also copies the same number of bytes (memcpy, half read and half written, one half per thread)
// right after the op, so `x_copy` (op time / copy time, medians over the iterations) compares
// the two under the same load and cache state: 1.0 is the copy's bandwidth.

enum class PoolKernel { Forward, Backward, BackwardMasked };

void BM_MaxPool(benchmark::State& state, PoolKernel kind, int64_t channels, int64_t hw) {
  threads();
  const Tensor x = relu(bench::random_normal({64, channels, hw, hw}, 1));
  auto [pooled, indices] = max_pool2d_with_indices(x, {.kernel = 2});
  const Tensor grad = bench::random_normal(pooled.shape(), 2);
  const double in_n = static_cast<double>(x.numel()), out_n = static_cast<double>(pooled.numel());
  const PoolGradAttrs attrs{.input = {hw, hw}};
  std::function<Tensor()> run;
  double bytes = 0;
  switch (kind) {
    case PoolKernel::Forward:
      run = [&] { return max_pool2d_with_indices(x, {.kernel = 2}).second; };
      bytes = 4 * in_n + 12 * out_n;
      break;
    case PoolKernel::Backward:
      run = [&] {
        Tensor in[2] = {grad, indices};
        return call1(op_max_pool2d_backward(), TensorSpan(in), attrs);
      };
      bytes = 12 * out_n + 4 * in_n;
      break;
    case PoolKernel::BackwardMasked:
      run = [&] {
        Tensor in[3] = {grad, indices, pooled};
        return call1(op_max_pool2d_backward_masked(), TensorSpan(in), attrs);
      };
      bytes = 16 * out_n + 4 * in_n;
      break;
  }
  const std::size_t half = static_cast<std::size_t>(bytes / 4);  // bytes / 2 per side, per thread
  std::vector<char> src(2 * half, 1), dst(2 * half);
  auto copy = [&] {
#pragma omp parallel num_threads(2)
    {
      const std::size_t begin = static_cast<std::size_t>(omp_get_thread_num()) * half;
      std::memcpy(dst.data() + begin, src.data() + begin, half);
    }
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  };
  for (int i = 0; i < 3; ++i) run(), copy();
  using clock = std::chrono::steady_clock;
  std::vector<double> op_s, copy_s;
  for (auto _ : state) {
    const auto t0 = clock::now();
    Tensor r = run();
    benchmark::DoNotOptimize(r.data_ptr());
    const auto t1 = clock::now();
    copy();
    const auto t2 = clock::now();
    op_s.push_back(std::chrono::duration<double>(t1 - t0).count());
    copy_s.push_back(std::chrono::duration<double>(t2 - t1).count());
    state.SetIterationTime(op_s.back());
  }
  // Medians: a burst of other work on the shared machine stalls single iterations of either.
  const double op = bench::median(op_s), copy_time = bench::median(copy_s);
  state.counters["MB"] = bytes / 1e6;
  state.counters["med_us"] = op * 1e6;
  state.counters["GB/s"] = bytes / op / 1e9;
  state.counters["copy_GB/s"] = bytes / copy_time / 1e9;
  state.counters["x_copy"] = op / copy_time;
}

BENCHMARK(BM_AddF32_16M)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_Memcpy_SameBytes)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_SumF32_16M)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_ReadLoop_16M)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(BM_DispatchAdd_NoGrad);
BENCHMARK(BM_DispatchAdd_WithGrad);
BENCHMARK_CAPTURE(BM_MaxPool, fwd_32x28x28, PoolKernel::Forward, 32, 28)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_MaxPool, fwd_64x14x14, PoolKernel::Forward, 64, 14)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_MaxPool, bwd_32x28x28, PoolKernel::Backward, 32, 28)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_MaxPool, bwd_64x14x14, PoolKernel::Backward, 64, 14)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_MaxPool, bwd_masked_32x28x28, PoolKernel::BackwardMasked, 32, 28)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_MaxPool, bwd_masked_64x14x14, PoolKernel::BackwardMasked, 64, 14)
    ->UseManualTime()
    ->Unit(benchmark::kMicrosecond);

}  // namespace

ATH_BENCHMARK_MAIN()

#include "athanor/core/thread_policy.h"
ATH_SHORT_OPENMP_SPIN();

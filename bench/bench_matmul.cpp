// SGEMM: athanor's mm against a direct oneDNN matmul call (primitive built once, buffers
// allocated once) on the same shapes (M x K x N: 256^3, 1024^3 and the workloads' products),
// on 2 threads; and W4's products with operands warm in cache against cold (sgemm_cold).
//
//   ./build/bench/bench_matmul                        # 3 rounds per size, then the summary
//   ./build/bench/bench_matmul --rounds=5 --benchmark_min_time=1
//
// The machine is noisy (other processes, slow spells), so the two are timed as pairs: every
// benchmark iteration runs the direct call and then athanor's mm (whose time includes freeing
// its output; running second, it gets no cache warmth the direct call lacks: with athanor first
// the 256^3 ratio read 1.5% lower), each timed on its own, and
// both GFLOP/s (2 M N K per call) plus their ratio are reported for the same stretch of time.
// The summary prints the medians over rounds; target athanor / oneDNN >= 0.95 (athanor's
// per-call costs: dispatch, output allocation, primitive-cache lookup, must stay in the noise).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>
#include <vector>

#include "athanor/athanor.h"
#include "bench_host.h"

namespace {

constexpr int kThreads = 2;
using Clock = std::chrono::steady_clock;

// Normal(0, 1) values from a fixed seed (host-side, so the bench needs no RNG op).
void sgemm_pair(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  ath::set_num_threads(kThreads);
  using dnnl::memory;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  const auto f32 = memory::data_type::f32;
  const auto ab = memory::format_tag::ab;
  memory::desc ma_d({m, k}, f32, ab), mb_d({k, n}, f32, ab), mc_d({m, n}, f32, ab);
  dnnl::matmul prim(dnnl::matmul::primitive_desc(dnnl::matmul::desc(ma_d, mb_d, mc_d), eng));
  ath::Tensor a = ath::bench::random_normal({m, k}, 1), b = ath::bench::random_normal({k, n}, 2),
              c = ath::empty({m, n});
  memory ma(ma_d, eng, a.data_ptr()), mb(mb_d, eng, b.data_ptr()), mc(mc_d, eng, c.data_ptr());
  auto direct = [&] {
    prim.execute(s, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
    s.wait();
  };
  for (int i = 0; i < 3; ++i) {  // warm both paths (JIT, caches, allocator)
    direct();
    ath::mm(a, b);
  }
  double t_ours = 0, t_theirs = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    direct();
    auto t1 = Clock::now();
    {
      ath::Tensor out = ath::mm(a, b);
      benchmark::DoNotOptimize(out.data_ptr());
    }
    auto t2 = Clock::now();
    t_theirs += std::chrono::duration<double>(t1 - t0).count();
    t_ours += std::chrono::duration<double>(t2 - t1).count();
  }
  const double flops = 2.0 * double(m) * double(k) * double(n) * double(state.iterations());
  state.counters["athanor_GFLOP/s"] = flops / t_ours / 1e9;
  state.counters["onednn_GFLOP/s"] = flops / t_theirs / 1e9;
  state.counters["ratio"] = t_theirs / t_ours;
}

// W4's products as its training step runs them, operands warm in cache against operands cold:
// the first call of each pair reads operands used a moment before, the second reads them after a
// 64 MB buffer was written (untimed), as a step reads activations saved in its forward or
// written several ops back. `transposed` reads the left operand through a transposed view (the
// weight gradient's g^T). Explains why a step's products run below the SGEMM rate.
void sgemm_cold(benchmark::State& state) {
  const int64_t m = state.range(0), k = state.range(1), n = state.range(2);
  const bool transposed = state.range(3) != 0;
  ath::set_num_threads(kThreads);
  ath::Tensor a =
      transposed ? ath::bench::random_normal({k, m}, 1).t() : ath::bench::random_normal({m, k}, 1);
  ath::Tensor b = ath::bench::random_normal({k, n}, 2);
  std::vector<float> evict(std::size_t{64} << 20 >> 2, 1.0f);  // 64 MB: past L2, most of L3's share
  for (int i = 0; i < 3; ++i) ath::mm(a, b);
  double t_warm = 0, t_cold = 0;
  for (auto _ : state) {
    auto t0 = Clock::now();
    benchmark::DoNotOptimize(ath::mm(a, b).data_ptr());
    auto t1 = Clock::now();
    for (float& v : evict) v += 1.0f;
    benchmark::ClobberMemory();
    auto t2 = Clock::now();
    benchmark::DoNotOptimize(ath::mm(a, b).data_ptr());
    auto t3 = Clock::now();
    t_warm += std::chrono::duration<double>(t1 - t0).count();
    t_cold += std::chrono::duration<double>(t3 - t2).count();
  }
  const double flops = 2.0 * double(m) * double(k) * double(n) * double(state.iterations());
  state.counters["warm_GFLOP/s"] = flops / t_warm / 1e9;
  state.counters["cold_GFLOP/s"] = flops / t_cold / 1e9;
  state.counters["cold/warm"] = t_warm / t_cold;
}

// Collects the counters per size while printing as usual.
class Collector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      // <sgemm or sgemm_cold>/round<r>/<m>/<k>/<n>[/<transposed>]/real_time
      const std::string name = r.benchmark_name();
      std::string shape = name.substr(name.find('/', name.find("/round") + 1) + 1);
      shape = name.substr(0, name.find('/')) + "/" + shape.substr(0, shape.rfind('/'));
      for (const auto& [k, v] : r.counters) results[shape][k].push_back(v.value);
    }
  }
  std::map<std::string, std::map<std::string, std::vector<double>>> results;
};

}  // namespace

int main(int argc, char** argv) {
  std::vector<char*> args;
  const int rounds = ath::bench::take_rounds_flag(argc, argv, args);
  // First, so that an ATH_MAX_CPU_ISA cap reaches oneDNN before the direct calls' JIT.
  const ath::bench::HostInfo host = ath::bench::measure_host(kThreads);
  // M, K, N: the two squares, then the workloads' products (W1's first layer forward and its
  // weight gradient, W3's recurrent step and input projection, W4's QKV projection).
  const std::vector<std::vector<int64_t>> shapes{
      {256, 256, 256}, {1024, 1024, 1024}, {128, 784, 512}, {512, 128, 784},
      {32, 256, 1024}, {2048, 64, 1024},   {2048, 128, 384}};
  // W4's step (batch 16 x 128 tokens, width 128, feed-forward 512): the feed-forward's second
  // linear forward, its input gradient, and its weight gradient g^T x.
  const std::vector<std::vector<int64_t>> cold_shapes{
      {2048, 512, 128, 0}, {2048, 128, 512, 0}, {128, 2048, 512, 1}};
  for (int r = 0; r < rounds; ++r) {
    for (const auto& shape : shapes) {
      benchmark::RegisterBenchmark(fmt::format("sgemm/round{}", r).c_str(), sgemm_pair)
          ->Args(shape)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
    for (const auto& shape : cold_shapes) {
      benchmark::RegisterBenchmark(fmt::format("sgemm_cold/round{}", r).c_str(), sgemm_cold)
          ->Args(shape)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  int nargs = static_cast<int>(args.size());
  benchmark::Initialize(&nargs, args.data());
  Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  std::printf("\nhost: %s; SGEMM 512^3 %.1f GFLOP/s\nmedians over %d rounds, %d threads:\n",
              host.isa.c_str(), host.sgemm_gflops, rounds, kThreads);
  for (const auto& shape : shapes) {
    auto& r = collector.results[fmt::format("sgemm/{}/{}/{}", shape[0], shape[1], shape[2])];
    std::printf("SGEMM %14s: athanor mm %6.1f GFLOP/s, direct oneDNN %6.1f GFLOP/s, ratio %.3f\n",
                fmt::format("{}x{}x{}", shape[0], shape[1], shape[2]).c_str(),
                ath::bench::median(r["athanor_GFLOP/s"]), ath::bench::median(r["onednn_GFLOP/s"]),
                ath::bench::median(r["ratio"]));
  }
  for (const auto& shape : cold_shapes) {
    auto& r =
        collector
            .results[fmt::format("sgemm_cold/{}/{}/{}/{}", shape[0], shape[1], shape[2], shape[3])];
    std::printf("SGEMM %14s%s: operands warm %6.1f GFLOP/s, cold %6.1f GFLOP/s, cold/warm %.3f\n",
                fmt::format("{}x{}x{}", shape[0], shape[1], shape[2]).c_str(),
                shape[3] != 0 ? " (A^T)" : "      ", ath::bench::median(r["warm_GFLOP/s"]),
                ath::bench::median(r["cold_GFLOP/s"]), ath::bench::median(r["cold/warm"]));
  }
  benchmark::Shutdown();
  return 0;
}

#include "athanor/core/thread_policy.h"
ATH_SHORT_OPENMP_SPIN();

// What every benchmark prints about the host it ran on, so that figures from different hosts
// are never compared unknowingly: the ISA athanor runs with (AVX2 / AVX-512 / AVX512-BF16, and
// any ATH_MAX_CPU_ISA cap) and the SGEMM rate measured in the same run (athanor's mm, float32
// 512^3, on the benchmark's thread count): the machine's matrix ceiling at that moment.
//
//   ATH_BENCHMARK_MAIN()              // Google Benchmark executables: host context + run
//   HostInfo h = measure_host(2);     // other executables: h.isa, h.sgemm_gflops
//   double bw = measure_read_bandwidth(2);  // bytes/s read from memory
//
// The Google Benchmark executables run on ATH_BENCH_THREADS threads (default 2).
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "athanor/athanor.h"
#include "athanor/core/cpu_isa.h"
#include "athanor/core/parallel.h"

namespace ath::bench {

struct HostInfo {
  std::string isa;
  double sgemm_gflops = 0;  // best of several timed 512^3 products
};

// A tensor of N(0, 1) floats from its own seeded generator (inputs that do not depend on the
// global generator's state).
inline ath::Tensor random_normal(const ath::Shape& shape, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, 1.0f);
  std::vector<float> v(static_cast<std::size_t>(ath::numel(shape)));
  for (float& x : v) x = dist(rng);
  return ath::from_vector(v, shape);
}

// The median of a set of repeats (the upper one of an even count); 0 for none.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Takes `--rounds=N` (at least 1; `fallback` when absent) out of argv for the interleaved
// benchmarks; the other arguments, program name first, are left in `rest` for Google Benchmark.
inline int take_rounds_flag(int argc, char** argv, std::vector<char*>& rest, int fallback = 3) {
  int rounds = fallback;
  for (int i = 0; i < argc; ++i) {
    if (std::string_view(argv[i]).starts_with("--rounds=")) {
      rounds = std::max(1, std::atoi(argv[i] + 9));
    } else {
      rest.push_back(argv[i]);
    }
  }
  return rounds;
}

inline int bench_threads() {
  const char* v = std::getenv("ATH_BENCH_THREADS");
  return v != nullptr ? std::max(1, std::atoi(v)) : 2;
}

inline HostInfo measure_host(int threads) {
  const int saved = get_num_threads();
  set_num_threads(threads);
  constexpr int64_t n = 512;
  Tensor a = full({n, n}, 0.5), b = full({n, n}, 0.25);
  mm(a, b);  // build the primitive, warm the allocator
  double best = 1e30;
  const auto start = std::chrono::steady_clock::now();
  for (int i = 0; i < 40 && std::chrono::steady_clock::now() - start < std::chrono::seconds(1);
       ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    mm(a, b);
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  set_num_threads(saved);
  return {.isa = cpu_isa_description(), .sgemm_gflops = 2.0 * n * n * n / best / 1e9};
}

// The read bandwidth from memory on `threads` threads, in bytes/s: the best of several passes
// over 64 MB (past any core's cache share), each thread summing its share with 16 independent
// accumulators, so that memory and not one add chain's latency limits it.
inline double measure_read_bandwidth(int threads) {
  const int saved = get_num_threads();
  set_num_threads(threads);
  constexpr int64_t n = int64_t{16} << 20;  // floats
  std::vector<float> data(static_cast<std::size_t>(n), 1.0f);
  std::vector<float> sums(static_cast<std::size_t>(threads));
  double best = 1e30;
  for (int pass = 0; pass < 8; ++pass) {
    const auto t0 = std::chrono::steady_clock::now();
    ath::parallel_for(0, threads, 1, [&](int64_t begin, int64_t end) {
      for (int64_t t = begin; t < end; ++t) {
        const int64_t lo = n * t / threads, hi = n * (t + 1) / threads;
        float acc[16] = {};
        int64_t i = lo;
        for (; i + 16 <= hi; i += 16)
          for (int l = 0; l < 16; ++l) acc[l] += data[static_cast<std::size_t>(i + l)];
        for (; i < hi; ++i) acc[0] += data[static_cast<std::size_t>(i)];
        float s = 0;
        for (float v : acc) s += v;
        sums[static_cast<std::size_t>(t)] = s;
      }
    });
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  set_num_threads(saved);
  volatile float sink = sums[0];  // keeps the loop
  (void)sink;
  return static_cast<double>(n) * sizeof(float) / best;
}

}  // namespace ath::bench

// A Google Benchmark main that records the host in the report's context (printed in the
// header of the console output and in --benchmark_format=json).
#define ATH_BENCHMARK_MAIN()                                                               \
  int main(int argc, char** argv) {                                                        \
    const int threads_ = ::ath::bench::bench_threads();                                    \
    const ::ath::bench::HostInfo host_ = ::ath::bench::measure_host(threads_);             \
    ::benchmark::AddCustomContext("host_isa", host_.isa);                                  \
    ::benchmark::AddCustomContext("sgemm_512_gflops", std::to_string(host_.sgemm_gflops)); \
    ::benchmark::AddCustomContext("threads", std::to_string(threads_));                    \
    ::benchmark::Initialize(&argc, argv);                                                  \
    if (::benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;                    \
    ::benchmark::RunSpecifiedBenchmarks();                                                 \
    ::benchmark::Shutdown();                                                               \
    return 0;                                                                              \
  }

// SGEMM: athanor's mm against a direct oneDNN matmul call (primitive built once, buffers
// allocated once) on the same shapes, interleaved in one run, on 2 threads.
//
//   ./build/bench/bench_matmul                   # 3 interleaved rounds, then the ratios
//   ./build/bench/bench_matmul --rounds=5 --benchmark_min_time=0.5
//
// Each benchmark reports GFLOP/s (2 * M * N * K per call). After the run the medians over
// rounds are printed with athanor / oneDNN (target >= 0.95: athanor's per-call costs, i.e.
// dispatch, output allocation, the primitive-cache lookup, must stay in the noise).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <cstring>
#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "athanor/athanor.h"

namespace {

// Normal(0, scale) values from a fixed seed (host-side, so the bench needs no RNG op).
ath::Tensor random(const ath::Shape& shape, float scale = 1.0f, unsigned seed = 0) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> v(static_cast<std::size_t>(ath::numel(shape)));
  for (float& x : v) x = dist(rng);
  return ath::from_vector(v, shape);
}

constexpr int kThreads = 2;

void set_flops(benchmark::State& state, int64_t n) {
  state.counters["GFLOP/s"] = benchmark::Counter(2.0 * double(n) * double(n) * double(n) / 1e9,
                                                 benchmark::Counter::kIsIterationInvariantRate);
}

void athanor_mm(benchmark::State& state) {
  const int64_t n = state.range(0);
  ath::set_num_threads(kThreads);
  ath::Tensor a = random({n, n}, 1, 1), b = random({n, n}, 1, 2);
  for (auto _ : state) {
    ath::Tensor c = ath::mm(a, b);
    benchmark::DoNotOptimize(c.data_ptr());
  }
  set_flops(state, n);
}

void onednn_matmul(benchmark::State& state) {
  const int64_t n = state.range(0);
  ath::set_num_threads(kThreads);
  using dnnl::memory;
  dnnl::engine eng(dnnl::engine::kind::cpu, 0);
  dnnl::stream s(eng);
  memory::desc md({n, n}, memory::data_type::f32, memory::format_tag::ab);
  dnnl::matmul prim(dnnl::matmul::primitive_desc(dnnl::matmul::desc(md, md, md), eng));
  ath::Tensor a = random({n, n}, 1, 1), b = random({n, n}, 1, 2), c = ath::empty({n, n});
  memory ma(md, eng, a.data_ptr()), mb(md, eng, b.data_ptr()), mc(md, eng, c.data_ptr());
  for (auto _ : state) {
    prim.execute(s, {{DNNL_ARG_SRC, ma}, {DNNL_ARG_WEIGHTS, mb}, {DNNL_ARG_DST, mc}});
    s.wait();
  }
  set_flops(state, n);
}

// Collects GFLOP/s per benchmark family and size while printing as usual.
class Collector : public benchmark::ConsoleReporter {
 public:
  void ReportRuns(const std::vector<Run>& runs) override {
    ConsoleReporter::ReportRuns(runs);
    for (const Run& r : runs) {
      auto it = r.counters.find("GFLOP/s");
      if (it == r.counters.end()) continue;
      // "<family>/round<r>/<n>/real_time" -> key (family, n)
      const std::string name = r.benchmark_name();
      const std::string family = name.substr(0, name.find("/round"));
      const std::size_t at = name.find('/', name.find("/round") + 1);
      const int64_t n = std::atoll(name.c_str() + at + 1);
      results[{family, n}].push_back(it->second.value);
    }
  }
  std::map<std::pair<std::string, int64_t>, std::vector<double>> results;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  int rounds = 3;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    if (std::strncmp(argv[i], "--rounds=", 9) == 0) {
      rounds = std::max(1, std::atoi(argv[i] + 9));
    } else {
      args.push_back(argv[i]);
    }
  }
  const std::vector<int64_t> sizes{256, 1024};
  // Interleaved: athanor, oneDNN, athanor, oneDNN, ... so slow spells hit both.
  for (int r = 0; r < rounds; ++r) {
    for (int64_t n : sizes) {
      benchmark::RegisterBenchmark(fmt::format("sgemm_athanor_mm/round{}", r).c_str(), athanor_mm)
          ->Arg(n)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
      benchmark::RegisterBenchmark(fmt::format("sgemm_onednn_direct/round{}", r).c_str(),
                                   onednn_matmul)
          ->Arg(n)
          ->UseRealTime()
          ->Unit(benchmark::kMicrosecond);
    }
  }
  int nargs = static_cast<int>(args.size());
  benchmark::Initialize(&nargs, args.data());
  Collector collector;
  benchmark::RunSpecifiedBenchmarks(&collector);
  std::printf("\nmedian over %d rounds, %d threads:\n", rounds, kThreads);
  for (int64_t n : sizes) {
    const double ours = median(collector.results[{"sgemm_athanor_mm", n}]);
    const double theirs = median(collector.results[{"sgemm_onednn_direct", n}]);
    std::printf("SGEMM %4ld^3: athanor mm %6.1f GFLOP/s, direct oneDNN %6.1f GFLOP/s, ratio %.3f\n",
                static_cast<long>(n), ours, theirs, theirs > 0 ? ours / theirs : 0.0);
  }
  benchmark::Shutdown();
  return 0;
}

// safetensors header parsing as the number of tensors grows: a file of N one-element float32
// tensors opened with SafetensorsFile (which parses and validates the header, and reads no
// tensor). The parse must be linear: a 1M-tensor header (about 80 MB of JSON, near the format's
// 100 MB limit) in well under a second. nlohmann's callback parser, used until 2026-12, was
// quadratic (40k tensors: 15 s).
//
//   ./build/bench/bench_safetensors --benchmark_min_time=1
#include <benchmark/benchmark.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "athanor/athanor.h"
#include "athanor/io/safetensors.h"
#include "bench_host.h"

namespace {

// Writes a file of n one-element F32 tensors named "t<i>" (in the header in shuffled order, as
// another writer might) and returns its path.
std::string write_file(int64_t n) {
  const auto path = std::filesystem::temp_directory_path() /
                    ("athanor_bench_st_" + std::to_string(::getpid()) + "_" + std::to_string(n));
  std::string header = "{";
  for (int64_t k = 0; k < n; ++k) {
    const int64_t i = (k * 7919) % n;  // a permutation when n is not a multiple of 7919
    if (k > 0) header += ',';
    header += fmt::format(R"("t{}":{{"dtype":"F32","shape":[1],"data_offsets":[{},{}]}})", i, 4 * i,
                          4 * i + 4);
  }
  header += '}';
  while (header.size() % 8 != 0) header += ' ';
  std::ofstream out(path, std::ios::binary);
  const uint64_t len = header.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out << header;
  out << std::string(static_cast<std::size_t>(4 * n), '\0');
  return path.string();
}

void BM_OpenSafetensors(benchmark::State& state) {
  const int64_t n = state.range(0);
  const std::string path = write_file(n);
  for (auto _ : state) {
    ath::SafetensorsFile f(path);
    benchmark::DoNotOptimize(f.size());
  }
  std::filesystem::remove(path);
  state.counters["tensors/s"] =
      benchmark::Counter(static_cast<double>(n), benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_OpenSafetensors)
    ->Arg(10'000)
    ->Arg(40'000)
    ->Arg(1'000'000)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime();

}  // namespace

ATH_BENCHMARK_MAIN()

#include "athanor/core/thread_policy.h"
ATH_SHORT_OPENMP_SPIN();

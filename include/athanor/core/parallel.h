// Intra-op parallelism on OpenMP, the runtime oneDNN already uses, so kernels and GEMMs share
// one set of threads and never compete (two pools on two cores is what slows PyTorch 3x here).
//
//   set_num_threads(2);
//   std::vector<float> v(100000);
//   int64_t n = static_cast<int64_t>(v.size());
//   parallel_for(0, n, kPointwiseGrain, [&](int64_t begin, int64_t end) {
//     for (int64_t i = begin; i < end; ++i) v[i] = 2.0f;   // one chunk: [begin, end)
//   });
//   assert(v[0] == 2.0f && v[n - 1] == 2.0f);
//
// Work under `grain` elements runs inline on the calling thread: entering a parallel region
// costs about a microsecond, more than small tensors take to compute. Chunk boundaries depend
// only on (n, grain, thread count); kernels whose result must not depend on the thread count
// (reductions) split by a fixed chunk size instead and combine partials in order.
#pragma once

#include <cstdint>
#include <functional>

namespace ath {

void set_num_threads(int n);
int get_num_threads();
bool in_parallel_region();

// While alive, get_num_threads() on the calling thread answers `n`, and OpenMP regions it opens
// (oneDNN's included) use n threads; other threads keep the process-wide count. For work that
// one thread of an enclosing parallel region runs as if the machine were its own: a stream of
// an InferenceSession's batch-parallel run builds and looks up its primitives for one thread.
class ThisThreadCount {
 public:
  explicit ThisThreadCount(int n);
  ~ThisThreadCount();
  ThisThreadCount(const ThisThreadCount&) = delete;
  ThisThreadCount& operator=(const ThisThreadCount&) = delete;

 private:
  int saved_override_;
  int saved_omp_;
};

inline constexpr int64_t kPointwiseGrain = 32768;

namespace detail {
void parallel_for_impl(int64_t begin, int64_t end, int64_t grain,
                       const std::function<void(int64_t, int64_t)>& fn);
}

template <class Fn>
void parallel_for(int64_t begin, int64_t end, int64_t grain, const Fn& fn) {
  if (end <= begin) return;
  if (end - begin <= grain || get_num_threads() == 1 || in_parallel_region()) {
    fn(begin, end);
    return;
  }
  detail::parallel_for_impl(begin, end, grain, fn);
}

}  // namespace ath

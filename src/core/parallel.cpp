#include "athanor/core/parallel.h"

#include <omp.h>

#include <algorithm>
#include <atomic>

#include "athanor/core/error.h"

namespace ath {

namespace {
// Cached so the hot path does not call into libgomp; -1 means "not yet read".
std::atomic<int> g_num_threads{-1};
// ThisThreadCount's override on this thread (0: none).
thread_local int t_num_threads = 0;
}  // namespace

void set_num_threads(int n) {
  ATH_CHECK(n >= 1, ValueError, "set_num_threads: expected n >= 1, got {}", n);
  omp_set_num_threads(n);
  g_num_threads.store(n, std::memory_order_relaxed);
}

int get_num_threads() {
  if (t_num_threads > 0) return t_num_threads;
  int n = g_num_threads.load(std::memory_order_relaxed);
  if (n < 0) {
    n = omp_get_max_threads();
    g_num_threads.store(n, std::memory_order_relaxed);
  }
  return n;
}

bool in_parallel_region() { return omp_in_parallel() != 0; }

ThisThreadCount::ThisThreadCount(int n)
    : saved_override_(t_num_threads), saved_omp_(omp_get_max_threads()) {
  ATH_CHECK(n >= 1, ValueError, "ThisThreadCount: expected n >= 1, got {}", n);
  t_num_threads = n;
  omp_set_num_threads(n);  // this thread's (task's) count only
}

ThisThreadCount::~ThisThreadCount() {
  t_num_threads = saved_override_;
  omp_set_num_threads(saved_omp_);
}

namespace detail {

void parallel_for_impl(int64_t begin, int64_t end, int64_t grain,
                       const std::function<void(int64_t, int64_t)>& fn) {
  int64_t n = end - begin;
  int threads = static_cast<int>(std::min<int64_t>(get_num_threads(), (n + grain - 1) / grain));
  // Exceptions must not cross the OpenMP region boundary: capture the first one and rethrow.
  std::exception_ptr error;
#pragma omp parallel num_threads(threads)
  {
    int t = omp_get_thread_num();
    int nt = omp_get_num_threads();
    int64_t chunk = (n + nt - 1) / nt;
    int64_t b = begin + t * chunk, e = std::min(end, b + chunk);
    if (b < e) {
      try {
        fn(b, e);
      } catch (...) {
#pragma omp critical(ath_parallel_error)
        if (!error) error = std::current_exception();
      }
    }
  }
  if (error) std::rethrow_exception(error);
}

}  // namespace detail
}  // namespace ath

// Idle OpenMP threads must not keep spinning while the main thread does other work.
#include <gtest/gtest.h>
#include <sys/resource.h>

#include <chrono>
#include <thread>

#include "athanor/athanor.h"

namespace ath {
namespace {

double process_cpu_seconds() {
  rusage r{};
  getrusage(RUSAGE_SELF, &r);
  return static_cast<double>(r.ru_utime.tv_sec + r.ru_stime.tv_sec) +
         1e-6 * static_cast<double>(r.ru_utime.tv_usec + r.ru_stime.tv_usec);
}

TEST(ThreadPolicy, WorkersSleepSoonAfterAParallelRegion) {
  int prev = get_num_threads();
  set_num_threads(2);
  Tensor a = ones({1 << 22});
  Tensor b = add(a, a);  // a parallel region
  double before = process_cpu_seconds();
  std::this_thread::sleep_for(std::chrono::milliseconds(100));
  double burnt_ms = (process_cpu_seconds() - before) * 1e3;
  set_num_threads(prev);
  // libgomp's default spin burns ~10 ms here; the short spin stays well under 4 ms.
  EXPECT_LT(burnt_ms, 4.0) << "idle OpenMP threads spun for " << burnt_ms << " ms of CPU";
}

}  // namespace
}  // namespace ath

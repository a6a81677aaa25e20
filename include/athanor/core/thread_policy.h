// How long idle OpenMP threads spin before they sleep.
//
// libgomp (the OpenMP runtime oneDNN and athanor share) lets a worker spin ~300,000 iterations
// after every parallel region — about 10 ms of a core here — before sleeping. Between two
// kernels that is a feature (the next region starts at once); while the main thread does serial
// work, or a data-loader thread needs the core, it is a core burnt for nothing.
//
// libgomp reads its policy once, from the environment, in a constructor that runs before any of
// ours, and glibc resets `environ` after `.preinit_array` runs, so setenv() cannot reach it. An
// executable therefore re-executes itself once, from `.preinit_array` (before any library has
// initialised), with GOMP_SPINCOUNT=10000 (~0.3 ms) added to its environment:
//
//   #include "athanor/core/thread_policy.h"
//   ATH_SHORT_OPENMP_SPIN();   // at namespace scope in one .cpp of the executable
//
// Back-to-back kernels still find their threads awake; idle threads sleep soon after. A
// GOMP_SPINCOUNT or OMP_WAIT_POLICY already in the environment wins (and means no re-exec).
// KMP_BLOCKTIME=1 (ms) is the same policy for LLVM's libomp, the runtime of code clang compiles
// (the sanitizer build's athanor; the release build is GCC's, all libgomp).
// Under valgrind, set GOMP_SPINCOUNT yourself: valgrind does not follow the re-exec by default.
// athanor's own executables (tests, benchmarks, examples) use this.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace ath::detail {
inline void short_openmp_spin_preinit(int, char** argv, char** env) {
  int n = 0;
  for (; env != nullptr && env[n] != nullptr; ++n) {
    if (std::strncmp(env[n], "GOMP_SPINCOUNT=", 15) == 0 ||
        std::strncmp(env[n], "OMP_WAIT_POLICY=", 16) == 0) {
      return;  // the user chose; also stops the re-exec from repeating
    }
  }
  static char spin[] = "GOMP_SPINCOUNT=10000";
  static char blocktime[] = "KMP_BLOCKTIME=1";
  auto** with_spin =
      static_cast<char**>(std::calloc(static_cast<std::size_t>(n) + 3, sizeof(char*)));
  if (with_spin == nullptr) return;
  for (int i = 0; i < n; ++i) with_spin[i] = env[i];
  with_spin[n] = spin;
  with_spin[n + 1] = blocktime;
  ::execve("/proc/self/exe", argv, with_spin);
  std::free(with_spin);  // exec failed: carry on with libgomp's default
}
}  // namespace ath::detail

#define ATH_SHORT_OPENMP_SPIN()                                                                  \
  __attribute__((section(".preinit_array"), used)) static void (*const ath_preinit_openmp_spin)( \
      int, char**, char**) = &::ath::detail::short_openmp_spin_preinit

// Loop hints for kernels, spelled once for both compilers athanor builds with (GCC for the
// release build, clang for the sanitizer and fuzz build).
//
//   float a[4] = {1, 2, 3, 4}, b[4] = {2, 2, 2, 2}, out[4];
//   int64_t n = 4;
//   ATH_IVDEP
//   for (int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
//
// ATH_IVDEP: the loop carries no dependence through memory (its pointers do not alias in a way
// that matters), so GCC may vectorize it without runtime overlap checks. Under clang it is empty:
// clang's equivalent (`loop vectorize(assume_safety)`) demands vectorization and warns where it
// cannot (at the sanitizer build's -O1, everywhere), and clang builds are not the measured ones.
#pragma once

#if defined(__GNUC__) && !defined(__clang__)
#define ATH_IVDEP _Pragma("GCC ivdep")
#else
#define ATH_IVDEP
#endif

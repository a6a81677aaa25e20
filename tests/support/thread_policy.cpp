// The test binary uses the same short OpenMP spin as athanor's other executables.
#include "athanor/core/thread_policy.h"

ATH_SHORT_OPENMP_SPIN();

// Runs a test body under an ISA cap (ath::set_max_cpu_isa) and restores the previous cap:
//
//   for (CpuIsa isa : isas_up_to_detected()) {
//     ScopedMaxCpuIsa cap(isa);
//     results.push_back(run());
//   }
#pragma once

#include <vector>

#include "athanor/core/cpu_isa.h"

namespace ath::testing {

class ScopedMaxCpuIsa {
 public:
  explicit ScopedMaxCpuIsa(CpuIsa cap) : saved_(max_cpu_isa()) { set_max_cpu_isa(cap); }
  ~ScopedMaxCpuIsa() { set_max_cpu_isa(saved_); }
  ScopedMaxCpuIsa(const ScopedMaxCpuIsa&) = delete;
  ScopedMaxCpuIsa& operator=(const ScopedMaxCpuIsa&) = delete;

 private:
  CpuIsa saved_;
};

// Every level athanor's own kernels can run at on this host (under the current cap): Baseline
// first, then each wider one.
inline std::vector<CpuIsa> isas_up_to_current() {
  std::vector<CpuIsa> out;
  for (int i = 0; i <= static_cast<int>(cpu_isa()); ++i) out.push_back(static_cast<CpuIsa>(i));
  return out;
}

}  // namespace ath::testing

// The ISA cap: spellings, and that a cap lowers cpu_isa() without ever raising it.
#include <gtest/gtest.h>

#include "athanor/core/cpu_isa.h"
#include "support/isa_cap.h"

namespace ath::testing {
namespace {

TEST(CpuIsa, ParsesOwnAndOneDnnSpellings) {
  for (CpuIsa isa : {CpuIsa::Baseline, CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Avx512Bf16})
    EXPECT_EQ(parse_cpu_isa(cpu_isa_name(isa)), isa);
  EXPECT_EQ(parse_cpu_isa("AVX2"), CpuIsa::Avx2);
  EXPECT_EQ(parse_cpu_isa("sse41"), CpuIsa::Baseline);
  EXPECT_EQ(parse_cpu_isa("AVX512_CORE"), CpuIsa::Avx512);
  EXPECT_EQ(parse_cpu_isa("avx512_core_bf16"), CpuIsa::Avx512Bf16);
  EXPECT_EQ(parse_cpu_isa("avx3"), std::nullopt);
  EXPECT_EQ(parse_cpu_isa(""), std::nullopt);
}

TEST(CpuIsa, CapLowersButNeverRaises) {
  const CpuIsa host = detected_cpu_isa();
  EXPECT_LE(cpu_isa(), host);
  {
    ScopedMaxCpuIsa cap(CpuIsa::Baseline);
    EXPECT_EQ(cpu_isa(), CpuIsa::Baseline);
    EXPECT_EQ(max_cpu_isa(), CpuIsa::Baseline);
    if (host != CpuIsa::Baseline) {
      EXPECT_NE(cpu_isa_description().find("capped"), std::string::npos) << cpu_isa_description();
    }
  }
  {
    ScopedMaxCpuIsa cap(CpuIsa::Avx512Bf16);
    EXPECT_EQ(cpu_isa(), host);  // a cap above the host changes nothing
  }
}

}  // namespace
}  // namespace ath::testing

// The instruction set athanor's hand-dispatched kernels run with, and a cap on it.
//
// Hosts of one machine kind differ (some AVX2-only, some AVX-512 with BF16), and a kernel that
// is only ever run with the widest ISA can break unnoticed on the others. Every ISA choice in
// athanor — the kernels compiled per ISA (GELU, softmax, max-pool, losses, RNN cells, optimizer
// updates) and oneDNN's own JIT — follows cpu_isa(): what the CPU and OS support, lowered by a
// cap. The cap comes from the environment, like oneDNN's ONEDNN_MAX_CPU_ISA:
//
//   // $ ATH_MAX_CPU_ISA=avx2 ./build/tests/athanor_tests   # an AVX-512 host acts as an AVX2 one
//
// or from code (tests switch it per case):
//
//   ath::set_max_cpu_isa(ath::CpuIsa::Baseline);   // plain x86-64 loops from the next call on
//   assert(ath::cpu_isa() == ath::CpuIsa::Baseline);
//
// oneDNN reads the cap once, when athanor creates its first oneDNN primitive (oneDNN fixes its
// ISA at its first JIT); athanor's own kernels read it on every call.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace ath {

// Ordered: each level includes the ones below it.
enum class CpuIsa : int8_t {
  Baseline = 0,    // x86-64 (SSE2): what the library is compiled for
  Avx2 = 1,        // AVX2 + FMA (x86-64-v3)
  Avx512 = 2,      // AVX-512 F/BW/DQ/VL (x86-64-v4)
  Avx512Bf16 = 3,  // plus AVX512-BF16: oneDNN's native bfloat16 matrix kernels
};

// What this CPU and OS support, ignoring any cap.
CpuIsa detected_cpu_isa();

// What kernels use: detected_cpu_isa() lowered to the cap (ATH_MAX_CPU_ISA or set_max_cpu_isa).
CpuIsa cpu_isa();

// The cap itself (Avx512Bf16 when none is set).
CpuIsa max_cpu_isa();

// Sets the cap for athanor's own kernels (from their next call) and, if no oneDNN primitive has
// been created yet, for oneDNN. A cap above the detected ISA changes nothing.
void set_max_cpu_isa(CpuIsa cap);

// "baseline", "avx2", "avx512", "avx512_bf16": the spelling ATH_MAX_CPU_ISA takes.
std::string_view cpu_isa_name(CpuIsa isa);

// Parses ATH_MAX_CPU_ISA's spellings, case-insensitively; oneDNN's names are accepted too
// ("sse41" = baseline, "avx512_core", "avx512_core_bf16"). nullopt for anything else.
std::optional<CpuIsa> parse_cpu_isa(std::string_view name);

// For benchmark headers: e.g. "AVX2" or "AVX-512 + AVX512-BF16 (capped to AVX2)".
std::string cpu_isa_description();

}  // namespace ath

#include "athanor/core/cpu_isa.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <string>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#define ATH_X86_DETECT 1
#else
#define ATH_X86_DETECT 0
#endif

namespace ath {

namespace {

CpuIsa detect() {
#if ATH_X86_DETECT
  __builtin_cpu_init();  // may run before libgcc's own constructor (static initialisers)
  // __builtin_cpu_supports also checks that the OS saves the wider registers (XGETBV).
  if (!(__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))) return CpuIsa::Baseline;
  if (!(__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512vl"))) {
    return CpuIsa::Avx2;
  }
  unsigned eax = 0, ebx = 0, ecx = 0, edx = 0;  // CPUID.(7,1):EAX bit 5 is AVX512_BF16
  if (__get_cpuid_count(7, 1, &eax, &ebx, &ecx, &edx) != 0 && (eax & (1u << 5)) != 0) {
    return CpuIsa::Avx512Bf16;
  }
  return CpuIsa::Avx512;
#else
  return CpuIsa::Baseline;
#endif
}

// The cap from ATH_MAX_CPU_ISA. A value it cannot parse is reported once on stderr and
// ignored: it is read during static initialisation, where an exception would abort.
CpuIsa cap_from_environment() {
  const char* v = std::getenv("ATH_MAX_CPU_ISA");
  if (v == nullptr || *v == '\0') return CpuIsa::Avx512Bf16;
  if (auto isa = parse_cpu_isa(v)) return *isa;
  std::fprintf(stderr,
               "athanor: ignoring ATH_MAX_CPU_ISA=%s (expected baseline, avx2, avx512 or "
               "avx512_bf16)\n",
               v);
  return CpuIsa::Avx512Bf16;
}

std::atomic<int8_t>& cap() {
  static std::atomic<int8_t> c{static_cast<int8_t>(cap_from_environment())};
  return c;
}

}  // namespace

CpuIsa detected_cpu_isa() {
  static const CpuIsa isa = detect();
  return isa;
}

CpuIsa max_cpu_isa() { return static_cast<CpuIsa>(cap().load(std::memory_order_relaxed)); }

CpuIsa cpu_isa() { return std::min(detected_cpu_isa(), max_cpu_isa()); }

void set_max_cpu_isa(CpuIsa c) { cap().store(static_cast<int8_t>(c), std::memory_order_relaxed); }

std::string_view cpu_isa_name(CpuIsa isa) {
  switch (isa) {
    case CpuIsa::Baseline:
      return "baseline";
    case CpuIsa::Avx2:
      return "avx2";
    case CpuIsa::Avx512:
      return "avx512";
    case CpuIsa::Avx512Bf16:
      return "avx512_bf16";
  }
  return "unknown";
}

std::optional<CpuIsa> parse_cpu_isa(std::string_view name) {
  std::string s(name);
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  if (s == "baseline" || s == "sse41" || s == "x86-64") return CpuIsa::Baseline;
  if (s == "avx2") return CpuIsa::Avx2;
  if (s == "avx512" || s == "avx512_core") return CpuIsa::Avx512;
  if (s == "avx512_bf16" || s == "avx512_core_bf16" || s == "all") return CpuIsa::Avx512Bf16;
  return std::nullopt;
}

std::string cpu_isa_description() {
  static constexpr std::string_view kNames[] = {"baseline x86-64", "AVX2", "AVX-512",
                                                "AVX-512 + AVX512-BF16"};
  const CpuIsa host = detected_cpu_isa(), used = cpu_isa();
  std::string d(kNames[static_cast<int>(host)]);
  if (used != host) d += " (capped to " + std::string(kNames[static_cast<int>(used)]) + ")";
  return d;
}

}  // namespace ath

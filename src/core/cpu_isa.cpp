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

// Per CpuIsa level: ATH_MAX_CPU_ISA's spelling, oneDNN's (ONEDNN_MAX_CPU_ISA), and the words
// benchmarks print.
struct IsaNames {
  std::string_view name, onednn, label;
};
constexpr IsaNames kIsaNames[] = {{"baseline", "sse41", "baseline x86-64"},
                                  {"avx2", "avx2", "AVX2"},
                                  {"avx512", "avx512_core", "AVX-512"},
                                  {"avx512_bf16", "avx512_core_bf16", "AVX-512 + AVX512-BF16"}};

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

std::string_view cpu_isa_name(CpuIsa isa) { return kIsaNames[static_cast<int>(isa)].name; }

std::optional<CpuIsa> parse_cpu_isa(std::string_view name) {
  std::string s(name);
  for (char& ch : s) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (int i = 0; i < 4; ++i) {
    if (s == kIsaNames[i].name || s == kIsaNames[i].onednn) return static_cast<CpuIsa>(i);
  }
  return std::nullopt;
}

std::string cpu_isa_description() {
  const CpuIsa host = detected_cpu_isa(), used = cpu_isa();
  std::string d(kIsaNames[static_cast<int>(host)].label);
  if (used != host)
    d += " (capped to " + std::string(kIsaNames[static_cast<int>(used)].label) + ")";
  return d;
}

}  // namespace ath

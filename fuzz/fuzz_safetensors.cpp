// libFuzzer target for the safetensors parser (scripts/fuzz.sh builds and runs it).
//
// Properties checked on every input, under ASan + UBSan:
//   - parse_safetensors either succeeds or throws ath::FormatError: any other exception, a crash,
//     an out-of-bounds read or undefined behaviour is a finding;
//   - whatever parses re-serializes, and the re-serialized bytes parse to the same tensors and
//     metadata (the writer never produces a file the reader rejects).
#include <cstdint>
#include <cstring>
#include <span>

#include "athanor/io/safetensors.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

bool same_tensor(const ath::Tensor& a, const ath::Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.is_contiguous() &&
         b.is_contiguous() && std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  ath::SafetensorsData parsed;
  try {
    parsed = ath::parse_safetensors(std::span<const uint8_t>(data, size));
  } catch (const ath::FormatError&) {
    return 0;
  }
  std::vector<uint8_t> again = ath::serialize_safetensors(parsed.tensors, parsed.metadata);
  ath::SafetensorsData reparsed = ath::parse_safetensors(again);
  check(reparsed.metadata == parsed.metadata);
  check(reparsed.tensors.size() == parsed.tensors.size());
  for (const auto& [name, t] : parsed.tensors) {
    check(reparsed.tensors.contains(name) && same_tensor(reparsed.tensors.at(name), t));
  }
  return 0;
}

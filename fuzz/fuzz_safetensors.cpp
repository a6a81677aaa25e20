// libFuzzer target for the safetensors parser (scripts/fuzz.sh builds and runs it).
//
// Properties checked on every input, under ASan + UBSan:
//   - parse_safetensors either succeeds or throws ath::FormatError: any other exception, a crash,
//     an out-of-bounds read or undefined behaviour is a finding;
//   - whatever parses re-serializes, and the re-serialized bytes parse to the same tensors and
//     metadata (the writer never produces a file the reader rejects);
//   - the header's two readers (src/io/safetensors_header.h) agree: the fast one never accepts a
//     header the checked one refuses, and reads an accepted one the same way.
#include <simdjson.h>

#include <cstdint>
#include <cstring>
#include <span>

#include "athanor/io/safetensors.h"
#include "io/safetensors_header.h"

namespace {

void check(bool ok) {
  if (!ok) __builtin_trap();
}

bool same_tensor(const ath::Tensor& a, const ath::Tensor& b) {
  return a.dtype() == b.dtype() && a.shape() == b.shape() && a.is_contiguous() &&
         b.is_contiguous() && std::memcmp(a.data_ptr(), b.data_ptr(), a.nbytes()) == 0;
}

bool same_entry(const ath::SafetensorsEntry& a, const ath::SafetensorsEntry& b) {
  return a.name == b.name && a.dtype == b.dtype && a.shape == b.shape && a.begin == b.begin &&
         a.end == b.end;
}

void check_readers_agree(const uint8_t* data, size_t size) {
  namespace st = ath::detail::safetensors;
  if (size < 8) return;
  uint64_t n = 0;  // the header length: 8 bytes, little-endian
  for (int i = 7; i >= 0; --i) n = (n << 8) | data[i];
  if (n > size - 8 || n > ath::detail::kSafetensorsMaxHeader) return;
  const simdjson::padded_string text(reinterpret_cast<const char*>(data + 8), n);
  ath::detail::SafetensorsHeader fast, checked;
  fast.buffer_size = checked.buffer_size = size - 8 - n;
  bool fast_ok = false, fast_threw = false, checked_ok = false;
  try {
    fast_ok = st::read_header_fast({text.data(), n}, fast);
  } catch (const st::HeaderFault&) {
    fast_threw = true;
  }
  try {
    st::read_header_checked({text.data(), n}, checked);
    checked_ok = true;
  } catch (const st::HeaderFault&) {
  }
  check(!fast_ok || checked_ok);
  check(!fast_threw || !checked_ok);
  if (!fast_ok) return;
  check(fast.metadata == checked.metadata && fast.entries.size() == checked.entries.size());
  for (std::size_t i = 0; i < fast.entries.size(); ++i) {
    check(same_entry(fast.entries[i], checked.entries[i]));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  check_readers_agree(data, size);
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

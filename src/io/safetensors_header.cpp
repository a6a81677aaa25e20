// What the two safetensors header readers share (safetensors_header.h).
#include "safetensors_header.h"

#include <algorithm>

#include "athanor/core/error.h"

namespace ath::detail::safetensors {

const DTypeName& dtype_info(DType d) {
  for (const DTypeName& n : kDTypes) {
    if (n.dtype == d) return n;
  }
  ATH_THROW(DTypeError, "safetensors: unknown dtype {}", static_cast<int>(d));
}

std::vector<OffsetSpan> offset_spans(const std::vector<SafetensorsEntry>& entries) {
  std::vector<OffsetSpan> spans(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    spans[i] = {entries[i].begin, entries[i].end, i};
  }
  return spans;
}

// The sort keys are plain integers, kept together in cache; entries are looked at only to name
// them in a fault.
void check_coverage(std::vector<OffsetSpan> spans, const std::vector<SafetensorsEntry>& entries,
                    uint64_t buffer_size) {
  // Files from the reference writer (and athanor's) with one dtype list tensors in offset order.
  if (!std::is_sorted(spans.begin(), spans.end())) std::sort(spans.begin(), spans.end());
  uint64_t expected = 0;
  const OffsetSpan* prev = nullptr;
  for (const OffsetSpan& span : spans) {
    if (span.begin < expected) {
      throw HeaderFault{fmt::format("tensor {}: data_offsets [{}, {}] overlap tensor {} [{}, {}]",
                                    quote_name(entries[span.index].name), span.begin, span.end,
                                    quote_name(entries[prev->index].name), prev->begin, prev->end)};
    }
    if (span.begin > expected) {
      throw HeaderFault{fmt::format(
          "tensor {}: data_offsets [{}, {}] leave bytes [{}, {}) of the "
          "buffer unused",
          quote_name(entries[span.index].name), span.begin, span.end, expected, span.begin)};
    }
    expected = span.end;
    prev = &span;
  }
  if (expected != buffer_size) {
    throw HeaderFault{
        fmt::format("the tensors cover {} bytes of the {}-byte buffer: the file has "
                    "{} trailing bytes",
                    expected, buffer_size, buffer_size - expected)};
  }
}

}  // namespace ath::detail::safetensors

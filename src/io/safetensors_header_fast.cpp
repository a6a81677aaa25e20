// The fast reader of a safetensors header (safetensors_header.h): simdjson On-Demand, one forward
// pass over the text, entries built in document order and then put in name order.
//
// Why a second reader: the checked reader's DOM writes the whole header out again (simdjson's
// tape and string copies, about twice the text) and then walks it in name order, i.e. at random,
// a cache miss or two per entry. Reading the text once, in order, is what makes a 1M-tensor
// header parse well under a second (bench/bench_safetensors.cpp). This reader names no fault: on
// anything it does not accept outright it returns false and the checked reader says what is wrong.
#include <simdjson.h>

#include <algorithm>

#include "safetensors_header.h"

namespace ath::detail::safetensors {
namespace {

namespace od = simdjson::ondemand;
using simdjson::SUCCESS;

// The shortest entry a header can hold, `"":{"dtype":"U8","shape":[],"data_offsets":[0,0]}`, is
// 49 bytes: a header of n bytes has at most n / 48 entries.
constexpr std::size_t kMinEntryText = 48;

// A key, as written (escapes and all), equal to `literal`: read in place, without unescaping it
// into the parser's string buffer. A field name written with escapes is declined (the checked
// reader takes it). The text is padded, so reading N bytes from any key stays in bounds.
template <std::size_t N>
bool is_raw_key(od::raw_json_string key, const char (&literal)[N]) {
  return std::memcmp(key.raw(), literal, N - 1) == 0 && key.raw()[N - 1] == '"';
}

// An entry as read, before it is put in name order: a few words, not a ~160-byte SafetensorsEntry
// (its name and dims point into the parser's string buffer and a shared dims array), so that
// reordering a million of them moves little memory.
struct Record {
  std::string_view name;
  uint64_t begin = 0, end = 0;
  uint32_t dims_at = 0;  // its dims are dims[dims_at, dims_at + ndim)
  uint8_t ndim = 0;
  DType dtype = kFloat32;
};

// One tensor entry: exactly dtype, shape and data_offsets, each once, with the checked reader's
// rules (safetensors_header_checked.cpp). Its dims are appended to `dims`.
bool read_entry(od::value value, uint64_t buffer_size, Record& r, std::vector<int64_t>& dims) {
  od::object fields;
  if (value.get_object().get(fields) != SUCCESS) return false;
  bool has_dtype = false, has_shape = false, has_offsets = false;
  NumelCounter numel;
  r.dims_at = static_cast<uint32_t>(dims.size());
  for (auto field : fields) {
    od::raw_json_string key;
    if (field.key().get(key) != SUCCESS) return false;
    if (is_raw_key(key, "dtype") && !has_dtype) {
      std::string_view name;
      if (field.value().get_string().get(name) != SUCCESS) return false;
      const std::optional<DType> dtype = dtype_named(name);
      if (!dtype) return false;
      r.dtype = *dtype;
      has_dtype = true;
    } else if (is_raw_key(key, "shape") && !has_shape) {
      od::array shape;
      if (field.value().get_array().get(shape) != SUCCESS) return false;
      for (auto dim : shape) {
        uint64_t d = 0;
        if (dim.get_uint64().get(d) != SUCCESS || r.ndim == kMaxDims ||
            d > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) || !numel.add(d)) {
          return false;
        }
        dims.push_back(static_cast<int64_t>(d));
        ++r.ndim;
      }
      has_shape = true;
    } else if (is_raw_key(key, "data_offsets") && !has_offsets) {
      od::array pair;
      if (field.value().get_array().get(pair) != SUCCESS) return false;
      uint64_t offsets[2] = {0, 0};
      std::size_t n = 0;
      for (auto offset : pair) {
        if (n == 2 || offset.get_uint64().get(offsets[n]) != SUCCESS) return false;
        ++n;
      }
      if (n != 2) return false;
      r.begin = offsets[0];
      r.end = offsets[1];
      has_offsets = true;
    } else {
      return false;  // an unknown or repeated field
    }
  }
  if (!has_dtype || !has_shape || !has_offsets) return false;
  const std::optional<uint64_t> nbytes = numel.nbytes(r.dtype);
  return nbytes && r.begin <= r.end && r.end <= buffer_size && r.end - r.begin == *nbytes;
}

bool read_metadata(od::value value, SafetensorsMetadata& out) {
  od::object object;
  if (value.get_object().get(object) != SUCCESS) return false;
  for (auto field : object) {
    std::string_view key, text;
    if (field.unescaped_key().get(key) != SUCCESS ||
        field.value().get_string().get(text) != SUCCESS) {
      return false;
    }
    if (!out.emplace(std::string(key), std::string(text)).second) return false;
  }
  return true;
}

// The records (document order) as entries in name order; false when a name repeats. The sort
// keys are 16 bytes, names compared only where their first 8 bytes agree.
bool build_in_name_order(const std::vector<Record>& records, const std::vector<int64_t>& dims,
                         std::vector<SafetensorsEntry>& entries, std::vector<OffsetSpan>& spans) {
  struct Key {
    uint64_t prefix;
    uint32_t index;
  };
  std::vector<Key> keys(records.size());
  for (std::size_t i = 0; i < records.size(); ++i) {
    keys[i] = {name_prefix(records[i].name), static_cast<uint32_t>(i)};
  }
  auto by_name = [&](const Key& a, const Key& b) {
    return a.prefix != b.prefix ? a.prefix < b.prefix
                                : records[a.index].name < records[b.index].name;
  };
  // Writers that list tensors in name order (the reference, for a file of one dtype) skip the sort.
  if (!std::is_sorted(keys.begin(), keys.end(), by_name)) {
    std::sort(keys.begin(), keys.end(), by_name);
  }
  entries.resize(keys.size());
  spans.resize(keys.size());
  for (std::size_t i = 0; i < keys.size(); ++i) {
    const Record& r = records[keys[i].index];
    if (i > 0 && keys[i].prefix == keys[i - 1].prefix &&
        r.name == records[keys[i - 1].index].name) {
      return false;
    }
    SafetensorsEntry& e = entries[i];
    e.name = r.name;
    e.dtype = r.dtype;
    e.shape.assign(dims.begin() + r.dims_at, dims.begin() + r.dims_at + r.ndim);
    e.begin = r.begin;
    e.end = r.end;
    spans[i] = {r.begin, r.end, i};
  }
  return true;
}

}  // namespace

bool read_header_fast(PaddedText text, SafetensorsHeader& h) {
  od::parser parser;
  od::document doc;
  if (parser.iterate(text.data, text.size, text.size + simdjson::SIMDJSON_PADDING).get(doc) !=
      SUCCESS) {
    return false;
  }
  od::object header;
  if (doc.get_object().get(header) != SUCCESS) return false;
  // Nothing but white space may follow the object. On-Demand (simdjson 3.0) stops reading at its
  // closing brace, so one skip over the object (bracket counting, no parsing) finds where it ends
  // before it is read from the start.
  std::string_view object_text;
  if (header.raw_json().get(object_text) != SUCCESS ||
      object_text.data() + object_text.size() != text.data + text.size) {
    return false;
  }
  doc.rewind();
  if (doc.get_object().get(header) != SUCCESS) return false;

  std::vector<Record> records;
  records.reserve(text.size / kMinEntryText + 1);
  std::vector<int64_t> dims;
  bool seen_metadata = false;
  for (auto field : header) {
    std::string_view key;
    od::value value;
    if (field.unescaped_key().get(key) != SUCCESS || field.value().get(value) != SUCCESS) {
      return false;
    }
    if (is_key(key, "__metadata__")) {
      if (seen_metadata || !read_metadata(value, h.metadata)) return false;
      seen_metadata = true;
      continue;
    }
    Record& r = records.emplace_back();
    r.name = key;  // in the parser's string buffer, which lives as long as `parser`
    if (!read_entry(value, h.buffer_size, r, dims)) return false;
  }
  std::vector<OffsetSpan> spans;
  if (!build_in_name_order(records, dims, h.entries, spans)) return false;
  check_coverage(std::move(spans), h.entries, h.buffer_size);  // the checked reader's fault
  return true;
}

}  // namespace ath::detail::safetensors

// The checked reader of a safetensors header (safetensors_header.h): simdjson's DOM, walked in
// name order, every fault named.
#include <simdjson.h>

#include <algorithm>
#include <array>
#include <limits>
#include <optional>

#include "athanor/core/error.h"
#include "safetensors_header.h"

namespace ath::detail::safetensors {
namespace {

// Valid in the format (some only in newer versions of it) but without an athanor dtype.
constexpr std::array<std::string_view, 13> kUnsupported{
    "I8",      "I16", "U16",     "U32",     "U64", "F8_E5M2", "F8_E4M3",
    "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2", "C64", "I4"};

// JSON-library messages may quote raw (even non-UTF-8) bytes of the input: keep them printable.
std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 300)) {
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return out;
}

// The header's JSON is parsed by simdjson's DOM parser: fully validated (syntax, UTF-8, numbers)
// in one linear pass at ~1 GB/s, duplicate keys kept (nlohmann's DOM silently keeps one of two;
// its callback parser rescans the top-level object after every entry, quadratic: 15 s for 40k
// tensors; its SAX lexer still took 2-4 s for a 1M-entry header). The grammar is then checked
// while walking it: header -> entry object -> "shape" / "data_offsets" array of integers, or
// header -> "__metadata__" object of strings. Nothing nests deeper than that (the parser stops
// at kMaxDepth), keys are unique, and no array is longer than any shape.
namespace sj = simdjson;

constexpr std::size_t kMaxDepth = 4;  // the document, header, entry, shape/offsets array

std::string text_of(sj::dom::element v) { return printable(sj::minify(v)); }

// A JSON integer in [0, max], or nothing (float, negative, string, ...).
std::optional<uint64_t> as_count(sj::dom::element v, uint64_t max) {
  uint64_t u = 0;
  if (v.get_uint64().get(u) == sj::SUCCESS && u <= max) return u;
  return std::nullopt;
}

// How faults name an entry; built only for a fault (quoting every name would cost more than
// parsing it).
std::string entry_name(std::string_view name) { return "tensor " + quote_name(name); }

DType parse_dtype(sj::dom::element v, std::string_view name) {
  std::string_view s;
  if (v.get_string().get(s)) throw HeaderFault{entry_name(name) + ": \"dtype\" is not a string"};
  if (std::optional<DType> d = dtype_named(s)) return *d;
  if (std::find(kUnsupported.begin(), kUnsupported.end(), s) != kUnsupported.end()) {
    throw HeaderFault{
        fmt::format("{}: dtype {} is not supported (athanor reads F32 F64 BF16 F16 "
                    "I64 I32 U8 BOOL)",
                    entry_name(name), s)};
  }
  throw HeaderFault{fmt::format("{}: unknown dtype {}", entry_name(name), quote_name(s))};
}

// An array field's elements; `fault` ends the message when the field is no array.
sj::dom::array short_array(sj::dom::element v, std::string_view name, const char* field,
                           bool quote_value, const char* fault) {
  sj::dom::array a;
  if (v.get_array().get(a)) {
    throw HeaderFault{fmt::format("{}: \"{}\" {}{}", entry_name(name), field,
                                  quote_value ? text_of(v) + " " : std::string(), fault)};
  }
  if (a.size() > kMaxArray) {
    throw HeaderFault{
        fmt::format("an array of more than {} elements: longer than any shape", kMaxArray)};
  }
  return a;
}

// One tensor entry, checked: exactly the fields dtype, shape and data_offsets; shape entries are
// counts whose product (with the dtype's size) fits int64; the offsets are two counts whose span
// inside the buffer is exactly the tensor's bytes.
SafetensorsEntry parse_entry(std::string_view name, sj::dom::element value, uint64_t buffer_size) {
  sj::dom::object fields;
  if (value.get_object().get(fields))
    throw HeaderFault{entry_name(name) + ": entry is not a JSON object"};
  std::optional<sj::dom::element> dtype, shape, offsets;
  for (sj::dom::key_value_pair f : fields) {
    std::optional<sj::dom::element>* slot = is_key(f.key, "dtype")          ? &dtype
                                            : is_key(f.key, "shape")        ? &shape
                                            : is_key(f.key, "data_offsets") ? &offsets
                                                                            : nullptr;
    if (slot == nullptr) {
      throw HeaderFault{
          fmt::format("{}: unexpected field {}", entry_name(name), quote_name(f.key))};
    }
    if (slot->has_value()) throw HeaderFault{fmt::format("duplicate key {}", quote_name(f.key))};
    *slot = f.value;
  }
  for (auto [field, field_name] :
       {std::pair{&dtype, "dtype"}, {&shape, "shape"}, {&offsets, "data_offsets"}}) {
    if (!field->has_value())
      throw HeaderFault{fmt::format("{}: missing \"{}\"", entry_name(name), field_name)};
  }
  SafetensorsEntry e;
  e.name = std::string(name);
  e.dtype = parse_dtype(*dtype, name);

  const sj::dom::array dims = short_array(*shape, name, "shape", false, "is not an array");
  if (dims.size() > kMaxDims) {
    throw HeaderFault{fmt::format("{}: {} dims, more than athanor's limit of {}", entry_name(name),
                                  dims.size(), kMaxDims)};
  }
  NumelCounter numel;
  std::size_t i = 0;
  for (sj::dom::element dim : dims) {
    auto d = as_count(dim, std::numeric_limits<int64_t>::max());
    if (!d) {
      throw HeaderFault{fmt::format("{}: shape entry {} ({}) is not a non-negative integer",
                                    entry_name(name), i, text_of(dim))};
    }
    e.shape.push_back(static_cast<int64_t>(*d));
    if (!numel.add(*d)) {
      throw HeaderFault{fmt::format("{}: shape {} overflows", entry_name(name), text_of(*shape))};
    }
    ++i;
  }
  const std::optional<uint64_t> nbytes = numel.nbytes(e.dtype);
  if (!nbytes) {
    throw HeaderFault{fmt::format("{}: shape {} overflows", entry_name(name), text_of(*shape))};
  }

  const char* not_two = "is not two non-negative integers";
  const sj::dom::array off = short_array(*offsets, name, "data_offsets", true, not_two);
  std::optional<uint64_t> begin, end;
  if (off.size() == 2) {
    begin = as_count(off.at(0).value_unsafe(), std::numeric_limits<uint64_t>::max());
    end = as_count(off.at(1).value_unsafe(), std::numeric_limits<uint64_t>::max());
  }
  if (!begin || !end) {
    throw HeaderFault{
        fmt::format("{}: \"data_offsets\" {} {}", entry_name(name), text_of(*offsets), not_two)};
  }
  if (*begin > *end) {
    throw HeaderFault{
        fmt::format("{}: data_offsets [{}, {}] begin after end", entry_name(name), *begin, *end)};
  }
  if (*end > buffer_size) {
    throw HeaderFault{fmt::format("{}: data_offsets [{}, {}] end past the buffer ({} bytes)",
                                  entry_name(name), *begin, *end, buffer_size)};
  }
  if (*end - *begin != *nbytes) {
    throw HeaderFault{
        fmt::format("{}: data_offsets [{}, {}] hold {} bytes, but {} of shape {} "
                    "need {}",
                    entry_name(name), *begin, *end, *end - *begin, dtype_info(e.dtype).name,
                    to_string(e.shape), *nbytes)};
  }
  e.begin = *begin;
  e.end = *end;
  return e;
}

SafetensorsMetadata parse_metadata(sj::dom::element value) {
  sj::dom::object object;
  if (value.get_object().get(object)) throw HeaderFault{"\"__metadata__\" is not a JSON object"};
  SafetensorsMetadata out;
  for (sj::dom::key_value_pair kv : object) {
    std::string_view text;
    if (kv.value.get_string().get(text)) {
      throw HeaderFault{
          fmt::format("\"__metadata__\" value for {} is not a string", quote_name(kv.key))};
    }
    if (!out.emplace(std::string(kv.key), std::string(text)).second) {
      throw HeaderFault{fmt::format("duplicate key {}", quote_name(kv.key))};
    }
  }
  return out;
}

// The header's tensor entries in name order (what keys() returns and lookups bisect), checked
// and built in that order: sorting light (prefix, name, DOM handle) keys and then building each
// entry once, in place, is far cheaper than sorting ~160-byte entries. No name twice.
void parse_entries_in_name_order(sj::dom::object header, SafetensorsHeader& h) {
  struct Item {
    uint64_t prefix;
    std::string_view name;
    sj::dom::element value;
  };
  std::vector<Item> items;
  items.reserve(header.size());
  bool seen_metadata = false;
  for (sj::dom::key_value_pair kv : header) {
    if (is_key(kv.key, "__metadata__")) {
      if (seen_metadata) throw HeaderFault{"duplicate key \"__metadata__\""};
      seen_metadata = true;
      h.metadata = parse_metadata(kv.value);
    } else {
      items.push_back({name_prefix(kv.key), kv.key, kv.value});
    }
  }
  std::sort(items.begin(), items.end(), [](const Item& a, const Item& b) {
    return a.prefix != b.prefix ? a.prefix < b.prefix : a.name < b.name;
  });
  h.entries.reserve(items.size());
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (i > 0 && items[i].prefix == items[i - 1].prefix && items[i].name == items[i - 1].name) {
      throw HeaderFault{fmt::format("duplicate key {}", quote_name(items[i].name))};
    }
    h.entries.push_back(parse_entry(items[i].name, items[i].value, h.buffer_size));
  }
}

}  // namespace

void read_header_checked(PaddedText text, SafetensorsHeader& h) {
  sj::dom::parser parser;
  if (parser.allocate(text.size, kMaxDepth) != sj::SUCCESS) {
    throw HeaderFault{fmt::format("cannot allocate the parser for a {}-byte header", text.size)};
  }
  sj::dom::element root;
  const sj::error_code err =
      parser.parse(text.data, text.size, /*realloc_if_needed=*/false).get(root);
  if (err != sj::SUCCESS) {
    if (err == sj::DEPTH_ERROR) throw HeaderFault{"nested deeper than a safetensors header can be"};
    throw HeaderFault{std::string("header is not valid JSON: ") + sj::error_message(err)};
  }
  sj::dom::object header;
  if (root.get_object().get(header)) throw HeaderFault{"header is not a JSON object"};
  parse_entries_in_name_order(header, h);
  check_coverage(offset_spans(h.entries), h.entries, h.buffer_size);
}

}  // namespace ath::detail::safetensors

#include "safetensors_format.h"

#include <simdjson.h>

#include <algorithm>
#include <array>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "athanor/core/error.h"

namespace ath::detail {
namespace {

using nlohmann::json;

struct DTypeName {
  std::string_view name;
  DType dtype;
  int rank;  // position in the reference's Dtype enum: it orders tensors in the buffer
};
// The reference enum is BOOL U8 I8 F8_E5M2 F8_E4M3 I16 U16 F16 BF16 I32 U32 F32 F64 I64 U64
// ("increasing alignment order"); only the relative order of our eight matters.
constexpr std::array<DTypeName, 8> kDTypes{{{"BOOL", kBool, 0},
                                            {"U8", kUInt8, 1},
                                            {"F16", kFloat16, 7},
                                            {"BF16", kBFloat16, 8},
                                            {"I32", kInt32, 9},
                                            {"F32", kFloat32, 11},
                                            {"F64", kFloat64, 12},
                                            {"I64", kInt64, 13}}};
// Valid in the format (some only in newer versions of it) but without an athanor dtype.
constexpr std::array<std::string_view, 13> kUnsupported{
    "I8",      "I16", "U16",     "U32",     "U64", "F8_E5M2", "F8_E4M3",
    "F8_E8M0", "F4",  "F6_E2M3", "F6_E3M2", "C64", "I4"};

const DTypeName& dtype_info(DType d) {
  for (const DTypeName& n : kDTypes) {
    if (n.dtype == d) return n;
  }
  ATH_THROW(DTypeError, "safetensors: unknown dtype {}", static_cast<int>(d));
}

// JSON-library messages may quote raw (even non-UTF-8) bytes of the input: keep them printable.
std::string printable(std::string_view s) {
  std::string out;
  for (char c : s.substr(0, 300)) {
    out += (c >= 0x20 && c < 0x7f) ? c : '?';
  }
  return out;
}

// Thrown by the parser callback; turned into a FormatError with the source name.
struct HeaderFault {
  std::string what;
};

// The header's JSON is parsed by simdjson's DOM parser: fully validated (syntax, UTF-8, numbers)
// in one linear pass at ~1 GB/s, duplicate keys kept (nlohmann's DOM silently keeps one of two;
// its callback parser rescans the top-level object after every entry, quadratic: 15 s for 40k
// tensors; its SAX lexer still took 2-4 s for a 1M-entry header). The grammar is then checked
// while walking it: header -> entry object -> "shape" / "data_offsets" array of integers, or
// header -> "__metadata__" object of strings. Nothing nests deeper than that (the parser stops
// at kMaxDepth), keys are unique, and no array is longer than any shape.
namespace sj = simdjson;

constexpr std::size_t kMaxDepth = 4;  // the document, header, entry, shape/offsets array
constexpr std::size_t kMaxArray = 64;

std::string text_of(sj::dom::element v) { return printable(sj::minify(v)); }

// A JSON integer in [0, max], or nothing (float, negative, string, ...).
std::optional<uint64_t> as_count(sj::dom::element v, uint64_t max) {
  uint64_t u = 0;
  if (v.is_uint64() && !v.get_uint64().get(u) && u <= max) return u;
  return std::nullopt;
}

// How faults name an entry; built only for a fault (quoting every name would cost more than
// parsing it).
std::string entry_name(std::string_view name) { return "tensor " + quote_name(name); }

DType parse_dtype(sj::dom::element v, std::string_view name) {
  std::string_view s;
  if (v.get_string().get(s)) throw HeaderFault{entry_name(name) + ": \"dtype\" is not a string"};
  for (const DTypeName& n : kDTypes) {
    if (n.name == s) return n.dtype;
  }
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
    std::optional<sj::dom::element>* slot = f.key == "dtype"          ? &dtype
                                            : f.key == "shape"        ? &shape
                                            : f.key == "data_offsets" ? &offsets
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
  // numel in u64 with overflow checks, in order, as the reference does (so [2^40, 2^40, 0] is
  // rejected even though its product is 0); and, beyond the reference, the non-zero dims'
  // product must fit int64 however the zeros are placed ([0, 2^40, 2^40] too): athanor's strides
  // hold it.
  uint64_t numel = 1, nonzero = 1;
  std::size_t i = 0;
  for (sj::dom::element dim : dims) {
    auto d = as_count(dim, std::numeric_limits<int64_t>::max());
    if (!d) {
      throw HeaderFault{fmt::format("{}: shape entry {} ({}) is not a non-negative integer",
                                    entry_name(name), i, text_of(dim))};
    }
    e.shape.push_back(static_cast<int64_t>(*d));
    if (*d != 0 && numel > std::numeric_limits<uint64_t>::max() / *d) {
      throw HeaderFault{fmt::format("{}: shape {} overflows", entry_name(name), text_of(*shape))};
    }
    if (*d != 0 && nonzero > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / *d) {
      throw HeaderFault{fmt::format("{}: shape {} overflows", entry_name(name), text_of(*shape))};
    }
    numel *= *d;
    if (*d != 0) nonzero *= *d;
    ++i;
  }
  const uint64_t itemsize = element_size(e.dtype);
  if (numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / itemsize) {
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
  if (*end - *begin != numel * itemsize) {
    throw HeaderFault{
        fmt::format("{}: data_offsets [{}, {}] hold {} bytes, but {} of shape {} "
                    "need {}",
                    entry_name(name), *begin, *end, *end - *begin, dtype_info(e.dtype).name,
                    to_string(e.shape), numel * itemsize)};
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

// The first 8 bytes of a name, big-endian and zero-padded: integer order is the names' byte order
// as far as the prefixes differ. Sorting by (prefix, name) keeps most comparisons on integers
// held in the sort keys themselves.
uint64_t name_prefix(std::string_view name) {
  uint64_t p = 0;
  for (std::size_t i = 0; i < 8; ++i) {
    p = (p << 8) | (i < name.size() ? static_cast<uint8_t>(name[i]) : 0u);
  }
  return p;
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
    if (kv.key == "__metadata__") {
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
    if (i > 0 && items[i].name == items[i - 1].name) {
      throw HeaderFault{fmt::format("duplicate key {}", quote_name(items[i].name))};
    }
    h.entries.push_back(parse_entry(items[i].name, items[i].value, h.buffer_size));
  }
}

// The reference sorts entries by offsets and then requires them to tile [0, buffer_size).
// `entries` are in name order, so their index breaks ties between equal offsets by name; the
// sort keys are plain integers, kept together in cache.
void check_coverage(const std::vector<SafetensorsEntry>& entries, uint64_t buffer_size) {
  struct Key {
    uint64_t begin, end;
    std::size_t index;
    auto operator<=>(const Key&) const = default;
  };
  std::vector<Key> by_offset(entries.size());
  for (std::size_t i = 0; i < entries.size(); ++i) {
    by_offset[i] = {entries[i].begin, entries[i].end, i};
  }
  std::sort(by_offset.begin(), by_offset.end());
  uint64_t expected = 0;
  const SafetensorsEntry* prev = nullptr;
  for (const Key& key : by_offset) {
    const SafetensorsEntry* e = &entries[key.index];
    if (e->begin < expected) {
      throw HeaderFault{fmt::format("tensor {}: data_offsets [{}, {}] overlap tensor {} [{}, {}]",
                                    quote_name(e->name), e->begin, e->end, quote_name(prev->name),
                                    prev->begin, prev->end)};
    }
    if (e->begin > expected) {
      throw HeaderFault{
          fmt::format("tensor {}: data_offsets [{}, {}] leave bytes [{}, {}) of the "
                      "buffer unused",
                      quote_name(e->name), e->begin, e->end, expected, e->begin)};
    }
    expected = e->end;
    prev = e;
  }
  if (expected != buffer_size) {
    throw HeaderFault{
        fmt::format("the tensors cover {} bytes of the {}-byte buffer: the file has "
                    "{} trailing bytes",
                    expected, buffer_size, buffer_size - expected)};
  }
}

}  // namespace

std::string quote_name(std::string_view name) {
  constexpr std::size_t kMax = 120;
  std::string q =
      json(std::string(name.substr(0, kMax))).dump(-1, ' ', false, json::error_handler_t::replace);
  if (name.size() > kMax) q += "...";
  return q;
}

SafetensorsHeader parse_safetensors_header(std::span<const uint8_t> file, std::string_view source) {
  auto fail = [&](const std::string& what) -> FormatError {
    return FormatError(fmt::format("{}: {}", source, what));
  };
  if (file.size() < 8) {
    throw fail(fmt::format("{} bytes: too short for the 8-byte header length", file.size()));
  }
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | file[static_cast<std::size_t>(i)];
  // The most common wrong file is PyTorch's own format (torch.save: a zip archive, or a bare
  // pickle before PyTorch 1.6; what Lightning writes as .ckpt). Its first bytes read as an
  // impossible header length; say what it is instead. (A real header never gets here.)
  if (n > kSafetensorsMaxHeader || n > file.size() - 8) {
    const bool zip = file[0] == 'P' && file[1] == 'K' && file[2] == 3 && file[3] == 4;
    const bool pickle = file[0] == 0x80 && file[1] >= 2 && file[1] <= 5;
    if (zip || pickle) {
      throw fail(
          "this is a PyTorch checkpoint (torch.save's zip/pickle format, e.g. a Lightning .ckpt), "
          "not safetensors: convert it with tools/lightning_ckpt_to_athanor.py (see "
          "docs/trainer.md)");
    }
  }
  if (n > kSafetensorsMaxHeader) {
    throw fail(fmt::format("header length {} exceeds the {}-byte limit", n, kSafetensorsMaxHeader));
  }
  if (n > file.size() - 8) {
    throw fail(fmt::format("header length {} runs past the end of the data ({} bytes): truncated?",
                           n, file.size()));
  }
  SafetensorsHeader h;
  h.buffer_offset = 8 + n;
  h.buffer_size = file.size() - h.buffer_offset;
  const char* text = reinterpret_cast<const char*>(file.data() + 8);
  try {
    sj::dom::parser parser;
    if (parser.allocate(n, kMaxDepth) != sj::SUCCESS) {
      throw HeaderFault{fmt::format("cannot allocate the parser for a {}-byte header", n)};
    }
    // simdjson reads up to SIMDJSON_PADDING bytes past the text (never using them): the tensor
    // bytes after the header usually provide them, else the header is copied into a padded buffer.
    sj::dom::element root;
    const bool padded_in_place = file.size() - h.buffer_offset >= sj::SIMDJSON_PADDING;
    const sj::padded_string copy =
        padded_in_place ? sj::padded_string() : sj::padded_string(text, n);
    const sj::error_code err = padded_in_place
                                   ? parser.parse(text, n, /*realloc_if_needed=*/false).get(root)
                                   : parser.parse(copy).get(root);
    if (err != sj::SUCCESS) {
      if (err == sj::DEPTH_ERROR) {
        throw HeaderFault{"nested deeper than a safetensors header can be"};
      }
      throw HeaderFault{std::string("header is not valid JSON: ") + sj::error_message(err)};
    }
    sj::dom::object header;
    if (root.get_object().get(header)) throw HeaderFault{"header is not a JSON object"};
    parse_entries_in_name_order(header, h);
    check_coverage(h.entries, h.buffer_size);
  } catch (const HeaderFault& f) {
    throw fail(f.what);
  }
  return h;
}

SafetensorsPlan plan_safetensors(const StateDict& tensors, const SafetensorsMetadata& metadata) {
  SafetensorsPlan plan;
  for (const auto& entry : tensors) {
    const auto& [name, t] = entry;
    ATH_CHECK(name != "__metadata__", ValueError,
              "save_safetensors: \"__metadata__\" is reserved and cannot name a tensor");
    ATH_CHECK(t.defined(), ValueError, "save_safetensors: tensor {} is undefined",
              quote_name(name));
    ATH_CHECK(t.device() == kCPU, ValueError, "save_safetensors: tensor {} is not on the CPU",
              quote_name(name));
    plan.order.push_back(&entry);
  }
  // Descending dtype alignment, then name: the order the reference writer uses.
  std::sort(plan.order.begin(), plan.order.end(), [](const auto* a, const auto* b) {
    int ra = dtype_info(a->second.dtype()).rank, rb = dtype_info(b->second.dtype()).rank;
    return ra != rb ? ra > rb : a->first < b->first;
  });

  nlohmann::ordered_json doc = nlohmann::ordered_json::object();
  if (!metadata.empty()) doc["__metadata__"] = metadata;
  for (const auto* e : plan.order) {
    const Tensor& t = e->second;
    uint64_t nbytes = t.nbytes();
    doc[e->first] = {{"dtype", dtype_info(t.dtype()).name},
                     {"shape", std::vector<int64_t>(t.shape().begin(), t.shape().end())},
                     {"data_offsets", {plan.buffer_size, plan.buffer_size + nbytes}}};
    plan.buffer_size += nbytes;
  }
  std::string text;
  try {
    text = doc.dump();  // compact, like serde_json::to_string
  } catch (const nlohmann::json::type_error&) {
    // Find the culprit for the message.
    for (const auto& [k, v] : metadata) {
      for (const std::string* s : {&k, &v}) {
        try {
          (void)nlohmann::json(*s).dump();
        } catch (const nlohmann::json::type_error&) {
          ATH_THROW(ValueError, "save_safetensors: metadata string {} is not valid UTF-8",
                    quote_name(*s));
        }
      }
    }
    for (const auto* e : plan.order) {
      try {
        (void)nlohmann::json(e->first).dump();
      } catch (const nlohmann::json::type_error&) {
        ATH_THROW(ValueError, "save_safetensors: tensor name {} is not valid UTF-8",
                  quote_name(e->first));
      }
    }
    throw;
  }
  text.append((8 - text.size() % 8) % 8, ' ');
  plan.header.resize(8);
  for (int i = 0; i < 8; ++i) {
    plan.header[static_cast<std::size_t>(i)] = static_cast<char>((text.size() >> (8 * i)) & 0xff);
  }
  plan.header += text;
  return plan;
}

}  // namespace ath::detail

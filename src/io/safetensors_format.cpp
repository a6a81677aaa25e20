#include "safetensors_format.h"

#include <algorithm>
#include <array>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>

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

// The header's JSON, read by a SAX handler in one linear pass. nlohmann's DOM silently keeps one
// of two equal keys and nests without limit, and its callback parser (which could check that)
// rescans the top-level object after every entry: quadratic, 15 s for 40k tensors. Here the
// top-level object is never built as a map: each entry's value becomes a small DOM of its own
// (nlohmann's linear DOM builder), collected in a vector that is sorted by name afterwards, which
// also finds duplicate names. Inside entries, duplicate keys, anything deeper than entry ->
// shape/offsets array, and arrays longer than any shape (so a 100 MB "[0,0,0,..." costs no
// gigabytes of JSON values) are faults.
class HeaderSax {
 public:
  static constexpr std::size_t kMaxArray = 64;
  using Items = std::vector<std::pair<std::string, json>>;

  explicit HeaderSax(Items& items) : items_(items) {}

  bool null() {
    return scalar([](auto& d) { return d.null(); });
  }
  bool boolean(bool v) {
    return scalar([v](auto& d) { return d.boolean(v); });
  }
  bool number_integer(json::number_integer_t v) {
    return scalar([v](auto& d) { return d.number_integer(v); });
  }
  bool number_unsigned(json::number_unsigned_t v) {
    return scalar([v](auto& d) { return d.number_unsigned(v); });
  }
  bool number_float(json::number_float_t v, const std::string& s) {
    return scalar([&](auto& d) { return d.number_float(v, s); });
  }
  bool string(std::string& v) {
    return scalar([&](auto& d) { return d.string(v); });
  }
  bool binary(json::binary_t& v) {
    return scalar([&](auto& d) { return d.binary(v); });
  }

  bool start_object(std::size_t n) {
    if (open_.empty()) {  // the header itself
      open_.push_back({});
      return true;
    }
    check_depth();
    begin_value();
    open_.push_back({});
    return dom_->start_object(n);
  }
  bool key(std::string& k) {
    if (open_.size() == 1) {
      key_ = std::move(k);
      return true;
    }
    if (!open_.back().keys.insert(k).second) {
      throw HeaderFault{fmt::format("duplicate key {}", quote_name(k))};
    }
    return dom_->key(k);
  }
  bool end_object() {
    open_.pop_back();
    if (open_.empty()) return true;
    const bool ok = dom_->end_object();
    end_value();
    return ok;
  }
  bool start_array(std::size_t n) {
    if (open_.empty()) throw HeaderFault{"header is not a JSON object"};
    check_depth();
    begin_value();
    open_.push_back({.is_array = true});
    return dom_->start_array(n);
  }
  bool end_array() {
    open_.pop_back();
    const bool ok = dom_->end_array();
    end_value();
    return ok;
  }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) {
    throw HeaderFault{"header is not valid JSON: " + printable(e.what())};
  }

 private:
  struct Container {
    bool is_array = false;
    std::size_t elements = 0;
    std::set<std::string> keys;
  };
  using Dom = nlohmann::detail::json_sax_dom_parser<json>;

  template <class Event>
  bool scalar(Event&& event) {
    if (open_.empty()) throw HeaderFault{"header is not a JSON object"};
    begin_value();
    const bool ok = event(*dom_);
    end_value();
    return ok;
  }
  // Containers go no deeper than header -> entry -> shape/offsets array.
  void check_depth() const {
    if (open_.size() > 2) throw HeaderFault{"nested deeper than a safetensors header can be"};
  }
  // A value starts: at the top level, a new entry (and its DOM builder); deeper, an element.
  void begin_value() {
    if (open_.size() == 1) {
      value_ = json();
      dom_.emplace(value_);
      return;
    }
    Container& c = open_.back();
    if (c.is_array && ++c.elements > kMaxArray) {
      throw HeaderFault{
          fmt::format("an array of more than {} elements: longer than any shape", kMaxArray)};
    }
  }
  // A value ended: back at the top level, the entry is complete.
  void end_value() {
    if (open_.size() != 1) return;
    items_.emplace_back(std::move(key_), std::move(value_));
    dom_.reset();
  }

  Items& items_;
  std::vector<Container> open_;
  std::string key_;
  json value_;
  std::optional<Dom> dom_;
};

// A JSON integer in [0, max], or nothing (float, negative, string, ...).
std::optional<uint64_t> as_count(const json& v, uint64_t max) {
  if (v.is_number_unsigned()) {
    uint64_t u = v.get<uint64_t>();
    if (u <= max) return u;
  } else if (v.is_number_integer()) {
    int64_t i = v.get<int64_t>();
    if (i >= 0 && static_cast<uint64_t>(i) <= max) return static_cast<uint64_t>(i);
  }
  return std::nullopt;
}

DType parse_dtype(const json& v, const std::string& where) {
  if (!v.is_string()) throw HeaderFault{where + ": \"dtype\" is not a string"};
  const std::string& s = v.get_ref<const std::string&>();
  for (const DTypeName& n : kDTypes) {
    if (n.name == s) return n.dtype;
  }
  if (std::find(kUnsupported.begin(), kUnsupported.end(), s) != kUnsupported.end()) {
    throw HeaderFault{
        fmt::format("{}: dtype {} is not supported (athanor reads F32 F64 BF16 F16 "
                    "I64 I32 U8 BOOL)",
                    where, s)};
  }
  throw HeaderFault{fmt::format("{}: unknown dtype {}", where, quote_name(s))};
}

SafetensorsEntry parse_entry(const std::string& name, const json& v, uint64_t buffer_size) {
  const std::string where = "tensor " + quote_name(name);
  if (!v.is_object()) throw HeaderFault{where + ": entry is not a JSON object"};
  for (const char* field : {"dtype", "shape", "data_offsets"}) {
    if (!v.contains(field)) throw HeaderFault{fmt::format("{}: missing \"{}\"", where, field)};
  }
  if (v.size() != 3) {
    for (const auto& [k, unused] : v.items()) {
      if (k != "dtype" && k != "shape" && k != "data_offsets") {
        throw HeaderFault{fmt::format("{}: unexpected field {}", where, quote_name(k))};
      }
    }
  }
  SafetensorsEntry e;
  e.name = name;
  e.dtype = parse_dtype(v["dtype"], where);

  const json& shape = v["shape"];
  if (!shape.is_array()) throw HeaderFault{where + ": \"shape\" is not an array"};
  if (shape.size() > kMaxDims) {
    throw HeaderFault{
        fmt::format("{}: {} dims, more than athanor's limit of {}", where, shape.size(), kMaxDims)};
  }
  // numel in u64 with overflow checks, in order, as the reference does (so [2^40, 2^40, 0] is
  // rejected even though its product is 0).
  uint64_t numel = 1;
  for (std::size_t i = 0; i < shape.size(); ++i) {
    auto d = as_count(shape[i], std::numeric_limits<int64_t>::max());
    if (!d) {
      throw HeaderFault{fmt::format("{}: shape entry {} ({}) is not a non-negative integer", where,
                                    i, printable(shape[i].dump()))};
    }
    e.shape.push_back(static_cast<int64_t>(*d));
    if (*d != 0 && numel > std::numeric_limits<uint64_t>::max() / *d) {
      throw HeaderFault{fmt::format("{}: shape {} overflows", where, printable(shape.dump()))};
    }
    numel *= *d;
  }
  const uint64_t itemsize = element_size(e.dtype);
  if (numel > static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) / itemsize) {
    throw HeaderFault{fmt::format("{}: shape {} overflows", where, printable(shape.dump()))};
  }

  const json& off = v["data_offsets"];
  std::optional<uint64_t> begin, end;
  if (off.is_array() && off.size() == 2) {
    begin = as_count(off[0], std::numeric_limits<uint64_t>::max());
    end = as_count(off[1], std::numeric_limits<uint64_t>::max());
  }
  if (!begin || !end) {
    throw HeaderFault{fmt::format("{}: \"data_offsets\" {} is not two non-negative integers", where,
                                  printable(off.dump()))};
  }
  if (*begin > *end) {
    throw HeaderFault{
        fmt::format("{}: data_offsets [{}, {}] begin after end", where, *begin, *end)};
  }
  if (*end > buffer_size) {
    throw HeaderFault{fmt::format("{}: data_offsets [{}, {}] end past the buffer ({} bytes)", where,
                                  *begin, *end, buffer_size)};
  }
  if (*end - *begin != numel * itemsize) {
    throw HeaderFault{
        fmt::format("{}: data_offsets [{}, {}] hold {} bytes, but {} of shape {} "
                    "need {}",
                    where, *begin, *end, *end - *begin, dtype_info(e.dtype).name,
                    to_string(e.shape), numel * itemsize)};
  }
  e.begin = *begin;
  e.end = *end;
  return e;
}

SafetensorsMetadata parse_metadata(const json& v) {
  if (!v.is_object()) throw HeaderFault{"\"__metadata__\" is not a JSON object"};
  SafetensorsMetadata out;
  for (const auto& [k, value] : v.items()) {
    if (!value.is_string()) {
      throw HeaderFault{
          fmt::format("\"__metadata__\" value for {} is not a string", quote_name(k))};
    }
    out.emplace(k, value.get<std::string>());
  }
  return out;
}

// The reference sorts entries by offsets and then requires them to tile [0, buffer_size).
void check_coverage(std::vector<SafetensorsEntry>& entries, uint64_t buffer_size) {
  std::vector<const SafetensorsEntry*> by_offset;
  by_offset.reserve(entries.size());
  for (const auto& e : entries) by_offset.push_back(&e);
  std::sort(by_offset.begin(), by_offset.end(), [](const auto* a, const auto* b) {
    return std::tie(a->begin, a->end, a->name) < std::tie(b->begin, b->end, b->name);
  });
  uint64_t expected = 0;
  const SafetensorsEntry* prev = nullptr;
  for (const SafetensorsEntry* e : by_offset) {
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
    HeaderSax::Items items;
    HeaderSax sax(items);
    json::sax_parse(text, text + n, &sax);
    std::sort(items.begin(), items.end(),
              [](const auto& a, const auto& b) { return a.first < b.first; });  // name order
    for (std::size_t i = 1; i < items.size(); ++i) {
      if (items[i].first == items[i - 1].first) {
        throw HeaderFault{fmt::format("duplicate key {}", quote_name(items[i].first))};
      }
    }
    h.entries.reserve(items.size());
    for (const auto& [key, value] : items) {
      if (key == "__metadata__") {
        h.metadata = parse_metadata(value);
      } else {
        h.entries.push_back(parse_entry(key, value, h.buffer_size));
      }
    }
    check_coverage(h.entries, h.buffer_size);
  } catch (const HeaderFault& f) {
    throw fail(f.what);
  } catch (const json::exception& e) {
    throw fail("header is not valid JSON: " + printable(e.what()));
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

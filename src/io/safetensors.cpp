#include "athanor/io/safetensors.h"

#include <algorithm>
#include <bit>

#include "athanor/core/error.h"
#include "athanor/io/atomic_file.h"
#include "mapped_file.h"
#include "safetensors_format.h"
#include "tensor_bytes.h"

namespace ath {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; a big-endian host would need byte swaps");

namespace {

void check_bools(const SafetensorsEntry& e, const uint8_t* p, std::string_view source) {
  if (e.dtype != kBool) return;
  int64_t bad = detail::first_invalid_bool(p, e.end - e.begin);
  ATH_CHECK(bad < 0, FormatError, "{}: tensor {}: BOOL element {} has byte value {}, not 0 or 1",
            source, detail::quote_name(e.name), bad, bad < 0 ? 0 : p[bad]);
}

template <class Write>
void write_all(const detail::SafetensorsPlan& plan, Write&& write) {
  write(plan.header.data(), plan.header.size());
  for (const auto* e : plan.order) {
    detail::for_each_tensor_chunk(e->second, [&](const void* p, std::size_t n) { write(p, n); });
  }
}

}  // namespace

std::string_view safetensors_dtype_name(DType dtype) {
  switch (dtype) {
    case kBool:
      return "BOOL";
    case kUInt8:
      return "U8";
    case kInt32:
      return "I32";
    case kInt64:
      return "I64";
    case kFloat16:
      return "F16";
    case kBFloat16:
      return "BF16";
    case kFloat32:
      return "F32";
    case kFloat64:
      return "F64";
  }
  return "?";
}

std::vector<uint8_t> serialize_safetensors(const StateDict& tensors,
                                           const SafetensorsMetadata& metadata) {
  detail::SafetensorsPlan plan = detail::plan_safetensors(tensors, metadata);
  std::vector<uint8_t> out;
  out.reserve(plan.header.size() + plan.buffer_size);
  write_all(plan, [&](const void* p, std::size_t n) {
    const auto* b = static_cast<const uint8_t*>(p);
    out.insert(out.end(), b, b + n);
  });
  return out;
}

void save_safetensors(const std::string& path, const StateDict& tensors,
                      const SafetensorsMetadata& metadata) {
  // Validate and plan before the temporary file exists: a bad name leaves no trace on disk.
  detail::SafetensorsPlan plan = detail::plan_safetensors(tensors, metadata);
  AtomicFileWriter out(path);
  write_all(plan, [&](const void* p, std::size_t n) { out.write(p, n); });
  out.commit();
}

SafetensorsData parse_safetensors(std::span<const uint8_t> bytes, std::string_view source) {
  detail::SafetensorsHeader h = detail::parse_safetensors_header(bytes, source);
  SafetensorsData out;
  out.metadata = std::move(h.metadata);
  const uint8_t* buffer = bytes.data() + h.buffer_offset;
  for (const SafetensorsEntry& e : h.entries) {
    check_bools(e, buffer + e.begin, source);
    out.tensors.insert(e.name, detail::tensor_from_bytes(buffer + e.begin, e.dtype, e.shape));
  }
  return out;
}

SafetensorsData load_safetensors(const std::string& path) {
  SafetensorsFile f(path);
  return {f.state_dict(), f.metadata()};
}

// ---- SafetensorsFile --------------------------------------------------------------------------

struct SafetensorsFile::Mapping : detail::MappedFile {
  using MappedFile::MappedFile;
};

SafetensorsFile::SafetensorsFile(const std::string& path)
    : path_(path), mapping_(std::make_shared<const Mapping>(path)) {
  detail::SafetensorsHeader h = detail::parse_safetensors_header(mapping_->bytes(), path_);
  entries_ = std::move(h.entries);
  metadata_ = std::move(h.metadata);
  buffer_ = mapping_->data() + h.buffer_offset;
}

std::vector<std::string> SafetensorsFile::keys() const {
  std::vector<std::string> out;
  out.reserve(entries_.size());
  for (const auto& e : entries_) out.push_back(e.name);
  return out;
}

bool SafetensorsFile::contains(std::string_view name) const {
  auto it =
      std::lower_bound(entries_.begin(), entries_.end(), name,
                       [](const SafetensorsEntry& e, std::string_view n) { return e.name < n; });
  return it != entries_.end() && it->name == name;
}

const SafetensorsEntry& SafetensorsFile::entry(std::string_view name) const {
  auto it =
      std::lower_bound(entries_.begin(), entries_.end(), name,
                       [](const SafetensorsEntry& e, std::string_view n) { return e.name < n; });
  ATH_CHECK(it != entries_.end() && it->name == name, KeyError, "{}: no tensor {}", path_,
            detail::quote_name(name));
  return *it;
}

Tensor SafetensorsFile::get(std::string_view name) const {
  const SafetensorsEntry& e = entry(name);
  uint8_t* p = const_cast<uint8_t*>(buffer_) + e.begin;  // the mapping is private: writable
  const std::size_t nbytes = e.end - e.begin;
  check_bools(e, p, path_);
  if (nbytes == 0 || reinterpret_cast<uintptr_t>(p) % element_size(e.dtype) != 0) {
    return detail::tensor_from_bytes(p, e.dtype, e.shape);
  }
  // The storage's deleter holds the mapping: it is unmapped when the last view goes.
  auto storage = StorageImpl::wrap(p, nbytes, [keep = mapping_](void*) {});
  return Tensor(std::make_shared<TensorImpl>(std::move(storage), e.shape,
                                             contiguous_strides(e.shape), 0, e.dtype));
}

StateDict SafetensorsFile::state_dict() const {
  StateDict out;
  for (const auto& e : entries_) out.insert(e.name, get(e.name));
  return out;
}

}  // namespace ath

// safetensors: Hugging Face's tensor file format (https://github.com/huggingface/safetensors), the
// way weights move between PyTorch and athanor.
//
//   // [8 bytes: little-endian u64 N][N bytes: UTF-8 JSON header][byte buffer]
//   // header = {"__metadata__": {"k": "v"},                               (optional)
//   //           "fc.weight": {"dtype": "F32", "shape": [5, 6], "data_offsets": [0, 120]}, ...}
//
// Offsets are relative to the buffer; the tensors' ranges cover the buffer exactly (no holes, no
// overlap, nothing after the last one), as the reference implementation requires.
//
//   #include "athanor/nn/linear.h"
//   nn::Linear model({.in = 6, .out = 5});                       // keys "weight", "bias"
//   save_safetensors("model.safetensors", model.state_dict(), {{"format", "pt"}});
//   SafetensorsData d = load_safetensors("model.safetensors");   // zero-copy (memory-mapped)
//   model.load_state_dict(d.tensors);
//
//   SafetensorsFile f("model.safetensors");                      // lazy: one tensor at a time
//   Tensor w = f.get("weight");
//   assert(w.shape() == Shape({5, 6}) && f.metadata().at("format") == "pt");
//
// Dtypes: F32 F64 BF16 F16 I64 I32 U8 BOOL. Files are written the way the Python package writes
// them (tensors ordered by descending dtype alignment, then name; header padded with spaces to a
// multiple of 8 bytes), atomically (a temporary file renamed over the destination). Nothing read
// is trusted: any malformed file or buffer is an ath::FormatError naming it and the fault, never a
// crash or an out-of-bounds read.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "athanor/tensor/state_dict.h"

namespace ath {

using SafetensorsMetadata = std::map<std::string, std::string>;

// What a safetensors file holds: the tensors (in name order, as Python's safe_open().keys()) and
// the free-form "__metadata__" strings.
struct SafetensorsData {
  StateDict tensors;
  SafetensorsMetadata metadata;
};

// One tensor's header entry. begin/end are byte offsets into the buffer that follows the header.
struct SafetensorsEntry {
  std::string name;
  DType dtype = kFloat32;
  Shape shape;
  uint64_t begin = 0, end = 0;
};

// Writes `tensors` (any strides; non-contiguous ones are written row-major) to `path`: a temporary
// file in the same directory is written, fsync'ed and renamed over `path`, then the directory is
// fsync'ed. On failure `path` is untouched, the temporary file is removed, and the error is an
// IOError naming the path and the system's reason. A key "__metadata__" or one that is not valid
// UTF-8 is a ValueError.
void save_safetensors(const std::string& path, const StateDict& tensors,
                      const SafetensorsMetadata& metadata = {});

// Reads a whole file. The tensors view a private (copy-on-write) memory mapping of the file:
// no copy is made, writes to them never reach the file, and the mapping lives as long as any
// tensor using it. (A tensor whose bytes are not aligned for its dtype, possible only in files
// written by other tools, is copied instead.) Missing/unreadable file: IOError.
SafetensorsData load_safetensors(const std::string& path);

// The same format in memory. serialize produces exactly the bytes save_safetensors writes; parse
// copies the tensors out of `bytes` (which may then go away). `source` names the buffer in error
// messages.
std::vector<uint8_t> serialize_safetensors(const StateDict& tensors,
                                           const SafetensorsMetadata& metadata = {});
SafetensorsData parse_safetensors(std::span<const uint8_t> bytes,
                                  std::string_view source = "<buffer>");

// An open, validated, memory-mapped safetensors file. Copies share the mapping; tensors returned
// by get() keep it alive after the SafetensorsFile is gone.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);

  const std::string& path() const { return path_; }
  std::size_t size() const { return entries_.size(); }
  std::vector<std::string> keys() const;  // name order
  bool contains(std::string_view name) const;
  const SafetensorsEntry& entry(std::string_view name) const;  // KeyError naming the file
  const SafetensorsMetadata& metadata() const { return metadata_; }

  // A zero-copy view of one tensor (see load_safetensors). KeyError when absent.
  Tensor get(std::string_view name) const;
  // Every tensor, in name order.
  StateDict state_dict() const;

 private:
  struct Mapping;
  std::string path_;
  std::shared_ptr<const Mapping> mapping_;
  std::vector<SafetensorsEntry> entries_;  // name order
  SafetensorsMetadata metadata_;
  const uint8_t* buffer_ = nullptr;  // start of the byte buffer inside the mapping
};

// The safetensors name of a dtype: "F32", "BF16", "BOOL", ...
std::string_view safetensors_dtype_name(DType dtype);

}  // namespace ath

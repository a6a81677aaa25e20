// Checkpoint files (see the header): safetensors tensors + one JSON document in the metadata.
#include "athanor/train/checkpoint.h"

#include "athanor/core/error.h"
#include "athanor/io/checksum.h"
#include "athanor/io/safetensors.h"

#ifndef ATHANOR_VERSION_STRING
#define ATHANOR_VERSION_STRING "unknown"
#endif

namespace ath::train {

const char* athanor_version() { return ATHANOR_VERSION_STRING; }

StateDict CheckpointFile::section(std::string_view prefix) const {
  StateDict out;
  const std::string p = std::string(prefix) + ".";
  for (const auto& [name, tensor] : tensors) {
    if (name.size() > p.size() && name.compare(0, p.size(), p) == 0) {
      out.insert(name.substr(p.size()), tensor);
    }
  }
  return out;
}

void CheckpointFile::add_section(std::string_view prefix, const StateDict& section) {
  for (const auto& [name, tensor] : section) {
    tensors.insert(std::string(prefix) + "." + name, tensor);
  }
}

void save_checkpoint(const std::string& path, const CheckpointFile& checkpoint) {
  ATH_CHECK(checkpoint.meta.is_object(), ValueError,
            "save_checkpoint('{}'): the metadata must be a JSON object", path);
  // Every tensor is written (safetensors has no notion of aliasing); contiguous copies of views
  // are made by the writer.
  const std::string meta = checkpoint.meta.dump();
  nlohmann::json tensor_crcs = nlohmann::json::object();
  for (const auto& [name, tensor] : checkpoint.tensors)
    tensor_crcs[name] = format_crc32(crc32_of(tensor));
  const nlohmann::json checksums = {{"checkpoint", format_crc32(crc32_of(meta))},
                                    {"tensors", std::move(tensor_crcs)}};
  save_safetensors(path, checkpoint.tensors,
                   {{kCheckpointMetadataKey, meta},
                    {kChecksumsMetadataKey, checksums.dump()},
                    {"format", "athanor"}});
}

namespace {

// The CRC stored at `key` in `crcs` (FormatError naming the file when absent or malformed).
uint32_t stored_crc(const nlohmann::json& crcs, const std::string& key, const std::string& path) {
  const auto it = crcs.find(key);
  std::optional<uint32_t> crc;
  if (it != crcs.end() && it->is_string()) crc = parse_crc32(it->get<std::string>());
  ATH_CHECK(crc.has_value(), FormatError,
            "checkpoint '{}': its '{}' metadata has no valid CRC-32 for '{}'", path,
            kChecksumsMetadataKey, key);
  return *crc;
}

// Verifies the JSON document and every tensor against the checksums written with them.
void verify_checksums(const SafetensorsData& data, const std::string& meta_text,
                      const std::string& path) {
  auto it = data.metadata.find(kChecksumsMetadataKey);
  if (it == data.metadata.end()) return;  // written before checksums existed
  nlohmann::json sums;
  try {
    sums = nlohmann::json::parse(it->second);
  } catch (const nlohmann::json::exception& e) {
    ATH_THROW(FormatError, "checkpoint '{}': its '{}' metadata is not valid JSON: {}", path,
              kChecksumsMetadataKey, e.what());
  }
  ATH_CHECK(sums.is_object() && sums.contains("tensors") && sums["tensors"].is_object(),
            FormatError, "checkpoint '{}': its '{}' metadata is malformed", path,
            kChecksumsMetadataKey);
  const uint32_t meta_crc = crc32_of(meta_text);
  ATH_CHECK(meta_crc == stored_crc(sums, "checkpoint", path), FormatError,
            "checkpoint '{}': its '{}' metadata fails its checksum (stored {}, computed {}): the "
            "file was altered or damaged after it was written",
            path, kCheckpointMetadataKey, format_crc32(stored_crc(sums, "checkpoint", path)),
            format_crc32(meta_crc));
  const nlohmann::json& tensors = sums["tensors"];
  ATH_CHECK(tensors.size() == data.tensors.size(), FormatError,
            "checkpoint '{}': {} tensors, but checksums for {}: tensors were added or removed "
            "after it was written",
            path, data.tensors.size(), tensors.size());
  for (const auto& [name, tensor] : data.tensors) {
    const uint32_t want = stored_crc(tensors, name, path), got = crc32_of(tensor);
    ATH_CHECK(got == want, FormatError,
              "checkpoint '{}': tensor '{}' fails its checksum (stored {}, computed {}): the file "
              "was altered or damaged after it was written",
              path, name, format_crc32(want), format_crc32(got));
  }
}

}  // namespace

CheckpointFile load_checkpoint(const std::string& path) {
  SafetensorsData data = load_safetensors(path);  // FormatError/IOError naming the file
  auto it = data.metadata.find(kCheckpointMetadataKey);
  ATH_CHECK(it != data.metadata.end(), FormatError,
            "checkpoint '{}': a safetensors file without the '{}' metadata entry, so not an "
            "athanor checkpoint (plain weights load with load_safetensors)",
            path, kCheckpointMetadataKey);
  verify_checksums(data, it->second, path);
  CheckpointFile out;
  try {
    out.meta = nlohmann::json::parse(it->second);
  } catch (const nlohmann::json::exception& e) {
    ATH_CHECK(false, FormatError, "checkpoint '{}': its '{}' metadata is not valid JSON: {}", path,
              kCheckpointMetadataKey, e.what());
  }
  ATH_CHECK(out.meta.is_object(), FormatError,
            "checkpoint '{}': its '{}' metadata is not a JSON object", path,
            kCheckpointMetadataKey);
  // Copy out of the memory mapping: the caller may overwrite this very file (save_last) while
  // still holding the tensors.
  for (const auto& [name, tensor] : data.tensors) out.tensors.insert(name, tensor.clone());
  return out;
}

}  // namespace ath::train

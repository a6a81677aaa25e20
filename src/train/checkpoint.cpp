// Checkpoint files (see the header): safetensors tensors + one JSON document in the metadata.
#include "athanor/train/checkpoint.h"

#include "athanor/core/error.h"
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
  save_safetensors(path, checkpoint.tensors,
                   {{kCheckpointMetadataKey, checkpoint.meta.dump()}, {"format", "athanor"}});
}

CheckpointFile load_checkpoint(const std::string& path) {
  SafetensorsData data = load_safetensors(path);  // FormatError/IOError naming the file
  auto it = data.metadata.find(kCheckpointMetadataKey);
  ATH_CHECK(it != data.metadata.end(), FormatError,
            "checkpoint '{}': a safetensors file without the '{}' metadata entry, so not an "
            "athanor checkpoint (plain weights load with load_safetensors)",
            path, kCheckpointMetadataKey);
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

// Checkpoint files: one safetensors file holding what Lightning's .ckpt holds. Tensors (module
// state_dict, optimizer state) are safetensors tensors named with their place in the
// checkpoint ("state_dict.fc1.weight", "optimizer_states.0.state.3.exp_avg"); everything else —
// epoch, global_step, loop progress with the dataloader position, callback states, scheduler
// states, RNG state, hyperparameters, athanor's version — is one JSON document stored in the
// header metadata under "athanor.checkpoint". Any safetensors reader can open the file;
// `athanor inspect` prints it.
//
//   CheckpointFile ckpt = load_checkpoint("runs/version_0/checkpoints/last.ckpt");
//   ckpt.meta["global_step"];                          // 4690
//   model.load_state_dict(ckpt.section("state_dict"));  // the module's weights
//
// Writing is atomic (temporary file in the same directory, fsync, rename, fsync of the
// directory): a crash at any moment leaves the previous file intact. Loading trusts nothing: a
// truncated or corrupt file, or a safetensors file that is not a checkpoint, is an
// ath::FormatError naming the file.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "athanor/tensor/state_dict.h"

namespace ath::train {

inline constexpr const char* kCheckpointMetadataKey = "athanor.checkpoint";

struct CheckpointFile {
  StateDict tensors;    // all tensors, by full name
  nlohmann::json meta;  // the JSON document

  // The tensors under `prefix.` with the prefix removed (e.g. section("state_dict")).
  StateDict section(std::string_view prefix) const;
  // Adds `tensors` under `prefix.`.
  void add_section(std::string_view prefix, const StateDict& tensors);
};

void save_checkpoint(const std::string& path, const CheckpointFile& checkpoint);
CheckpointFile load_checkpoint(const std::string& path);

// athanor's version string, recorded in every checkpoint.
const char* athanor_version();

}  // namespace ath::train

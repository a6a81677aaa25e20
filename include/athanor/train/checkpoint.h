// Checkpoint files: one safetensors file holding what Lightning's .ckpt holds. Tensors (module
// state_dict, optimizer state) are safetensors tensors named with their place in the
// checkpoint ("state_dict.fc1.weight", "optimizer_states.0.state.3.exp_avg"); everything else —
// epoch, global_step, loop progress with the dataloader position, callback states, scheduler
// states, RNG state, hyperparameters, athanor's version — is one JSON document stored in the
// header metadata under "athanor.checkpoint". Any safetensors reader can open the file;
// `athanor inspect` prints it.
//
//   #include "athanor/nn/linear.h"
//   nn::Linear model({.in = 4, .out = 2});
//   train::CheckpointFile out;                         // what Trainer::save_checkpoint writes
//   out.meta = {{"epoch", 4}, {"global_step", 4690}};
//   out.add_section("state_dict", model.state_dict());
//   train::save_checkpoint("last.ckpt", out);
//
//   train::CheckpointFile ckpt = train::load_checkpoint("last.ckpt");
//   assert(ckpt.meta["global_step"] == 4690);
//   model.load_state_dict(ckpt.section("state_dict"));  // the module's weights
//
// Writing is atomic (temporary file in the same directory, fsync, rename, fsync of the
// directory): a crash at any moment leaves the previous file intact. Every tensor's bytes and the
// JSON document carry a CRC-32 (metadata entry "athanor.checksums"), verified at load. Loading
// trusts nothing: a truncated or corrupt file, bytes altered after writing (the failing tensor is
// named), or a safetensors file that is not a checkpoint, is an ath::FormatError naming the file.
// Checkpoints written before checksums existed load unverified.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "athanor/tensor/state_dict.h"

namespace ath::train {

inline constexpr const char* kCheckpointMetadataKey = "athanor.checkpoint";
// {"checkpoint": "0x…" (CRC-32 of the JSON document as stored), "tensors": {name: "0x…"}}.
inline constexpr const char* kChecksumsMetadataKey = "athanor.checksums";

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

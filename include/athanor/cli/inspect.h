// `athanor inspect FILE`: what a safetensors file or an athanor checkpoint holds, without
// loading the tensors (the header is validated, nothing else is read).
//
//   // $ athanor inspect runs/version_0/checkpoints/last.safetensors
//   // runs/version_0/checkpoints/last.safetensors: 12 tensors, 421,642 elements, 1.6 MiB
//   //   name                        dtype  shape
//   //   state_dict.1.weight         F32    [32, 1, 3, 3]
//   //   ...
//   // checkpoint (athanor.checkpoint):
//   //   athanor_version: 0.1.0
//   //   epoch: 2
//   //   global_step: 2532
//   //   callbacks:
//   //     ModelCheckpoint{'monitor': 'val_acc', 'mode': 'max'}: {"best_model_score":0.91,...}
//   //   hyper_parameters:
//   //     lr: 0.001
//   // ...
//
//   #include <sstream>
//   #include "athanor/io/safetensors.h"
//   StateDict weights;
//   weights.insert("fc.weight", randn({5, 6}));
//   save_safetensors("model.safetensors", weights);
//   std::ostringstream out, err;
//   int status = cli::inspect_file("model.safetensors", out, err);   // 0, or 2 on a bad file
//   assert(status == 0 && out.str().find("fc.weight") != std::string::npos);
#pragma once

#include <ostream>
#include <string>

namespace ath::cli {

// The metadata key under which checkpoints keep their JSON trainer state.
inline constexpr const char* kCheckpointMetadataKey = "athanor.checkpoint";

// Prints the report to `out` and returns 0. A missing, unreadable or malformed file (or a
// checkpoint entry that is not JSON) prints "athanor: error: <message>" to `err` and returns 2;
// nothing in the file can make it crash.
int inspect_file(const std::string& path, std::ostream& out, std::ostream& err);

}  // namespace ath::cli

// `athanor export`: a checkpoint as an ONNX model. The model is built as `fit` built it — the
// config from the checkpoint's saved hyperparameters (model and data sections), then --config
// files and --key=value overrides over them —, its weights loaded from the checkpoint, and the
// example input is the first batch of the config's data (or zeros of --input_shape). The
// exported file is then loaded with onnx::InferenceSession and run on the example, and the
// command fails unless it reproduces the eager forward (--verify=false skips that).
//
//   // $ athanor export --ckpt_path lightning_logs/version_0/checkpoints/last.ckpt
//   //                  --output model.onnx [--opset 17] [--dynamic_batch true]
//   //                  [--input_shape 1,28,28] [--config FILE]... [--model.name=...]...
//   #include <sstream>
//   #include "athanor/models/fashion.h"
//   #include "athanor/train/checkpoint.h"
//   train::CheckpointFile ckpt{.meta = nlohmann::json::object()};   // of the built-in model
//   ckpt.add_section("state_dict.net", models::fashion_cnn()->state_dict());
//   train::save_checkpoint("cnn.ckpt", ckpt);
//   cli::ExportArgs args{.ckpt_path = "cnn.ckpt", .output = "cnn.onnx"};
//   args.input_shape = "2,1,28,28";                  // no data needed for the example input
//   std::ostringstream out;
//   cli::ExportReport r = cli::export_checkpoint(args, out);   // build, load, export, check
//   assert(r.verified && out.str().find("max abs diff") != std::string::npos);
//
// Errors are ath::Errors naming the file or key (a missing checkpoint, a checkpoint of another
// model): `athanor export` exits 2 for them, 1 when the exported model does not verify.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace ath::cli {

struct ExportArgs {
  std::string ckpt_path;
  std::string output;
  std::vector<std::string> config_files;
  std::vector<std::string> overrides;  // "--model.name=char_lstm" ...
  int opset = 17;
  bool dynamic_batch = true;
  // "B,d1,d2..." (batch first): zeros of this shape instead of the data's first batch.
  std::string input_shape;
  bool verify = true;
};

struct ExportReport {
  bool verified = false;  // the session reproduced the eager forward (within 1e-4 relative)
  double max_abs_diff = 0, max_rel_diff = 0;
};

// Does the export; prints what it wrote and the verification. Throws ath::Error subclasses for
// bad input (a missing or foreign checkpoint, a bad config key or shape).
ExportReport export_checkpoint(const ExportArgs& args, std::ostream& out);

// The subcommand on the command line: registers its options on `app` and runs it once parsed.
class ExportCommand {
 public:
  explicit ExportCommand(CLI::App& app);
  bool parsed() const;
  // Exit status: 0, 2 for bad input (message on err), 1 when the export does not verify or
  // the run fails otherwise.
  int run(std::ostream& out, std::ostream& err);

 private:
  CLI::App* sub_ = nullptr;
  ExportArgs args_;
};

}  // namespace ath::cli

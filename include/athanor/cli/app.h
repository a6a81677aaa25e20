// The athanor command line, as a function so tests can run it in-process:
//
//   // $ athanor fit|validate|test|predict [--config FILE]... [--print_config[=comments]]
//   //                                     [--section.key=value | --section.key value]...
//   // $ athanor inspect FILE
//   // $ athanor export --ckpt_path FILE --output FILE [...]      (athanor/cli/export.h)
//   // $ athanor run MODEL.onnx --input NAME=FILE.npy... [--output FILE.npy | --output-dir DIR]
//   // $ athanor bench MODEL.onnx [--batch B] [--iterations N | --duration S] [--json]
//   // $ athanor --version | --help
//   #include <sstream>
//   std::ostringstream out, err;
//   const char* argv[] = {"athanor", "fit", "--print_config", "--trainer.max_epochs=5"};
//   int status = cli::athanor_main(4, argv, out, err);   // prints the resolved config
//   assert(status == 0 && out.str().find("max_epochs: 5") != std::string::npos);
//
// Exit status: 0 ok; 2 usage, config or file-format errors ("athanor: error: ..." on err);
// 1 any other failure.
#pragma once

#include <ostream>

#include "athanor/train/checkpoint.h"

namespace ath::cli {

int athanor_main(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

// "0.1.0": the version the command reports.
using train::athanor_version;  // the one version string (train/checkpoint.h)

}  // namespace ath::cli

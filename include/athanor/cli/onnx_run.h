// `athanor run MODEL.onnx`: runs an ONNX model once on inputs read from .npy files and writes
// its outputs as .npy files (numpy.load reads them).
//
//   // $ athanor run model.onnx --input image=x.npy --output y.npy
//   // output 'logits': float32[1,10] -> y.npy
//   // $ athanor run detector.onnx --input x.npy --output boxes=b.npy --output scores=s.npy
//   // $ athanor run detector.onnx --input x.npy --output-dir out/     # out/<output name>.npy
//
// --input NAME=FILE names the model input a file feeds; plain FILE is enough for a model with one
// input. --output NAME=FILE writes one output (repeat it per output); plain FILE is enough for a
// model with one output; --output-dir DIR writes every output as DIR/<name>.npy (characters
// other than letters, digits, '.', '_' and '-' in the name become '_'). NAME=FILE splits at the
// first '=', so `--input x=runs/step=1.npy` works. Every output's name, dtype and shape is
// printed, whether written or not.
//
//   #include <sstream>
//   #include "athanor/cli/onnx_run.h"
//   #include "athanor/io/npy.h"
//   const std::string model = "/usr/share/libonnx-testdata/data/node/test_relu/model.onnx";
//   Tensor x = randn({3, 4, 5});
//   write_npy("x.npy", x);
//   std::ostringstream out, err;
//   int status = cli::onnx_run({.model = model, .inputs = {"x=x.npy"}, .outputs = {"y.npy"}},
//                              out, err);                     // 0; 2 on a bad model or input
//   assert(status == 0 && equal(read_npy("y.npy"), relu(x)));
//   assert(out.str() == "output 'y': float32[3,4,5] -> y.npy\n");
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace ath::cli {

struct OnnxRunOptions {
  std::string model;                        // the .onnx file
  std::vector<std::string> inputs;          // "NAME=FILE.npy", or "FILE.npy" for a one-input model
  std::vector<std::string> outputs;         // "NAME=FILE.npy", or "FILE.npy" for a one-output model
  std::string output_dir;                   // non-empty: every output as <dir>/<name>.npy
  int threads = 0;                          // intra-op threads; 0: the machine's (OpenMP's default)
  std::string plan;                         // a saved plan (SessionOptions::plan_path); empty: none
  std::string batch_parallel = "auto";      // SessionOptions::batch_parallel: off, auto or on
  std::vector<std::string> disable_passes;  // SessionOptions::disable_passes (by pass name)
};

// Loads, runs and writes; returns the exit status. A missing or malformed model, input file or
// option, an input whose name, dtype or shape the model refuses (the session's ValueError), or
// a model athanor cannot run prints "athanor: error: <message>" to err and returns 2; any other
// failure (out of memory, a system error) returns 1.
int onnx_run(const OnnxRunOptions& options, std::ostream& out, std::ostream& err);

}  // namespace ath::cli

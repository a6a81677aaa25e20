// onnx::export_model: writes a module as an ONNX model. The module's forward runs once (eval
// mode, grad off) under the graph tracer; each recorded registry op becomes ONNX nodes through
// the exporter's op table; parameters and buffers become initializers under their state_dict
// names ("encoder.layers.0.linear1.weight"); inputs are named "input" ("input_0", "input_1"...
// when there are several) and outputs "output" ("output_0"...), unless the options name them.
//
//   #include "athanor/nn/linear.h"
//   #include "athanor/onnx/export.h"
//   #include "athanor/onnx/session.h"
//   nn::Linear fc({.in = 4, .out = 3});
//   onnx::export_model(fc, {randn({2, 4})}, "fc.onnx", {.opset = 17, .dynamic_batch = true});
//   onnx::InferenceSession session("fc.onnx");
//   Tensor x = randn({5, 4});                        // a batch size other than the example's
//   NoGradGuard no_grad;
//   assert(allclose(session.run({{"input", x}})[0], fc(x), {.rtol = 1e-5, .atol = 1e-6}));
//
// dynamic_batch makes dim 0 of every input a symbolic dimension "batch" (and each output dim
// that follows it). To see what depends on the batch size, the forward is traced a second time
// at batch + 1 and the two graphs are compared: a reshape target whose batch dim was baked in is
// written with -1 there (or computed from the input's shape at run time), and anything else that
// changes with the batch (an attribute, a constant's value, the graph itself) fails the export
// with a NotImplementedError naming the op, instead of writing a model that breaks at another
// batch size.
//
// Errors: registry ops with no ONNX form are all listed in one NotImplementedError
// ("op 'topk' (node 7: %9, %10 = topk(%8) f32[4,2], i64[4,2])"); a forward the tracer cannot
// record (a host read such as item()) fails with a NotImplementedError saying which read.
// The file is written atomically (temporary file + rename): an export that fails leaves no file
// and never a partial one.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "athanor/nn/module.h"
#include "athanor/tensor/tensor.h"

namespace ath::onnx {

struct ExportOptions {
  int opset = 17;             // 13 to 17 (what libonnx 1.12's checker and the importer know)
  bool dynamic_batch = true;  // dim 0 of the inputs (and what follows it) is symbolic "batch"
  std::vector<std::string> input_names;   // default "input" / "input_<i>"
  std::vector<std::string> output_names;  // default "output" / "output_<i>"
};

struct ExportResult {
  std::vector<std::string> inputs, outputs;  // the graph's input and output names
  int64_t nodes = 0;
  int64_t initializers = 0;
  std::map<std::string, int64_t> onnx_ops;  // node count per ONNX op type
};

// Exports module(example_inputs[0]) (Module::forward takes one tensor; use export_function for
// several). The module's training flags are restored afterwards.
ExportResult export_model(nn::Module& module, const std::vector<Tensor>& example_inputs,
                          const std::string& path, const ExportOptions& options = {});

// Exports any function of tensors. Tensors it reads that are listed in `named_state` become
// initializers under those names (others are named "const_<n>").
using ExportFn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
ExportResult export_function(const ExportFn& fn, const std::vector<Tensor>& example_inputs,
                             const nn::NamedTensors& named_state, const std::string& path,
                             const ExportOptions& options = {});

// The registry ops the exporter can write, sorted.
std::vector<std::string> exportable_ops();

}  // namespace ath::onnx

// What `athanor run` and `athanor bench` share: NAME=FILE arguments, inputs read from .npy files,
// "1x3x224x224" shapes, type strings, and the exit-status mapping of both commands.
#pragma once

#include <functional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "athanor/onnx/session.h"
#include "athanor/tensor/tensor.h"

namespace ath::cli::detail {

struct NamedFile {
  std::string name;  // empty: the model's only input or output
  std::string path;
};

// "NAME=FILE" (split at the first '=') or "FILE". `option` ("--input") names the argument in
// errors. A plain FILE needs a model with exactly one of `declared` (its name is filled in).
NamedFile split_named_file(const std::string& arg, const std::string& option,
                           const std::vector<onnx::TensorInfo>& declared);

struct InputFile {
  std::string name, path;
  Tensor tensor;
};

// The tensors of --input arguments, read with read_npy (errors name the input).
std::vector<InputFile> read_input_files(const std::vector<std::string>& args,
                                        const std::vector<onnx::TensorInfo>& declared);

// "1x3x224x224" -> {1, 3, 224, 224}; "" (a 0-d input) -> {}. ValueError naming `what`.
std::vector<int64_t> parse_dims(const std::string& text, const std::string& what);

// "float32[1,3,224,224]"
std::string type_string(const Tensor& t);

// "off" / "auto" / "on" (the option's check allows no other).
onnx::BatchParallel parse_batch_parallel(const std::string& text);

// Runs a command body and maps what it throws to an exit status, as `athanor fit` does: an
// ath::Error (a refused model, file, option or input) prints "athanor: error: <message>" and
// is 2; any other exception is 1. The body's own return value otherwise.
int run_guarded(const std::string& command, std::ostream& err, const std::function<int()>& body);

}  // namespace ath::cli::detail

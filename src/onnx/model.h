// A loaded ONNX model: the parsed ModelProto, checked (every value defined once and before it is
// read, no cycle, initializers decoded, every node's op and types supported), with its nodes in
// an order that runs. What InferenceSession lowers to a graph per concrete input shape.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "athanor/onnx/session.h"
#include "athanor/tensor/tensor.h"
#include "onnx/onnx_pb.h"

namespace ath::onnx::detail {

struct LoadedModel {
  std::filesystem::path path;  // the file, for messages
  std::filesystem::path dir;   // where external data is resolved
  ::onnx::ModelProto proto;
  int opset = 0;                                // of the default domain
  std::vector<const ::onnx::NodeProto*> order;  // runnable order
  std::unordered_map<std::string, Tensor> initializers;
  std::vector<TensorInfo> inputs;  // graph inputs that are not initializers
  // Per input: whether its *values* (not only its shape) steer the graph: it reaches an input
  // that must be known when the graph is built (Reshape's shape, Slice's starts...) other than
  // through Shape/Size. Such inputs are part of the session's cache key and become constants.
  std::vector<bool> value_keyed;
  std::vector<TensorInfo> outputs;
  uint64_t file_bytes = 0;             // the model file's size (load_model)
  std::optional<uint32_t> file_crc32;  // its CRC-32, when load_model was asked for it
};

// Reads and checks a model (see LoadedModel). Throws FormatError for a malformed file or graph
// (naming the file and the node), NotImplementedError listing every unsupported node.
// `checksum`: also the file's CRC-32 (what a saved plan is keyed on).
std::unique_ptr<LoadedModel> load_model(const std::filesystem::path& path, bool checksum = false);
// The same from bytes in memory (`name` stands for the file in messages; external data is
// resolved against `dir`). The fuzz target's entry.
std::unique_ptr<LoadedModel> load_model_from_bytes(const void* data, std::size_t size,
                                                   const std::string& name,
                                                   const std::filesystem::path& dir);

}  // namespace ath::onnx::detail

// What an ONNX op's lowering sees: the node's inputs as tensors (eager, possibly recorded by the
// graph tracer), its attributes, the model's opset, and where its outputs go. Lowerings are
// written as ordinary calls of athanor's ops, so they use the registry's kernels.
#pragma once

#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <vector>

#include "athanor/core/error.h"
#include "athanor/tensor/tensor.h"
#include "onnx/onnx_pb.h"

namespace ath::onnx::detail {

class NodeContext {
 public:
  NodeContext(const ::onnx::NodeProto& node, int opset, std::span<const Tensor> inputs,
              std::span<const uint8_t> is_static, const std::filesystem::path& dir)
      : node_(node),
        opset_(opset),
        inputs_(inputs),
        static_(is_static),
        dir_(dir),
        outputs_(static_cast<std::size_t>(node.output_size())) {}

  int opset() const { return opset_; }
  const ::onnx::NodeProto& node() const { return node_; }
  int num_inputs() const { return static_cast<int>(inputs_.size()); }
  // Whether input i is given (optional inputs may be absent or named "").
  bool has(int i) const {
    return i < num_inputs() && inputs_[static_cast<std::size_t>(i)].defined();
  }
  const Tensor& in(int i) const;
  // Input i's values on the host. The input must be known when the graph is built (an
  // initializer, a constant, a shape, or an input that is part of the cache key).
  std::vector<int64_t> ints(int i) const;
  std::vector<double> doubles(int i) const;
  bool is_static(int i) const { return has(i) && static_[static_cast<std::size_t>(i)] != 0; }

  bool has_attr(const std::string& name) const { return find_attr(name) != nullptr; }
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  double attr_float(const std::string& name, double fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name) const;  // empty when absent
  std::vector<double> attr_floats(const std::string& name) const;
  Tensor attr_tensor(const std::string& name) const;  // undefined when absent

  int num_outputs() const { return static_cast<int>(outputs_.size()); }
  // Whether output i is wanted (optional outputs may be absent or named "").
  bool wants(int i) const { return i < num_outputs() && !node_.output(i).empty(); }
  void out(int i, Tensor t);
  std::vector<Tensor>& outputs() { return outputs_; }

  // Normalizes an axis against a rank (negative counts from the end); ValueError when outside.
  int64_t axis(int64_t a, int64_t rank) const;

  // An unsupported use of a supported op (an attribute value, a shape): NotImplementedError.
  template <class... Args>
  [[noreturn]] void unsupported(fmt::format_string<Args...> f, Args&&... args) const {
    throw NotImplementedError(fmt::format(f, std::forward<Args>(args)...));
  }

 private:
  const ::onnx::AttributeProto* find_attr(const std::string& name) const;
  const ::onnx::NodeProto& node_;
  int opset_;
  std::span<const Tensor> inputs_;
  std::span<const uint8_t> static_;
  const std::filesystem::path& dir_;
  std::vector<Tensor> outputs_;
};

}  // namespace ath::onnx::detail

#include "node_context.h"

#include "athanor/graph/tracer.h"
#include "tensor_proto.h"

namespace ath::onnx::detail {

const Tensor& NodeContext::in(int i) const {
  if (!has(i)) {
    ATH_THROW(ValueError, "input {} is required but missing", i);
  }
  return inputs_[static_cast<std::size_t>(i)];
}

std::vector<int64_t> NodeContext::ints(int i) const {
  const Tensor& t = in(i);
  if (!is_static(i)) {
    unsupported(
        "input {} ('{}') must be known when the graph is built (a constant, an "
        "initializer or a shape computation), but it is computed at run time",
        i, node_.input(i));
  }
  ATH_CHECK(!t.is_floating_point(), ValueError, "input {} ('{}') must hold integers, got {}", i,
            node_.input(i), t.dtype());
  graph::Tracer::Pause pause;  // a constant: reading it steers nothing a replay must see
  return t.to_vector<int64_t>();
}

std::vector<double> NodeContext::doubles(int i) const {
  const Tensor& t = in(i);
  if (!is_static(i)) {
    unsupported(
        "input {} ('{}') must be known when the graph is built, but it is computed at "
        "run time",
        i, node_.input(i));
  }
  graph::Tracer::Pause pause;
  return t.to_vector<double>();
}

const ::onnx::AttributeProto* NodeContext::find_attr(const std::string& name) const {
  for (const auto& a : node_.attribute()) {
    if (a.name() == name) return &a;
  }
  return nullptr;
}

int64_t NodeContext::attr_int(const std::string& name, int64_t fallback) const {
  const auto* a = find_attr(name);
  if (a == nullptr) return fallback;
  ATH_CHECK(a->type() == ::onnx::AttributeProto::INT, FormatError, "attribute '{}' must be an int",
            name);
  return a->i();
}

double NodeContext::attr_float(const std::string& name, double fallback) const {
  const auto* a = find_attr(name);
  if (a == nullptr) return fallback;
  ATH_CHECK(a->type() == ::onnx::AttributeProto::FLOAT, FormatError,
            "attribute '{}' must be a float", name);
  return static_cast<double>(a->f());
}

std::string NodeContext::attr_string(const std::string& name, const std::string& fallback) const {
  const auto* a = find_attr(name);
  if (a == nullptr) return fallback;
  ATH_CHECK(a->type() == ::onnx::AttributeProto::STRING, FormatError,
            "attribute '{}' must be a string", name);
  return a->s();
}

std::vector<int64_t> NodeContext::attr_ints(const std::string& name) const {
  const auto* a = find_attr(name);
  if (a == nullptr) return {};
  ATH_CHECK(a->type() == ::onnx::AttributeProto::INTS, FormatError,
            "attribute '{}' must be a list of ints", name);
  return {a->ints().begin(), a->ints().end()};
}

std::vector<double> NodeContext::attr_floats(const std::string& name) const {
  const auto* a = find_attr(name);
  if (a == nullptr) return {};
  ATH_CHECK(a->type() == ::onnx::AttributeProto::FLOATS, FormatError,
            "attribute '{}' must be a list of floats", name);
  return {a->floats().begin(), a->floats().end()};
}

Tensor NodeContext::attr_tensor(const std::string& name) const {
  const auto* a = find_attr(name);
  if (a == nullptr) return {};
  ATH_CHECK(a->type() == ::onnx::AttributeProto::TENSOR, FormatError,
            "attribute '{}' must be a tensor", name);
  return tensor_from_proto(a->t(), dir_, fmt::format("attribute '{}'", name));
}

void NodeContext::out(int i, Tensor t) {
  ATH_CHECK(i >= 0 && i < num_outputs(), ValueError, "output {} of {} outputs", i, num_outputs());
  outputs_[static_cast<std::size_t>(i)] = std::move(t);
}

int64_t NodeContext::axis(int64_t a, int64_t rank) const {
  const int64_t lo = rank == 0 ? -1 : -rank;
  const int64_t hi = rank == 0 ? 0 : rank - 1;
  ATH_CHECK(a >= lo && a <= hi, ValueError, "axis {} is out of range for rank {}", a, rank);
  return a < 0 ? a + std::max<int64_t>(rank, 1) : a;
}

}  // namespace ath::onnx::detail

#include "athanor/graph/batch_split.h"

#include <fmt/format.h>

#include <string_view>

#include "athanor/ops/attention.h"
#include "athanor/ops/conv_blocked.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/linear_packed.h"
#include "athanor/ops/nn_functional.h"

namespace ath::graph {

namespace {

enum class Kind : uint8_t { Unknown, Constant, PerSample };

bool contiguous(const Value& v) {
  return v.strides.empty() || v.strides == contiguous_strides(v.meta.shape);
}

// Ops whose output rows (first dimension) are each computed from the same rows of the
// per-sample inputs, the other inputs (weights, biases, tables) being constants.
bool row_wise(const Node& n, const Graph& g) {
  const std::string_view name = n.op->name;
  if (name == "conv_blocked" || name == "pool_blocked" || name == "to_blocked" ||
      name == "from_blocked" || name == "conv_relu_max_pool" || name == "linear_packed" ||
      name == "linear" || name == "linear_relu")
    return true;
  const auto rank = static_cast<int64_t>(g.value(n.inputs[0]).meta.shape.size());
  if (name == "layer_norm") {
    const auto& a = *static_cast<const LayerNormAttrs*>(n.attrs.get());
    return static_cast<int64_t>(a.normalized_shape.size()) < rank;
  }
  if (name == "softmax" || name == "log_softmax") {
    const auto& a = *static_cast<const SoftmaxAttrs*>(n.attrs.get());
    const int64_t dim = a.dim < 0 ? a.dim + rank : a.dim;
    return rank > 1 && dim > 0;
  }
  if (name == "self_attention")
    return static_cast<const SelfAttentionAttrs*>(n.attrs.get())->batch_first;
  return false;
}

}  // namespace

std::string batch_coupling(const Graph& g, int64_t batch) {
  if (batch < 1) return fmt::format("batch {} is not positive", batch);
  std::vector<Kind> kind(g.values.size(), Kind::Unknown);
  auto per_sample_shape = [&](const Value& v) {
    return !v.meta.shape.empty() && v.meta.shape[0] % batch == 0 && contiguous(v);
  };
  // State the graph only reads (no node writes in place, checked below) is the same for
  // every share, as constants are.
  for (std::size_t v = 0; v < g.values.size(); ++v)
    if (g.values[v].origin == ValueOrigin::Constant || g.values[v].origin == ValueOrigin::State)
      kind[v] = Kind::Constant;
  for (ValueId a : g.arguments) {
    const Value& v = g.value(a);
    if (v.meta.shape.empty() || v.meta.shape[0] != batch || !contiguous(v))
      return fmt::format("argument %{} ({}) does not have the batch {} first", a,
                         type_string(v.meta, v.strides), batch);
    kind[static_cast<std::size_t>(a)] = Kind::PerSample;
  }
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& n = g.nodes[k];
    auto why = [&](std::string_view what) {
      return fmt::format("node {} ({}): {}", k, n.op->name, what);
    };
    if (n.write != WriteKind::None) return why("writes memory in place");
    bool any_sample = false;
    for (ValueId in : n.inputs) {
      const Kind ki = kind[static_cast<std::size_t>(in)];
      if (ki == Kind::Unknown) return why(fmt::format("reads %{}, not known per-sample", in));
      any_sample = any_sample || ki == Kind::PerSample;
    }
    if (!any_sample) {  // computes on constants only: the same for every share
      for (ValueId o : n.outputs) kind[static_cast<std::size_t>(o)] = Kind::Constant;
      continue;
    }
    const Value& out0 = g.value(n.outputs.at(0));
    bool ok = false;
    if (n.op->kind == OpKind::Pointwise) {
      // Per-sample operands have the output's shape; constants broadcast without a batch axis
      // (fewer dimensions, or a first dimension of 1), so every sample sees the same ones.
      ok = true;
      for (ValueId in : n.inputs) {
        const Value& v = g.value(in);
        if (kind[static_cast<std::size_t>(in)] == Kind::PerSample)
          ok = ok && v.meta.shape == out0.meta.shape;
        else
          ok = ok && (v.meta.shape.size() < out0.meta.shape.size() || v.meta.shape[0] == 1);
      }
    } else if (n.op->name == std::string_view("view")) {
      ok = true;  // a reshape keeps the element order; the checks below keep the blocks
    } else if (n.op->name == std::string_view("index_select")) {
      // Rows of a constant table picked by a per-sample index: row i from index i.
      const auto& a = *static_cast<const DimAttrs*>(n.attrs.get());
      ok = a.dim == 0 && kind[static_cast<std::size_t>(n.inputs[0])] == Kind::Constant;
    } else if (row_wise(n, g)) {
      // The data input first, keeping its row count; the others constants (weights, biases),
      // but for a convolution's residual, which has the output's shape.
      const Value& x = g.value(n.inputs[0]);
      ok = kind[static_cast<std::size_t>(n.inputs[0])] == Kind::PerSample &&
           x.meta.shape[0] == out0.meta.shape[0];
      const std::string_view name = n.op->name;
      const bool residual = (name == "conv_blocked" &&
                             static_cast<const ConvBlockedAttrs*>(n.attrs.get())->residual) ||
                            (name == "linear_packed" &&
                             static_cast<const LinearPackedAttrs*>(n.attrs.get())->residual);
      for (std::size_t i = 1; ok && i < n.inputs.size(); ++i) {
        const ValueId in = n.inputs[i];
        if (residual && i + 1 == n.inputs.size())  // read in row-major order, like the output
          ok = kind[static_cast<std::size_t>(in)] == Kind::PerSample &&
               numel(g.value(in).meta.shape) == numel(out0.meta.shape);
        else
          ok = kind[static_cast<std::size_t>(in)] == Kind::Constant;
      }
    }
    if (!ok) return why("may mix the samples of the batch");
    for (ValueId o : n.outputs) {
      if (!per_sample_shape(g.value(o)))
        return why(fmt::format("makes %{} ({}), not split by the batch {}", o,
                               type_string(g.value(o).meta, g.value(o).strides), batch));
      kind[static_cast<std::size_t>(o)] = Kind::PerSample;
    }
  }
  for (ValueId o : g.outputs)
    if (kind[static_cast<std::size_t>(o)] != Kind::PerSample)
      return fmt::format("output %{} is not per-sample", o);
  return {};
}

}  // namespace ath::graph

// The autograd data a tensor carries, and the Node interface of the backward graph. The tensor
// layer only stores these; the ops layer creates nodes when it records an op, and the autograd
// layer's engine runs them.
#pragma once

#include <cstdint>
#include <memory>
#include <string_view>
#include <utility>
#include <vector>

#include "athanor/core/small_vector.h"
#include "athanor/tensor/tensor.h"

namespace ath {

// Where a gradient flows: output `input_nr` of the forward op that `node` differentiates.
struct Edge {
  std::shared_ptr<Node> node;
  uint32_t input_nr = 0;
  bool valid() const { return node != nullptr; }
};

// A gradient list, one slot per forward output (Node::apply's argument) or forward input (its
// result). An undefined Tensor stands for a zero gradient.
using GradList = std::vector<Tensor>;

struct GradSlotMeta {  // what a zero gradient for one forward output looks like
  Shape shape;
  DType dtype = kFloat32;
};

class Node : public std::enable_shared_from_this<Node> {
 public:
  Node();
  virtual ~Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;

  virtual std::string_view name() const = 0;
  // Maps gradients w.r.t. the forward outputs to gradients w.r.t. the forward inputs.
  virtual GradList apply(GradList&& grad_outputs) = 0;
  // Frees saved tensors after a backward pass without retain_graph.
  virtual void release_saved() {}
  // Whether the node differentiates a view op (its output aliases its input).
  virtual bool is_view() const { return false; }

  std::vector<Edge> next_edges;           // one per forward input
  SmallVec<GradSlotMeta, 4> output_meta;  // one per forward output
  uint64_t sequence_nr;                   // creation order: later nodes run first in backward
  // Hooks on non-leaf tensors, keyed by the forward output they watch.
  std::vector<std::pair<uint32_t, std::pair<int64_t, GradHook>>> pre_hooks;
};

struct AutogradMeta {
  bool requires_grad = false;
  bool retains_grad = false;
  std::shared_ptr<Node> grad_fn;         // set for non-leaf tensors
  uint32_t output_nr = 0;                // which output of grad_fn this tensor is
  std::shared_ptr<TensorImpl> grad;      // accumulated gradient (leaves, retained non-leaves)
  std::weak_ptr<Node> grad_accumulator;  // leaves: the node that accumulates into `grad`
  std::vector<std::pair<int64_t, GradHook>> hooks;                                // leaves' hooks
  std::vector<std::pair<int64_t, PostAccumulateGradHook>> post_accumulate_hooks;  // leaves'
};

// The autograd meta of t, created on first use.
AutogradMeta& autograd_meta(const Tensor& t);
// Null when the tensor has never been touched by autograd.
inline AutogradMeta* autograd_meta_if(const Tensor& t) { return t.impl()->autograd.get(); }

int64_t next_hook_id();

}  // namespace ath

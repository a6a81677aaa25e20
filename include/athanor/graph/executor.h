// The executor: runs a Graph on real tensors.
//
//   #include "athanor/graph/executor.h"
//   #include "athanor/graph/tracer.h"
//   Tensor x = randn({4, 3});
//   graph::Tracer tracer({x});                  // or a graph built by hand (graph.h)
//   graph::Graph g = tracer.finish({relu(x) + 1.0});
//   graph::Executor exec(g);
//   Tensor other = randn({4, 3});
//   std::vector<Tensor> out = exec.run({other});
//   assert(allclose(out[0], relu(other) + 1.0));
//
// Contract:
// - Arguments are bound by position and must match the recorded shapes and dtypes (ValueError
//   otherwise); state and constants are the graph's own tensors, so an in-place write in the
//   graph (an optimizer update, a gradient accumulation) writes the real parameter or buffer.
// - Nodes run in order through the op registry with grad mode and autocast off: the graph
//   already holds the backward ops and the casts, and replaying them must not record again.
//   Writes into input 0 (add_, copy_) compute the op and copy the result in, as call_inplace's
//   out-of-place path does; ops that write their inputs (OpDef::mutates_input) write them.
// - Attributes come from the node's attribute source when it has one (the optimizer's current
//   learning rate), else from the record.
// - A result whose shape differs from the recorded one (a data-dependent shape) throws a
//   ValueError naming the node: never a silently different computation.
// - Each intermediate is released after its last use, so peak memory is what eager execution
//   would hold; outputs and tensors assigned to gradients are kept.
// - Afterwards each GradBinding assigns its value to the parameter's `.grad`.
#pragma once

#include <initializer_list>
#include <span>
#include <vector>

#include "athanor/graph/graph.h"

namespace ath::graph {

class Executor {
 public:
  explicit Executor(const Graph& graph);
  std::vector<Tensor> run(std::span<const Tensor> arguments) const;
  std::vector<Tensor> run(std::initializer_list<Tensor> arguments) const {
    return run(std::span<const Tensor>(arguments.begin(), arguments.size()));
  }
  const Graph& graph() const { return graph_; }

 private:
  const Graph& graph_;
  // Per node: the values whose last reader it is (released after it runs).
  std::vector<std::vector<ValueId>> release_after_;
};

}  // namespace ath::graph

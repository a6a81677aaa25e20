// Comparing two traces of the same code (what the compiled step's stability check uses).
//
//   #include "athanor/graph/compare.h"
//   #include "athanor/graph/tracer.h"
//   auto trace = [](const Tensor& x) {
//     graph::Tracer tracer({x});
//     Tensor y = relu(x);
//     return tracer.finish({y});
//   };
//   Tensor x = randn({4});
//   graph::Graph first = trace(x);
//   graph::Graph second = trace(x);
//   assert(graph::first_difference(first, second).empty());   // the same: safe to replay
#pragma once

#include <string>

#include "athanor/graph/graph.h"

namespace ath::graph {

// Empty when `a` and `b` record the same computation: the same ops in the same order over the
// same values, equal attributes (except those read from a source at replay), the same state
// tensors (by identity), equal constants (by value), outputs and gradient bindings. Otherwise
// one line naming the first difference.
std::string first_difference(const Graph& a, const Graph& b);

}  // namespace ath::graph

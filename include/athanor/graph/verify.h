// The graph verifier: the invariants every pass must keep. Passes run it after each change in
// tests and under CompileOptions::verify.
//
//   graph::Graph g;
//   graph::ValueId x = g.add_argument({{3}, kFloat32});
//   g.outputs.push_back(g.add_node(op_neg(), NoAttrs{}, {x})[0]);
//   graph::verify(g);   // throws ath::Error naming the broken rule, the node and the value
#pragma once

#include "athanor/graph/graph.h"

namespace ath::graph {

// Checks: every value used is defined before its use (inputs first, then node by node); each
// value is defined once, by the node or slot its record names; a node's arity matches its op;
// in-place writes name an input and make a version of the same storage and type; attribute
// sources only on ops that take attributes; outputs and gradient bindings refer to defined
// values; slot tables (arguments, state, constants) agree with the values. Throws a ValueError
// starting "graph verifier:" on the first violation.
void verify(const Graph& g);

}  // namespace ath::graph

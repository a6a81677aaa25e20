// Runs a loaded model's nodes eagerly, in order, through their lowerings. Under the graph tracer
// this records the graph; values computable when the graph is built (initializers, Constant,
// Shape, anything computed only from those and from value-keyed inputs) are evaluated with the
// tracer paused, so they enter the graph as constants instead of as recorded shape arithmetic.
#pragma once

#include <span>
#include <vector>

#include "athanor/tensor/tensor.h"
#include "model.h"

namespace ath::onnx::detail {

// `inputs` are in LoadedModel::inputs order; those marked value_keyed count as known.
std::vector<Tensor> run_nodes(const LoadedModel& model, std::span<const Tensor> inputs);

}  // namespace ath::onnx::detail

// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss on athanor's nll_loss (ONNX's "mean"
// divides by the summed weight of the non-ignored targets, as torch's does).
#include "athanor/ops/losses.h"

#include <limits>

#include "../op_table.h"
#include "athanor/ops/nn_functional.h"

namespace ath::onnx::detail {

namespace {

NllLossOptions nll_options(NodeContext& c, int weight_input) {
  const std::string r = c.attr_string("reduction", "mean");
  NllLossOptions o;
  if (c.has(weight_input)) o.weight = c.in(weight_input);
  // No ignore_index attribute: no target is ignored.
  o.ignore_index = c.attr_int("ignore_index", std::numeric_limits<int64_t>::min());
  if (r == "mean") {
    o.reduction = Reduction::Mean;
  } else if (r == "sum") {
    o.reduction = Reduction::Sum;
  } else if (r == "none") {
    o.reduction = Reduction::None;
  } else {
    ATH_THROW(ValueError, "reduction '{}'", r);
  }
  return o;
}

void lower_nll(NodeContext& c) { c.out(0, nll_loss(c.in(0), c.in(1), nll_options(c, 2))); }

void lower_softmax_cross_entropy(NodeContext& c) {
  const Tensor& x = c.in(0);
  ATH_CHECK(x.dim() >= 2, ShapeError, "scores must be [N, C, ...], got rank {}", x.dim());
  Tensor log_prob = log_softmax(x, 1);
  c.out(0, nll_loss(log_prob, c.in(1), nll_options(c, 2)));
  if (c.wants(1)) c.out(1, log_prob);
}

}  // namespace

void add_loss_ops(OpTable& t) {
  t["NegativeLogLikelihoodLoss"] = {lower_nll, 0, 12, kFloatTypes};
  t["SoftmaxCrossEntropyLoss"] = {lower_softmax_cross_entropy, 0, 12, kFloatTypes};
}

}  // namespace ath::onnx::detail

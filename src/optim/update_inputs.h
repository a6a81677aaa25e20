// What the optimizers hand their update ops (athanor/ops/optimizer_updates.h): the parameters
// that have gradients, checked, each with its state, gathered into the ops' tensor lists.
//
//   std::vector<ParamUpdate> ups = prepare_group(name(), grp.params, grp.state);   // checks all
//   run_update(op_adamax_update(), attrs, ups, [](ParamUpdate& u) {   // one call per dtype
//     return std::vector<Tensor>{counter_tensor(*u.state, "step"), u.param, u.grad,
//                                state_tensor(*u.state, u.param, "exp_avg"),
//                                state_tensor(*u.state, u.param, "exp_inf")}; });
//
// Nothing is written before every parameter of the group has passed its checks.
#pragma once

#include <functional>
#include <optional>
#include <string_view>
#include <vector>

#include "athanor/ops/attr_source.h"
#include "athanor/optim/optimizer.h"
#include "athanor/tensor/tensor.h"

namespace ath::optim::detail {

// A parameter with a gradient, ready for an update op: `param` and `grad` are contiguous with
// the parameter's dtype and shape. A non-contiguous parameter is updated in a contiguous copy
// that finish() writes back (the op itself bumps the version of what it writes).
struct ParamUpdate {
  Tensor param;
  Tensor grad;
  Tensor original;
  bool copy_back = false;
  ParamState* state = nullptr;
  void finish();
};

// The parameters of a group that have gradients (the others are skipped), each checked:
// float16/bfloat16 parameters are a NotImplementedError, other non-float32/64 dtypes a
// DTypeError; a gradient whose shape or dtype differs from the parameter's is a ShapeError /
// DTypeError; state that no longer matches its parameter (replaced through set_data) a
// ValueError.
std::vector<ParamUpdate> prepare_group(std::string_view optimizer,
                                       const std::vector<Tensor>& params,
                                       std::vector<ParamState>& states);

// The state tensor `name`, created (filled with `value`) when absent.
Tensor state_tensor(ParamState& st, const Tensor& param, const char* name, double value = 0.0);

// The counter `name` (a 0-d float64 tensor), created holding `value` when absent.
Tensor counter_tensor(ParamState& st, const char* name, double value = 0.0);

// Runs `op` once per parameter dtype among `updates` (float32, then float64), each call's
// inputs being lists_of(update)'s tensors gathered list by list; then finishes every update.
// `attrs_of` computes the attributes from the optimizer's current options (attr_source.h): a
// compiled step calls it again at each replay.
template <class A, class AttrsOf>
void run_update(const Op<A>& op, const AttrsOf& attrs_of, std::vector<ParamUpdate>& updates,
                const std::function<std::vector<Tensor>(ParamUpdate&)>& lists_of) {
  for (DType dtype : {kFloat32, kFloat64, kBFloat16, kFloat16}) {
    std::vector<std::vector<Tensor>> per_param;
    for (ParamUpdate& u : updates)
      if (u.param.dtype() == dtype) per_param.push_back(lists_of(u));
    if (per_param.empty()) continue;
    const std::size_t n = per_param.size(), lists = per_param[0].size();
    std::vector<Tensor> inputs(n * lists);
    for (std::size_t i = 0; i < n; ++i)
      for (std::size_t j = 0; j < lists; ++j) inputs[j * n + i] = std::move(per_param[i][j]);
    call_with_attr_source(op, TensorSpan(inputs), std::function<A()>(attrs_of));
  }
  for (ParamUpdate& u : updates) u.finish();
}

}  // namespace ath::optim::detail

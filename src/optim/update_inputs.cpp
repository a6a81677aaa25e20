#include "update_inputs.h"

#include "athanor/ops/creation.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::optim::detail {

void ParamUpdate::finish() {
  if (copy_back) {
    NoGradGuard no_grad;
    original.copy_(param);
  }
}

namespace {

// ValueError unless every state tensor still has the parameter's shape and dtype (a parameter
// replaced through set_data would otherwise be updated from out-of-bounds state).
void check_state(const ParamState& st, const Tensor& param) {
  for (const auto& [name, t] : st.tensors)
    ATH_CHECK(t.shape() == param.shape() && t.dtype() == param.dtype() && t.is_contiguous(),
              ValueError,
              "optimizer state '{}' ({} {}) no longer matches its parameter ({} {}); reload or "
              "reset the optimizer",
              name, dtype_name(t.dtype()), to_string(t.shape()), dtype_name(param.dtype()),
              to_string(param.shape()));
}

std::optional<ParamUpdate> prepare(std::string_view optimizer, const Tensor& param) {
  Tensor grad = param.grad();
  if (!grad.defined()) return std::nullopt;
  const DType dt = param.dtype();
  ATH_CHECK(is_floating(dt), DTypeError, "{}: parameters must be floating, got {}", optimizer,
            dtype_name(dt));
  ATH_CHECK(grad.dtype() == dt, DTypeError, "{}: gradient dtype {} differs from parameter dtype {}",
            optimizer, dtype_name(grad.dtype()), dtype_name(dt));
  ATH_CHECK(grad.shape() == param.shape(), ShapeError,
            "{}: gradient shape {} differs from parameter shape {}", optimizer,
            to_string(grad.shape()), to_string(param.shape()));
  ParamUpdate u;
  u.grad = grad.contiguous();
  if (param.is_contiguous()) {
    u.param = param;
  } else {
    u.original = param;
    u.param = param.contiguous();
    u.copy_back = true;
  }
  return u;
}

}  // namespace

std::vector<ParamUpdate> prepare_group(std::string_view optimizer,
                                       const std::vector<Tensor>& params,
                                       std::vector<ParamState>& states) {
  std::vector<ParamUpdate> out;
  for (std::size_t i = 0; i < params.size(); ++i) {
    std::optional<ParamUpdate> u = prepare(optimizer, params[i]);
    if (!u) continue;
    check_state(states[i], u->param);
    u->state = &states[i];
    out.push_back(std::move(*u));
  }
  return out;
}

Tensor state_tensor(ParamState& st, const Tensor& param, const char* name, double value) {
  if (Tensor* t = st.find(name)) return *t;
  Tensor t = empty(param.shape(), param.dtype());
  t.fill_(value);
  st.tensors.emplace_back(name, t);
  return t;
}

Tensor counter_tensor(ParamState& st, const char* name, double value) {
  auto it = st.counters.find(name);
  if (it == st.counters.end()) it = st.counters.emplace(name, full({}, value, kFloat64)).first;
  return it->second;
}

}  // namespace ath::optim::detail

#include "update_loop.h"

#include "athanor/ops/creation.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::optim::detail {

void UpdateTarget::finish() {
  if (copy_back) {
    NoGradGuard no_grad;
    original.copy_(param);  // the dispatched copy bumps the version itself
  } else {
    param.bump_version();
  }
}

std::optional<UpdateTarget> prepare(std::string_view optimizer, const Tensor& param) {
  Tensor grad = param.grad();
  if (!grad.defined()) return std::nullopt;
  const DType dt = param.dtype();
  ATH_CHECK(dt != kFloat16 && dt != kBFloat16, NotImplementedError,
            "{}: {} parameters are not supported (keep float32 master weights and cast for the "
            "forward pass)",
            optimizer, dtype_name(dt));
  ATH_CHECK(dt == kFloat32 || dt == kFloat64, DTypeError,
            "{}: parameters must be float32 or float64, got {}", optimizer, dtype_name(dt));
  ATH_CHECK(grad.dtype() == dt, DTypeError, "{}: gradient dtype {} differs from parameter dtype {}",
            optimizer, dtype_name(grad.dtype()), dtype_name(dt));
  ATH_CHECK(grad.shape() == param.shape(), ShapeError,
            "{}: gradient shape {} differs from parameter shape {}", optimizer,
            to_string(grad.shape()), to_string(param.shape()));
  UpdateTarget t;
  t.grad = grad.contiguous();
  if (param.is_contiguous()) {
    t.param = param;
  } else {
    t.original = param;
    t.param = param.contiguous();
    t.copy_back = true;
  }
  return t;
}

Tensor new_state(const Tensor& param, double value) {
  Tensor t = empty(param.shape(), param.dtype());
  t.fill_(value);
  return t;
}

void check_state(const ParamState& st, const Tensor& param) {
  for (const auto& [name, t] : st.tensors)
    // The parameter may have been replaced (set_data) since its state was made.
    ATH_CHECK(t.shape() == param.shape() && t.dtype() == param.dtype() && t.is_contiguous(),
              ValueError,
              "optimizer state '{}' ({} {}) no longer matches its parameter ({} {}); reload or "
              "reset the optimizer",
              name, dtype_name(t.dtype()), to_string(t.shape()), dtype_name(param.dtype()),
              to_string(param.shape()));
}

Tensor state_tensor(ParamState& st, const Tensor& param, const char* name, double value) {
  if (Tensor* t = st.find(name)) return *t;
  st.tensors.emplace_back(name, new_state(param, value));
  return st.tensors.back().second;
}

}  // namespace ath::optim::detail

#include "athanor/nn/batch_norm.h"

#include "athanor/core/error.h"
#include "athanor/ops/ops.h"
#include "athanor/tensor/grad_mode.h"
#include "repr.h"

namespace ath::nn {

BatchNorm::BatchNorm(const char* type_name, BatchNormOptions o) : Module(type_name), options(o) {
  ATH_CHECK(o.features >= 0, ValueError, "{}: features (num_features) must be non-negative, got {}",
            type_name, o.features);
  ATH_CHECK(o.eps >= 0, ValueError, "{}: eps must be non-negative, got {}", type_name, o.eps);
  ATH_CHECK(!o.momentum || (*o.momentum >= 0 && *o.momentum <= 1), ValueError,
            "{}: momentum must be in [0, 1] or unset, got {}", type_name, *o.momentum);
  if (o.affine) {
    weight = register_parameter("weight", ones({o.features}, o.dtype));
    bias = register_parameter("bias", zeros({o.features}, o.dtype));
  }
  if (o.track_running_stats) {
    running_mean = register_buffer("running_mean", zeros({o.features}, o.dtype));
    running_var = register_buffer("running_var", ones({o.features}, o.dtype));
    num_batches_tracked = register_buffer("num_batches_tracked", scalar_tensor(0, kInt64));
  }
}

void BatchNorm::reset_running_stats() {
  if (!options.track_running_stats) return;
  NoGradGuard no_grad;
  running_mean.zero_();
  running_var.fill_(1);
  num_batches_tracked.zero_();
}

void BatchNorm::reset_parameters() {
  reset_running_stats();
  if (!options.affine) return;
  NoGradGuard no_grad;
  weight.detach().fill_(1);
  bias.detach().zero_();
}

// PyTorch's _BatchNorm.forward. One difference in order, not in result: num_batches_tracked
// is bumped after the update succeeded, so a rejected input leaves every buffer as it was.
Tensor BatchNorm::forward(const Tensor& x) {
  check_input_dim(x);
  const bool update = is_training() && options.track_running_stats;
  double factor = options.momentum.value_or(0.0);
  if (update && !options.momentum) {
    factor = 1.0 / static_cast<double>(num_batches_tracked.item<int64_t>() + 1);
  }
  // Batch statistics while training, and in eval when there are no running stats to use.
  const bool use_batch_stats = is_training() || !running_mean.defined();
  const bool pass_running = !is_training() || options.track_running_stats;
  Tensor y = is_training() && sync_ != nullptr
                 ? sync_->forward(*this, x, factor)
                 : batch_norm(x, pass_running ? running_mean : Tensor(),
                              pass_running ? running_var : Tensor(), weight, bias, use_batch_stats,
                              factor, options.eps);
  if (update) {
    NoGradGuard no_grad;
    num_batches_tracked.add_(scalar_tensor(1, kInt64));
  }
  return y;
}

std::string BatchNorm::extra_repr() const {
  return fmt::format("{}, eps={}, momentum={}, affine={}, track_running_stats={}", options.features,
                     detail::py_float(options.eps),
                     options.momentum ? detail::py_float(*options.momentum) : "None",
                     detail::py_bool(options.affine), detail::py_bool(options.track_running_stats));
}

void BatchNorm1d::check_input_dim(const Tensor& x) const {
  ATH_CHECK(x.dim() == 2 || x.dim() == 3, ShapeError,
            "BatchNorm1d: expected 2-D or 3-D input, got {}-D input of shape {}", x.dim(),
            ath::to_string(x.shape()));
}

void BatchNorm2d::check_input_dim(const Tensor& x) const {
  ATH_CHECK(x.dim() == 4, ShapeError, "BatchNorm2d: expected 4-D input, got {}-D input of shape {}",
            x.dim(), ath::to_string(x.shape()));
}

}  // namespace ath::nn

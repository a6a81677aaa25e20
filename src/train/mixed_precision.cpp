// The precision plugins of mixed_precision.h and the names that choose them.
#include "athanor/train/mixed_precision.h"

#include <atomic>
#include <cstdio>

#include "athanor/core/cpu_isa.h"
#include "athanor/core/error.h"
#include "athanor/ops/autocast.h"

namespace ath::train {

namespace {

void check_low_precision(DType dtype, const char* who) {
  ATH_CHECK(dtype == kBFloat16 || dtype == kFloat16, ValueError,
            "{}: the dtype must be bfloat16 or float16, got {}", who, dtype_name(dtype));
}

// bfloat16 pays off only where its products run native kernels; say so once per process.
void note_bf16_speed_once() {
  static std::atomic<bool> said{false};
  if (bf16_products_native() || said.exchange(true)) return;
  std::fprintf(stderr,
               "athanor: bf16 precision on this CPU (%s): results are right, but bfloat16 "
               "products run float32 kernels here (no faster bfloat16 ones) and will not be "
               "faster than 32-true\n",
               cpu_isa_description().c_str());
}

}  // namespace

MixedPrecision::MixedPrecision(DType dtype, std::optional<optim::GradScaler> scaler)
    : dtype_(dtype), scaler_(std::move(scaler)) {
  check_low_precision(dtype, "MixedPrecision");
  if (dtype == kFloat16 && !scaler_) scaler_.emplace();
  if (dtype == kBFloat16) note_bf16_speed_once();
}

std::string MixedPrecision::name() const { return dtype_ == kBFloat16 ? "bf16-mixed" : "16-mixed"; }

Tensor MixedPrecision::forward(const std::function<Tensor()>& step) {
  AutocastGuard autocast(dtype_);
  return step();
}

void MixedPrecision::eval_step(const std::function<void()>& step) {
  AutocastGuard autocast(dtype_);
  step();
}

Tensor MixedPrecision::scale_loss(const Tensor& loss) {
  return scaler_ ? scaler_->scale(loss) : loss;
}

void MixedPrecision::optimizer_step(optim::Optimizer& optimizer,
                                    const std::function<void()>& before_step) {
  if (!scaler_) {
    before_step();
    optimizer.step();
    return;
  }
  // As Lightning's MixedPrecision: unscale first, so the hooks and clipping see true gradients.
  scaler_->unscale_(optimizer);
  before_step();
  if (!scaler_->step(optimizer)) ++skipped_steps_;
  scaler_->update();
}

nlohmann::json MixedPrecision::state_dict() const {
  return scaler_ ? scaler_->state_dict() : nlohmann::json::object();
}

void MixedPrecision::load_state_dict(const nlohmann::json& state) {
  if (scaler_ && !state.empty()) scaler_->load_state_dict(state);
}

HalfPrecision::HalfPrecision(DType dtype) : dtype_(dtype) {
  check_low_precision(dtype, "HalfPrecision");
  if (dtype == kBFloat16) note_bf16_speed_once();
}

std::string HalfPrecision::name() const { return dtype_ == kBFloat16 ? "bf16-true" : "16-true"; }

void HalfPrecision::convert_module(nn::Module& module) { module.to(dtype_); }

std::optional<data::Batch> HalfPrecision::convert_input(const data::Batch& batch) {
  // Tensor-list batches (the default collate); a batch of another type reaches the step as it
  // is, and its step converts what it needs.
  if (!batch.holds<data::TensorList>()) return std::nullopt;
  data::TensorList converted = batch.as<data::TensorList>();
  for (Tensor& t : converted) {
    if (t.defined() && t.is_floating_point() && t.dtype() != kFloat64) t = t.to(dtype_);
  }
  return data::Batch(std::move(converted), batch.size());
}

std::shared_ptr<PrecisionPlugin> make_precision(const std::string& name) {
  if (name == "32-true" || name == "32") return std::make_shared<Float32Precision>();
  if (name == "bf16-mixed") return std::make_shared<MixedPrecision>(kBFloat16);
  if (name == "16-mixed") return std::make_shared<MixedPrecision>(kFloat16);
  if (name == "bf16-true") return std::make_shared<HalfPrecision>(kBFloat16);
  if (name == "16-true") return std::make_shared<HalfPrecision>(kFloat16);
  ATH_CHECK(false, ValueError,
            "precision '{}' is not one of 32-true, bf16-mixed, 16-mixed, bf16-true, 16-true", name);
  return nullptr;
}

}  // namespace ath::train

// GradScaler: dynamic loss scaling for float16 training (torch.amp.GradScaler). float16 keeps
// 5 exponent bits, so small gradients underflow to zero; backpropagating loss * scale keeps them
// representable, and the scaler divides the gradients back before the optimizer sees them. When
// a step's gradients hold an inf or NaN (the scale was too large), the step is skipped and the
// scale halves; after growth_interval clean steps in a row it doubles.
//
//   #include "athanor/nn/linear.h"
//   #include "athanor/optim/sgd.h"
//   nn::Linear model({.in = 4, .out = 2});
//   optim::SGD opt(model.parameters(), {.lr = 0.1});
//   optim::GradScaler scaler;                       // init_scale 2^16, growth every 2000 steps
//   Tensor loss = model(randn({8, 4})).pow(2).mean();
//   scaler.scale(loss).backward();                  // gradients of 65536 * loss
//   scaler.unscale_(opt);                           // optional: true gradients, e.g. to clip
//   optim::clip_grad_norm_(model.parameters(), 1.0);
//   bool stepped = scaler.step(opt);                // skipped if a gradient is not finite
//   scaler.update();                                // the scale for the next step
//   assert(stepped && scaler.get_scale() == 65536.0);
//
// Arithmetic as PyTorch's: the scale is a float32 value; gradients are multiplied by
// float32(1 / scale) and checked in one pass per optimizer (the unscale_grads op); update()
// backs off by backoff_factor on a non-finite step (resetting the clean-step count) and grows
// by growth_factor when the count reaches growth_interval (keeping the scale if the product
// would overflow float32). The state (scale and count) goes in checkpoints through state_dict.
// Each optimizer may be unscaled and stepped once between two update() calls.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <unordered_map>

#include "athanor/optim/optimizer.h"
#include "athanor/tensor/tensor.h"

namespace ath::optim {

struct GradScalerOptions {
  double init_scale = 65536.0;  // 2^16
  double growth_factor = 2.0;
  double backoff_factor = 0.5;
  int64_t growth_interval = 2000;
  bool enabled = true;  // false: every method passes through (scale 1, plain steps)
};

class GradScaler {
 public:
  explicit GradScaler(GradScalerOptions options = {});

  // loss * scale, the tensor to backpropagate from.
  Tensor scale(const Tensor& loss) const;
  // Divides the gradients of `optimizer`'s parameters by the scale and records whether any was
  // inf or NaN. At most once per optimizer between update() calls.
  void unscale_(Optimizer& optimizer);
  // Unscales (unless unscale_ already did) and steps `optimizer` unless its gradients held an
  // inf or NaN. Returns whether it stepped.
  bool step(Optimizer& optimizer);
  // Adjusts the scale from this iteration's steps and starts the next iteration.
  void update();
  // Sets the scale directly (and keeps the clean-step count), as PyTorch's update(new_scale).
  void update(double new_scale);

  double get_scale() const { return options_.enabled ? static_cast<double>(scale_) : 1.0; }
  int64_t growth_tracker() const { return growth_tracker_; }
  bool is_enabled() const { return options_.enabled; }
  const GradScalerOptions& options() const { return options_; }

  // PyTorch's keys: scale, growth_factor, backoff_factor, growth_interval, _growth_tracker.
  nlohmann::json state_dict() const;
  // Checks every field before changing anything (FormatError naming the field).
  void load_state_dict(const nlohmann::json& state);

 private:
  enum class Stage : uint8_t { Ready, Unscaled, Stepped };
  struct PerOptimizer {
    Stage stage = Stage::Ready;
    bool found_inf = false;
  };
  PerOptimizer& state_of(const Optimizer& optimizer) { return per_optimizer_[&optimizer]; }

  GradScalerOptions options_;
  float scale_;
  int64_t growth_tracker_ = 0;
  std::unordered_map<const Optimizer*, PerOptimizer> per_optimizer_;
};

}  // namespace ath::optim

// GradScaler (athanor/optim/grad_scaler.h): the scale and its update on the host, the unscale
// and inf/NaN check of the gradients through the unscale_grads op.
#include "athanor/optim/grad_scaler.h"

#include <cmath>
#include <limits>

#include "athanor/core/error.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/dispatch.h"
#include "athanor/ops/optimizer_updates.h"
#include "athanor/ops/pointwise.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::optim {

namespace {

void check_options(const GradScalerOptions& o) {
  ATH_CHECK(std::isfinite(o.init_scale) && o.init_scale > 0 &&
                o.init_scale <= std::numeric_limits<float>::max(),
            ValueError, "GradScaler: init_scale must be a positive finite float32, got {}",
            o.init_scale);
  ATH_CHECK(std::isfinite(o.growth_factor) && o.growth_factor > 1, ValueError,
            "GradScaler: growth_factor must be > 1, got {}", o.growth_factor);
  ATH_CHECK(o.backoff_factor > 0 && o.backoff_factor < 1, ValueError,
            "GradScaler: backoff_factor must be in (0, 1), got {}", o.backoff_factor);
  ATH_CHECK(o.growth_interval > 0, ValueError, "GradScaler: growth_interval must be > 0, got {}",
            o.growth_interval);
}

}  // namespace

GradScaler::GradScaler(GradScalerOptions options) : options_(options) {
  check_options(options_);
  scale_ = static_cast<float>(options_.init_scale);
}

Tensor GradScaler::scale(const Tensor& loss) const {
  if (!options_.enabled) return loss;
  return loss * Scalar(static_cast<double>(scale_));
}

void GradScaler::unscale_(Optimizer& optimizer) {
  if (!options_.enabled) return;
  PerOptimizer& st = state_of(optimizer);
  ATH_CHECK(st.stage == Stage::Ready, ValueError,
            "GradScaler.unscale_: {} since the last update() on this optimizer",
            st.stage == Stage::Unscaled ? "unscale_() has already been called"
                                        : "step() has already been called");
  NoGradGuard no_grad;
  std::vector<Tensor> inputs{zeros({}), full({}, 0.0)};
  // PyTorch: inv_scale = scale.double().reciprocal().float()
  inputs[1].fill_(static_cast<double>(static_cast<float>(1.0 / static_cast<double>(scale_))));
  for (std::size_t g = 0; g < optimizer.num_param_groups(); ++g) {
    for (const Tensor& p : optimizer.params(g)) {
      if (p.defined() && p.grad().defined()) inputs.push_back(p.grad());
    }
  }
  if (inputs.size() > 2) call(op_unscale_grads(), TensorSpan(inputs), UnscaleGradsAttrs{});
  st.found_inf = inputs[0].item<float>() != 0.0f;
  st.stage = Stage::Unscaled;
}

bool GradScaler::step(Optimizer& optimizer) {
  if (!options_.enabled) {
    optimizer.step();
    return true;
  }
  PerOptimizer& st = state_of(optimizer);
  ATH_CHECK(st.stage != Stage::Stepped, ValueError,
            "GradScaler.step: step() has already been called since the last update()");
  if (st.stage == Stage::Ready) unscale_(optimizer);
  PerOptimizer& after = state_of(optimizer);
  after.stage = Stage::Stepped;
  if (after.found_inf) return false;
  optimizer.step();
  return true;
}

void GradScaler::update() {
  if (!options_.enabled) return;
  ATH_CHECK(!per_optimizer_.empty(), ValueError,
            "GradScaler.update: no inf checks were recorded prior to update() (call step() or "
            "unscale_() first)");
  bool found_inf = false;
  for (const auto& entry : per_optimizer_) found_inf = found_inf || entry.second.found_inf;
  // PyTorch's _amp_update_scale_: float32 products of the scale and a double factor.
  if (found_inf) {
    scale_ = static_cast<float>(static_cast<double>(scale_) * options_.backoff_factor);
    growth_tracker_ = 0;
  } else if (growth_tracker_ + 1 == options_.growth_interval) {
    const float grown = static_cast<float>(static_cast<double>(scale_) * options_.growth_factor);
    if (std::isfinite(grown)) scale_ = grown;
    growth_tracker_ = 0;
  } else {
    ++growth_tracker_;
  }
  per_optimizer_.clear();
}

void GradScaler::update(double new_scale) {
  if (!options_.enabled) return;
  ATH_CHECK(std::isfinite(new_scale) && new_scale > 0, ValueError,
            "GradScaler.update: new_scale must be positive and finite, got {}", new_scale);
  scale_ = static_cast<float>(new_scale);
  per_optimizer_.clear();
}

nlohmann::json GradScaler::state_dict() const {
  if (!options_.enabled) return nlohmann::json::object();
  return {{"scale", static_cast<double>(scale_)},
          {"growth_factor", options_.growth_factor},
          {"backoff_factor", options_.backoff_factor},
          {"growth_interval", options_.growth_interval},
          {"_growth_tracker", growth_tracker_}};
}

void GradScaler::load_state_dict(const nlohmann::json& state) {
  ATH_CHECK(state.is_object(), FormatError, "GradScaler state: expected an object, got {}",
            state.type_name());
  if (!options_.enabled) return;
  auto number = [&](const char* key) -> double {
    ATH_CHECK(state.contains(key) && state.at(key).is_number(), FormatError,
              "GradScaler state: '{}' is missing or not a number", key);
    return state.at(key).get<double>();
  };
  GradScalerOptions next = options_;
  next.init_scale = number("scale");
  next.growth_factor = number("growth_factor");
  next.backoff_factor = number("backoff_factor");
  ATH_CHECK(state.contains("growth_interval") && state.at("growth_interval").is_number_integer(),
            FormatError, "GradScaler state: 'growth_interval' is missing or not an integer");
  next.growth_interval = state.at("growth_interval").get<int64_t>();
  ATH_CHECK(state.contains("_growth_tracker") && state.at("_growth_tracker").is_number_integer(),
            FormatError, "GradScaler state: '_growth_tracker' is missing or not an integer");
  const auto tracker = state.at("_growth_tracker").get<int64_t>();
  try {
    check_options(next);
  } catch (const ValueError& e) {
    ATH_CHECK(false, FormatError, "GradScaler state: {}", e.what());
  }
  ATH_CHECK(tracker >= 0 && tracker < next.growth_interval, FormatError,
            "GradScaler state: _growth_tracker {} is outside [0, growth_interval {})", tracker,
            next.growth_interval);
  options_ = next;
  scale_ = static_cast<float>(next.init_scale);
  growth_tracker_ = tracker;
  per_optimizer_.clear();
}

}  // namespace ath::optim

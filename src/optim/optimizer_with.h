// Definitions of OptimizerWith<Options>, included by each optimizer's source, which specializes
// OptionTraits<Options> and then instantiates `template class OptimizerWith<Options>;`.
//
//   template <> struct OptionTraits<SGDOptions> {
//     template <class O, class F> static void fields(O& o, F&& f);   // f("lr", o.lr), ...
//     static void validate(const SGDOptions& o, std::string_view where);
//     static StateSpec state_spec(const SGDOptions& o);
//   };
//
// The field list gives the json form (PyTorch's group keys), per-group overrides and state-dict
// loading from one place.
#pragma once

#include <cmath>
#include <string>

#include "athanor/core/error.h"
#include "athanor/optim/optimizer.h"
#include "json_util.h"

namespace ath::optim {

template <class Options>
struct OptionTraits;

namespace detail {
// The options a ParamGroup sets, under PyTorch's names.
nlohmann::json overrides_json(const ParamGroup& g);

// Range checks shared by the optimizers (PyTorch's messages, with the optimizer's name).
inline void check_non_negative(double v, const char* what, std::string_view where) {
  ATH_CHECK(v >= 0.0 && std::isfinite(v), ValueError,
            "{}: invalid {} value {} (must be a finite number >= 0)", where, what, v);
}
inline void check_lr(double lr, std::string_view where) {
  ATH_CHECK(!std::isnan(lr), ValueError,
            "{}: no lr given (the optimizer's options and the parameter group both leave it unset)",
            where);
  ATH_CHECK(lr >= 0.0 && std::isfinite(lr), ValueError,
            "{}: invalid learning rate {} (must be a finite number >= 0)", where, lr);
}
inline void check_betas(const std::pair<double, double>& b, std::string_view where) {
  ATH_CHECK(b.first >= 0.0 && b.first < 1.0, ValueError,
            "{}: invalid beta parameter at index 0: {} (must be in [0, 1))", where, b.first);
  ATH_CHECK(b.second >= 0.0 && b.second < 1.0, ValueError,
            "{}: invalid beta parameter at index 1: {} (must be in [0, 1))", where, b.second);
}
}  // namespace detail

template <class Options>
OptimizerWith<Options>::OptimizerWith(std::string name, Options defaults)
    : Optimizer(std::move(name)), defaults_(std::move(defaults)) {
  // The constructor's options are checked as PyTorch checks them, except that SGD's lr may be
  // left for every group to give.
  Options probe = defaults_;
  if (std::isnan(probe.lr)) probe.lr = 0.0;
  OptionTraits<Options>::validate(probe, this->name());
}

template <class Options>
MomentumKind OptimizerWith<Options>::momentum_kind() const {
  if constexpr (requires(Options o) { o.momentum; })
    return MomentumKind::Momentum;
  else if constexpr (requires(Options o) { o.betas; })
    return MomentumKind::Beta1;
  else
    return MomentumKind::None;
}

template <class Options>
double OptimizerWith<Options>::momentum(std::size_t g) const {
  const Options& o = options(g);
  if constexpr (requires { o.momentum; })
    return o.momentum;
  else if constexpr (requires { o.betas; })
    return o.betas.first;
  else
    ATH_THROW(ValueError, "{} has no momentum or betas option", name());
}

template <class Options>
void OptimizerWith<Options>::set_momentum(std::size_t g, double m) {
  Options& o = options(g);
  if constexpr (requires { o.momentum; })
    o.momentum = m;
  else if constexpr (requires { o.betas; })
    o.betas.first = m;
  else
    ATH_THROW(ValueError, "{} has no momentum or betas option", name());
}

template <class Options>
void OptimizerWith<Options>::push_options(const ParamGroup& overrides) {
  nlohmann::json j = nlohmann::json::object();
  OptionTraits<Options>::fields(defaults_, detail::JsonWriter{j});
  const nlohmann::json given = detail::overrides_json(overrides);
  for (const auto& [key, value] : given.items()) {
    ATH_CHECK(j.contains(key), ValueError,
              "{}: parameter group {} sets '{}', which {} does not have", name(), groups_.size(),
              key, name());
    j[key] = value;
  }
  if (std::isnan(defaults_.lr) && !overrides.lr)
    ATH_THROW(ValueError, "{}: parameter group {} didn't specify a value of required option lr",
              name(), groups_.size());
  options_.push_back(std::any_cast<Options>(options_from_json(j)));
}

template <class Options>
nlohmann::json OptimizerWith<Options>::options_to_json(std::size_t g) const {
  nlohmann::json j = nlohmann::json::object();
  OptionTraits<Options>::fields(options_[g], detail::JsonWriter{j});
  return j;
}

template <class Options>
std::any OptimizerWith<Options>::options_from_json(const nlohmann::json& j) const {
  Options o{};
  OptionTraits<Options>::fields(o, detail::JsonReader{j, name()});
  OptionTraits<Options>::validate(o, name());
  return o;
}

template <class Options>
void OptimizerWith<Options>::set_options(std::size_t g, std::any options) {
  options_.at(g) = std::any_cast<Options>(std::move(options));
}

template <class Options>
StateSpec OptimizerWith<Options>::state_spec(const std::any& options) const {
  return OptionTraits<Options>::state_spec(std::any_cast<const Options&>(options));
}

}  // namespace ath::optim

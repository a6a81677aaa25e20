// Helpers shared by the optim tests: building an optimizer from the golden files' json options,
// and the deterministic objective tools/golden/optim.py uses (g = A * p + s_t per element).
#pragma once

#include <cmath>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "athanor/athanor.h"
#include "athanor/optim/optim.h"

namespace ath::testing {

using nlohmann::json;

inline optim::ParamGroup group_from_json(const json& j, std::vector<Tensor> params) {
  optim::ParamGroup g{.params = std::move(params)};
  auto num = [&](const char* k, std::optional<double>& f) {
    if (j.contains(k)) f = j[k].get<double>();
  };
  auto flag = [&](const char* k, std::optional<bool>& f) {
    if (j.contains(k)) f = j[k].get<bool>();
  };
  num("lr", g.lr);
  num("momentum", g.momentum);
  num("dampening", g.dampening);
  num("weight_decay", g.weight_decay);
  flag("nesterov", g.nesterov);
  flag("maximize", g.maximize);
  if (j.contains("betas"))
    g.betas = optim::Betas{j["betas"][0].get<double>(), j["betas"][1].get<double>()};
  num("eps", g.eps);
  flag("amsgrad", g.amsgrad);
  num("alpha", g.alpha);
  flag("centered", g.centered);
  num("lr_decay", g.lr_decay);
  num("initial_accumulator_value", g.initial_accumulator_value);
  num("momentum_decay", g.momentum_decay);
  return g;
}

// Fills an options struct's fields from json (fields absent from json keep their defaults).
template <class O>
O options_from(const json& j) {
  O o{};
  auto set = [&](const char* k, auto& f) {
    if (!j.contains(k)) return;
    using F = std::decay_t<decltype(f)>;
    if constexpr (std::is_same_v<F, optim::Betas>)
      f = {j[k][0].get<double>(), j[k][1].get<double>()};
    else
      f = j[k].get<F>();
  };
  set("lr", o.lr);
  if constexpr (requires { o.momentum; }) set("momentum", o.momentum);
  if constexpr (requires { o.dampening; }) set("dampening", o.dampening);
  if constexpr (requires { o.nesterov; }) set("nesterov", o.nesterov);
  if constexpr (requires { o.maximize; }) set("maximize", o.maximize);
  if constexpr (requires { o.weight_decay; }) set("weight_decay", o.weight_decay);
  if constexpr (requires { o.betas; }) set("betas", o.betas);
  if constexpr (requires { o.eps; }) set("eps", o.eps);
  if constexpr (requires { o.amsgrad; }) set("amsgrad", o.amsgrad);
  if constexpr (requires { o.alpha; }) set("alpha", o.alpha);
  if constexpr (requires { o.centered; }) set("centered", o.centered);
  if constexpr (requires { o.lr_decay; }) set("lr_decay", o.lr_decay);
  if constexpr (requires { o.initial_accumulator_value; })
    set("initial_accumulator_value", o.initial_accumulator_value);
  if constexpr (requires { o.momentum_decay; }) set("momentum_decay", o.momentum_decay);
  return o;
}

inline std::unique_ptr<optim::Optimizer> make_optimizer(const std::string& kind, const json& opts,
                                                        const std::vector<optim::ParamGroup>& g) {
  using namespace optim;
  if (kind == "SGD") return std::make_unique<SGD>(g, options_from<SGDOptions>(opts));
  if (kind == "Adam") return std::make_unique<Adam>(g, options_from<AdamOptions>(opts));
  if (kind == "AdamW") return std::make_unique<AdamW>(g, options_from<AdamWOptions>(opts));
  if (kind == "RMSprop") return std::make_unique<RMSprop>(g, options_from<RMSpropOptions>(opts));
  if (kind == "Adagrad") return std::make_unique<Adagrad>(g, options_from<AdagradOptions>(opts));
  if (kind == "Adamax") return std::make_unique<Adamax>(g, options_from<AdamaxOptions>(opts));
  if (kind == "NAdam") return std::make_unique<NAdam>(g, options_from<NAdamOptions>(opts));
  throw std::runtime_error("unknown optimizer " + kind);
}

// g = A * p + s_t elementwise in the parameters' dtype (k counts elements across params),
// exactly as tools/golden/optim.py computes it.
template <class T>
void set_quadratic_grads(const std::vector<Tensor>& params, int t) {
  int64_t k = 0;
  for (const Tensor& p : params) {
    std::vector<T> v = p.to_vector<T>(), g(v.size());
    for (std::size_t i = 0; i < v.size(); ++i, ++k) {
      const T a = T(0.5 + 0.25 * double(k % 7));
      const T s = T(std::sin(1.3 * t + 0.7 * double(k)));
      const T prod = a * v[i];
      g[i] = prod + s;
    }
    p.set_grad(from_vector<T>(g, p.shape()));
  }
}

inline void set_quadratic_grads(const std::vector<Tensor>& params, int t) {
  if (params[0].dtype() == kFloat64)
    set_quadratic_grads<double>(params, t);
  else
    set_quadratic_grads<float>(params, t);
}

inline std::vector<double> concat_values(const std::vector<Tensor>& ts) {
  std::vector<double> out;
  for (const Tensor& t : ts)
    for (double v : t.to_vector<double>()) out.push_back(v);
  return out;
}

}  // namespace ath::testing

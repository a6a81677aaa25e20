// Optimizer::state_dict / load_state_dict: PyTorch's layout (see OptimizerState in optimizer.h).
// Loading validates everything into fresh structures first and commits only when all is well.
#include <charconv>
#include <set>
#include <unordered_map>

#include "athanor/core/behavior_state.h"
#include "athanor/core/error.h"
#include "athanor/ops/creation.h"
#include "athanor/optim/optimizer.h"
#include "athanor/tensor/grad_mode.h"
#include "json_util.h"

namespace ath::optim {

using detail::number_json;
using nlohmann::json;

namespace {

std::string state_key(int64_t index, const std::string& name) {
  return "state." + std::to_string(index) + "." + name;
}

bool contains(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

}  // namespace

OptimizerState Optimizer::state_dict() const {
  OptimizerState out;
  json state = json::object();
  json groups = json::array();
  int64_t index = 0;
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const Group& grp = groups_[g];
    json gj = options_to_json(g);
    for (const auto& [key, v] : grp.values) gj[key] = number_json(v);
    json ids = json::array();
    for (std::size_t i = 0; i < grp.params.size(); ++i, ++index) {
      ids.push_back(index);
      const ParamState& st = grp.state[i];
      if (st.empty()) continue;
      json sj = json::object();
      for (const auto& [key, t] : st.counters) {
        const double v = t.item<double>();
        if (key == "step")
          sj[key] = static_cast<int64_t>(v);
        else
          sj[key] = number_json(v);
      }
      state[std::to_string(index)] = std::move(sj);
      for (const auto& [name, t] : st.tensors) out.tensors.insert(state_key(index, name), t);
    }
    gj["params"] = std::move(ids);
    groups.push_back(std::move(gj));
  }
  out.meta = json{{"state", std::move(state)}, {"param_groups", std::move(groups)}};
  return out;
}

void Optimizer::load_state_dict(const OptimizerState& sd) {
  // New state tensors replace the old: a compiled step bound to the old ones must retrace.
  note_state_replaced();
  const std::string& who = name_;
  detail::require_object(sd.meta, "the state dict's json", who);
  const json& saved_state = detail::require(sd.meta, "state", who);
  const json& saved_groups = detail::require(sd.meta, "param_groups", who);
  detail::require_object(saved_state, "'state'", who);
  ATH_CHECK(saved_groups.is_array(), ValueError, "{}: 'param_groups' must be a list", who);
  ATH_CHECK(saved_groups.size() == groups_.size(), ValueError,
            "{}: loaded state dict has {} parameter groups, the optimizer has {}", who,
            saved_groups.size(), groups_.size());

  // Groups: options, scheduler values, and the saved parameter ids in order.
  std::vector<std::any> options;
  std::vector<std::map<std::string, double>> values(groups_.size());
  std::unordered_map<int64_t, std::pair<std::size_t, std::size_t>> where;  // id -> (group, i)
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    const std::string gwho = fmt::format("{} param_groups[{}]", who, g);
    const json& gj = saved_groups[g];
    detail::require_object(gj, "a parameter group", gwho);
    std::vector<int64_t> ids = detail::read_ints(gj, "params", gwho);
    ATH_CHECK(ids.size() == groups_[g].params.size(), ValueError,
              "{}: has {} parameters, the optimizer's group has {}", gwho, ids.size(),
              groups_[g].params.size());
    for (std::size_t i = 0; i < ids.size(); ++i)
      ATH_CHECK(where.emplace(ids[i], std::make_pair(g, i)).second, ValueError,
                "{}: parameter id {} appears twice", gwho, ids[i]);
    options.push_back(options_from_json(gj));
    const json known = options_to_json(g);
    for (const auto& [key, v] : gj.items()) {
      if (key == "params" || known.contains(key)) continue;
      values[g][key] = detail::as_number(v, key, gwho);
    }
  }

  // Per-parameter state.
  std::vector<std::vector<ParamState>> state(groups_.size());
  for (std::size_t g = 0; g < groups_.size(); ++g) state[g].resize(groups_[g].params.size());
  std::set<std::string> used;
  for (const auto& [key, sj] : saved_state.items()) {
    int64_t id = -1;
    auto [end, ec] = std::from_chars(key.data(), key.data() + key.size(), id);
    ATH_CHECK(ec == std::errc() && end == key.data() + key.size(), KeyError,
              "{}: state key '{}' is not a parameter id", who, key);
    auto it = where.find(id);
    ATH_CHECK(it != where.end(), KeyError, "{}: state entry {} names no parameter of param_groups",
              who, id);
    const auto [g, i] = it->second;
    const Tensor& param = groups_[g].params[i];
    const std::string swho = fmt::format("{} state[{}]", who, id);
    detail::require_object(sj, "a state entry", swho);
    const StateSpec spec = state_spec(options[g]);
    ParamState st;
    for (const auto& [skey, v] : sj.items()) {
      ATH_CHECK(contains(spec.scalars, skey), KeyError, "{}: unexpected entry '{}'", swho, skey);
      double x = detail::as_number(v, skey, swho);
      if (skey == "step")
        ATH_CHECK(x >= 0 && x == std::floor(x), ValueError,
                  "{}: step must be a non-negative integer, got {}", swho, x);
      st.counters[skey] = full({}, x, kFloat64);
    }
    const bool any_state = !sj.empty();
    auto take = [&](const std::string& name, bool required) {
      const std::string tkey = state_key(id, name);
      if (!sd.tensors.contains(tkey)) {
        ATH_CHECK(!required, KeyError, "{}: missing tensor '{}'", who, tkey);
        return;
      }
      const Tensor& t = sd.tensors.at(tkey);
      ATH_CHECK(t.defined() && t.shape() == param.shape(), ValueError,
                "{}: tensor '{}' has shape {}, the parameter has shape {}", who, tkey,
                t.defined() ? to_string(t.shape()) : std::string("(undefined)"),
                to_string(param.shape()));
      ATH_CHECK(t.is_floating_point(), ValueError,
                "{}: tensor '{}' has dtype {}, expected floating", who, tkey,
                dtype_name(t.dtype()));
      Tensor copy = empty(param.shape(), param.dtype());
      {
        NoGradGuard no_grad;
        copy.copy_(t);
      }
      st.tensors.emplace_back(name, copy);
      used.insert(tkey);
    };
    // A state with counters has every always-present tensor; SGD's state is its buffer alone.
    for (const std::string& n : spec.tensors) take(n, any_state || spec.scalars.empty());
    for (const std::string& n : spec.optional_tensors) take(n, false);
    if (!st.empty())
      for (const std::string& n : spec.scalars)
        ATH_CHECK(st.counters.contains(n), KeyError, "{}: missing entry '{}'", swho, n);
    state[g][i] = std::move(st);
  }
  for (const auto& [key, t] : sd.tensors)
    ATH_CHECK(used.contains(key), KeyError, "{}: unexpected tensor '{}' in the state dict", who,
              key);

  // Commit.
  for (std::size_t g = 0; g < groups_.size(); ++g) {
    set_options(g, std::move(options[g]));
    groups_[g].values = std::move(values[g]);
    groups_[g].state = std::move(state[g]);
  }
}

}  // namespace ath::optim

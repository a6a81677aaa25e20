#include "athanor/nn/module.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <unordered_set>

#include "athanor/core/behavior_state.h"
#include "athanor/core/error.h"
#include "athanor/tensor/grad_mode.h"

namespace ath::nn {

std::string join_name(const std::string& prefix, const std::string& name) {
  return prefix.empty() ? name : prefix + "." + name;
}

Module::Module(std::string type_name) : type_name_(std::move(type_name)) {}
Module::~Module() = default;

Tensor Module::forward(const Tensor& /*input*/) {
  ATH_THROW(ValueError, "{}: this module has no one-tensor forward(); call its own overload",
            type_name_);
}

Tensor Module::operator()(const Tensor& input) {
  Tensor out = forward(input);
  run_forward_hooks(input, out);
  return out;
}

void Module::run_forward_hooks(const Tensor& input, const Tensor& output) {
  for (auto& [id, hook] : forward_hooks_) hook(*this, input, output);
}

void Module::check_new_name(const std::string& name, const char* what) const {
  ATH_CHECK(!name.empty() && name.find('.') == std::string::npos, ValueError,
            "{}: {} name '{}' must be non-empty and contain no '.'", type_name_, what, name);
  auto taken = [&](const auto& list) {
    return std::any_of(list.begin(), list.end(), [&](const auto& e) { return e.name == name; });
  };
  ATH_CHECK(!taken(params_) && !taken(buffers_) && !taken(children_), ValueError,
            "{}: '{}' is already registered", type_name_, name);
}

Tensor Module::register_parameter(std::string name, Tensor tensor, bool requires_grad) {
  check_new_name(name, "parameter");
  if (!tensor.defined()) return tensor;  // an absent optional parameter (bias=false)
  ATH_CHECK(tensor.is_floating_point(), DTypeError, "{}: parameter '{}' must be floating, got {}",
            type_name_, name, dtype_name(tensor.dtype()));
  tensor.requires_grad_(requires_grad);
  params_.push_back({std::move(name), tensor, true});
  return tensor;
}

Tensor Module::register_buffer(std::string name, Tensor tensor, bool persistent) {
  check_new_name(name, "buffer");
  if (!tensor.defined()) return tensor;
  buffers_.push_back({std::move(name), tensor, persistent});
  return tensor;
}

void Module::add_child(std::string name, Module* child, std::shared_ptr<Module> owner) {
  check_new_name(name, "module");
  ATH_CHECK(child != nullptr && child != this, ValueError, "{}: invalid child module '{}'",
            type_name_, name);
  children_.push_back({std::move(name), child, std::move(owner)});
}

void Module::collect(NamedTensors& out, const std::string& prefix, bool params, bool recurse,
                     bool persistent_only) const {
  for (const Slot& s : params ? params_ : buffers_) {
    if (persistent_only && !s.persistent) continue;
    out.emplace_back(join_name(prefix, s.name), s.tensor);
  }
  if (!recurse) return;
  for (const Child& c : children_) {
    c.module->collect(out, join_name(prefix, c.name), params, true, persistent_only);
  }
}

NamedTensors Module::named_parameters(bool recurse) const {
  NamedTensors all;
  collect(all, "", true, recurse, false);
  // A parameter shared by two layers (tied embeddings) is listed once, as in PyTorch, so an
  // optimizer does not step it twice.
  NamedTensors out;
  std::unordered_set<const TensorImpl*> seen;
  for (auto& e : all) {
    if (seen.insert(e.second.impl()).second) out.push_back(std::move(e));
  }
  return out;
}

std::vector<Tensor> Module::parameters(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_parameters(recurse)) out.push_back(t);
  return out;
}

NamedTensors Module::named_buffers(bool recurse) const {
  NamedTensors out;
  collect(out, "", false, recurse, false);
  return out;
}

std::vector<Tensor> Module::buffers(bool recurse) const {
  std::vector<Tensor> out;
  for (auto& [name, t] : named_buffers(recurse)) out.push_back(t);
  return out;
}

NamedModules Module::named_children() const {
  NamedModules out;
  for (const Child& c : children_) out.emplace_back(c.name, c.module);
  return out;
}

std::vector<Module*> Module::children() const {
  std::vector<Module*> out;
  for (const Child& c : children_) out.push_back(c.module);
  return out;
}

void Module::collect_modules(NamedModules& out, const std::string& prefix) {
  out.emplace_back(prefix, this);
  for (Child& c : children_) c.module->collect_modules(out, join_name(prefix, c.name));
}

NamedModules Module::named_modules() {
  NamedModules out;
  collect_modules(out, "");
  return out;
}

std::vector<Module*> Module::modules() {
  std::vector<Module*> out;
  for (auto& [name, m] : named_modules()) out.push_back(m);
  return out;
}

Tensor Module::parameter(const std::string& dotted_name) const {
  for (auto& [name, t] : named_parameters()) {
    if (name == dotted_name) return t;
  }
  ATH_THROW(KeyError, "{}: no parameter '{}'", type_name_, dotted_name);
}

Module& Module::submodule(const std::string& dotted_name) {
  for (auto& [name, m] : named_modules()) {
    if (name == dotted_name) return *m;
  }
  ATH_THROW(KeyError, "{}: no submodule '{}'", type_name_, dotted_name);
}

int64_t Module::num_parameters(bool trainable_only) const {
  int64_t n = 0;
  for (const Tensor& p : parameters()) {
    if (!trainable_only || p.requires_grad()) n += p.numel();
  }
  return n;
}

Module& Module::train(bool on) {
  if (training_ != on) flip_behavior_flag(this);  // what a compiled step keys its graphs on
  training_ = on;
  for (Child& c : children_) c.module->train(on);
  return *this;
}

void Module::zero_grad() {
  for (const Tensor& p : parameters()) p.set_grad(Tensor());
}

Module& Module::apply(const std::function<void(Module&)>& fn) {
  for (Child& c : children_) c.module->apply(fn);
  fn(*this);
  return *this;
}

Module& Module::to(DType dtype) {
  NoGradGuard no_grad;
  auto convert = [&](const Tensor& t) {
    if (!t.is_floating_point() || t.dtype() == dtype) return;
    Tensor g = t.grad();
    t.set_grad(Tensor());
    t.set_data(t.to(dtype));
    if (g.defined()) t.set_grad(g.to(dtype));
  };
  for (Module* m : modules()) {
    for (Slot& s : m->params_) convert(s.tensor);
    for (Slot& s : m->buffers_) convert(s.tensor);
  }
  return *this;
}

Module& Module::requires_grad_(bool on) {
  for (const Tensor& p : parameters()) p.requires_grad_(on);
  return *this;
}

StateDict Module::state_dict() const {
  StateDict out;
  state_dict_into(out, "");
  return out;
}

// PyTorch's order: a module's parameters, then its persistent buffers, then its children.
void Module::state_dict_into(StateDict& out, const std::string& prefix) const {
  for (const Slot& s : params_) out.insert(join_name(prefix, s.name), s.tensor);
  for (const Slot& s : buffers_) {
    if (s.persistent) out.insert(join_name(prefix, s.name), s.tensor);
  }
  for (const Child& c : children_) c.module->state_dict_into(out, join_name(prefix, c.name));
}

Module::LoadResult Module::load_state_dict(const StateDict& state, bool strict) {
  StateDict own = state_dict();
  LoadResult result;
  std::vector<std::string> mismatched;
  for (const auto& [key, target] : own) {
    if (!state.contains(key)) {
      result.missing_keys.push_back(key);
      continue;
    }
    const Tensor& src = state.at(key);
    if (src.shape() != target.shape()) {
      mismatched.push_back(fmt::format("{} (checkpoint {}, model {})", key,
                                       ath::to_string(src.shape()),
                                       ath::to_string(target.shape())));
    }
  }
  for (const auto& [key, t] : state) {
    if (!own.contains(key)) result.unexpected_keys.push_back(key);
  }
  const bool key_fault =
      strict && (!result.missing_keys.empty() || !result.unexpected_keys.empty());
  if (key_fault || !mismatched.empty()) {
    std::string msg = fmt::format("{}: load_state_dict failed:", type_name_);
    auto list = [&](const char* what, const std::vector<std::string>& keys) {
      if (keys.empty()) return;
      msg += fmt::format("\n  {} ({}): ", what, keys.size());
      msg += fmt::format("{}", fmt::join(keys, ", "));
    };
    if (strict) {
      list("missing keys", result.missing_keys);
      list("unexpected keys", result.unexpected_keys);
    }
    list("shape mismatches", mismatched);
    throw KeyError(msg);
  }
  NoGradGuard no_grad;
  for (auto& [key, target] : own) {
    if (state.contains(key)) Tensor(target).copy_(state.at(key));
  }
  return result;
}

int64_t Module::register_forward_hook(ForwardHook hook) {
  forward_hooks_.emplace_back(next_hook_id_, std::move(hook));
  return next_hook_id_++;
}

void Module::remove_forward_hook(int64_t handle) {
  std::erase_if(forward_hooks_, [&](const auto& h) { return h.first == handle; });
}

void Module::to_string_into(std::string& out, int indent) const {
  out += type_name_ + "(";
  std::string extra = extra_repr();
  if (children_.empty()) {
    out += extra + ")";
    return;
  }
  const std::string pad(static_cast<std::size_t>(indent + 2), ' ');
  if (!extra.empty()) out += fmt::format("\n{}{}", pad, extra);
  for (const Child& c : children_) {
    out += fmt::format("\n{}({}): ", pad, c.name);
    c.module->to_string_into(out, indent + 2);
  }
  out += fmt::format("\n{:{}})", "", indent);
}

std::string Module::to_string() const {
  std::string out;
  to_string_into(out, 0);
  return out;
}

}  // namespace ath::nn

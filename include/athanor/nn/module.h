// nn::Module: the base of every layer and model. A module owns parameters (trainable tensors),
// buffers (state such as BatchNorm's running mean) and submodules, each registered by name, so
// that state_dict() keys are PyTorch's dotted names ("block.0.conv.weight") for the same
// architecture and weights move between the two through safetensors.
//
//   #include "athanor/io/safetensors.h"
//   #include "athanor/nn/linear.h"
//   struct Mlp : nn::Module {
//     nn::Linear fc1{{.in = 784, .out = 128}}, fc2{{.in = 128, .out = 10}};
//     Mlp() : Module("Mlp") { register_module("fc1", fc1); register_module("fc2", fc2); }
//     Tensor forward(const Tensor& x) override { return fc2(relu(fc1(x.flatten(1)))); }
//   };
//   Mlp model;
//   Tensor images = randn({8, 1, 28, 28});
//   Tensor logits = model(images);          // operator() runs forward and the forward hooks
//   auto named = model.named_parameters();  // {"fc1.weight", ...}, {"fc1.bias", ...}, ...
//   assert(named.size() == 4 && named[0].first == "fc1.weight");
//   save_safetensors("mlp.safetensors", model.state_dict());
//   model.load_state_dict(load_safetensors("mlp.safetensors").tensors);
//
// Modules are neither copyable nor movable: parents keep pointers to children registered as
// members. A child made at run time is registered as a shared_ptr, and the parent co-owns it.
// Layers keep handles to their parameters (Linear::weight); registration shares those handles,
// and load_state_dict / to(dtype) write through them (copy_ / set_data), never rebinding.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "athanor/core/dtype.h"
#include "athanor/tensor/state_dict.h"
#include "athanor/tensor/tensor.h"

namespace ath::nn {

class Module;
using NamedTensors = std::vector<std::pair<std::string, Tensor>>;
using NamedModules = std::vector<std::pair<std::string, Module*>>;
// Called after forward with (module, input, output); used by summaries and debugging tools.
using ForwardHook = std::function<void(Module&, const Tensor&, const Tensor&)>;

class Module {
 public:
  explicit Module(std::string type_name = "Module");
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  virtual ~Module();

  // The computation. Modules whose forward takes or returns something other than one tensor
  // (LSTM, MultiheadAttention) declare their own overloads; the one-tensor form here then runs
  // the common case or throws a ValueError naming the module.
  virtual Tensor forward(const Tensor& input);
  // Runs forward, then the forward hooks. Call children through this, not through forward().
  Tensor operator()(const Tensor& input);

  // ---- registration ----------------------------------------------------------------------
  // Registers a parameter (requires_grad set as asked) and returns its handle. Names are
  // identifiers without dots, unique among this module's parameters, buffers and children.
  Tensor register_parameter(std::string name, Tensor tensor, bool requires_grad = true);
  // A buffer is state that is not trained. Non-persistent buffers stay out of state_dict().
  // An undefined tensor registers an absent optional (a Linear without bias registers nothing).
  Tensor register_buffer(std::string name, Tensor tensor, bool persistent = true);
  // A child held as a member of the parent (not owned).
  template <class M>
  M& register_module(std::string name, M& child) {
    add_child(std::move(name), &child, nullptr);
    return child;
  }
  // A child created at run time; the parent shares ownership.
  template <class M>
  std::shared_ptr<M> register_module(std::string name, std::shared_ptr<M> child) {
    add_child(std::move(name), child.get(), child);
    return child;
  }

  // ---- traversal (PyTorch's order: own entries in registration order, then children) ------
  std::vector<Tensor> parameters(bool recurse = true) const;
  NamedTensors named_parameters(bool recurse = true) const;
  std::vector<Tensor> buffers(bool recurse = true) const;
  NamedTensors named_buffers(bool recurse = true) const;
  NamedModules named_children() const;
  std::vector<Module*> children() const;
  // This module first (name ""), then every descendant, depth first, with dotted names.
  NamedModules named_modules();
  std::vector<Module*> modules();
  Tensor parameter(const std::string& dotted_name) const;  // KeyError when absent
  Module& submodule(const std::string& dotted_name);       // KeyError when absent
  const std::string& type_name() const { return type_name_; }
  int64_t num_parameters(bool trainable_only = false) const;

  // ---- modes and bulk operations --------------------------------------------------------------
  // Sets training mode here and in every descendant; dropout and batch norm read it.
  virtual Module& train(bool on = true);
  Module& eval() { return train(false); }
  bool is_training() const { return training_; }
  // Drops every parameter's gradient (PyTorch's set_to_none=True, its default since 2.0):
  // the next backward allocates fresh gradients instead of adding into stale ones.
  void zero_grad();
  // Calls fn on every descendant, then on this module (PyTorch's order).
  Module& apply(const std::function<void(Module&)>& fn);
  // Converts floating parameters and buffers (and existing gradients) to dtype in place.
  Module& to(DType dtype);
  // Sets requires_grad on every parameter (freezing or unfreezing a sub-network).
  Module& requires_grad_(bool on = true);

  // ---- state ------------------------------------------------------------------------------
  // Parameters and persistent buffers under their dotted names, sharing storage (not copies).
  StateDict state_dict() const;
  struct LoadResult {
    std::vector<std::string> missing_keys;
    std::vector<std::string> unexpected_keys;
  };
  // Copies values in (without recording autograd history), converting dtypes. With strict,
  // any missing, unexpected or shape-mismatched key fails the whole load with one KeyError
  // listing every fault, and nothing is written. Without strict, shape mismatches still fail;
  // missing and unexpected keys are returned.
  LoadResult load_state_dict(const StateDict& state, bool strict = true);

  // ---- hooks and printing ------------------------------------------------------------------
  int64_t register_forward_hook(ForwardHook hook);
  void remove_forward_hook(int64_t handle);
  // One line of the layer's configuration, as in PyTorch's repr: "in_features=784, ...".
  virtual std::string extra_repr() const { return {}; }
  // PyTorch-style nested printout of the module tree.
  std::string to_string() const;

 protected:
  // Runs the forward hooks: operator() does after forward; a layer with a call of several
  // inputs (MultiheadAttention, Bilinear) does from its own, with the first input.
  void run_forward_hooks(const Tensor& input, const Tensor& output);
  // Subclasses with state outside parameters/buffers may extend what train() does.
  bool training_ = true;

 private:
  struct Slot {
    std::string name;
    Tensor tensor;
    bool persistent = true;
  };
  struct Child {
    std::string name;
    Module* module = nullptr;
    std::shared_ptr<Module> owner;  // null for members
  };
  void add_child(std::string name, Module* child, std::shared_ptr<Module> owner);
  void check_new_name(const std::string& name, const char* what) const;
  void collect(NamedTensors& out, const std::string& prefix, bool params, bool recurse,
               bool persistent_only) const;
  void collect_modules(NamedModules& out, const std::string& prefix);
  void state_dict_into(StateDict& out, const std::string& prefix) const;
  void to_string_into(std::string& out, int indent) const;

  std::string type_name_;
  std::vector<Slot> params_;
  std::vector<Slot> buffers_;
  std::vector<Child> children_;
  std::vector<std::pair<int64_t, ForwardHook>> forward_hooks_;
  int64_t next_hook_id_ = 0;
};

// Dotted-name join: prefix "" + "weight" -> "weight"; "fc1" + "weight" -> "fc1.weight".
std::string join_name(const std::string& prefix, const std::string& name);

}  // namespace ath::nn

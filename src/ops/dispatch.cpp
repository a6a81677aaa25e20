// The non-template half of the dispatcher and of autograd recording.
#include "athanor/ops/dispatch.h"

#include <fmt/format.h>

#include "athanor/ops/accumulate_grad.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"

namespace ath {

namespace detail {

Device check_inputs(const OpDef& op, TensorSpan inputs) {
  if (op.num_inputs >= 0) {
    ATH_CHECK(static_cast<int>(inputs.size()) == op.num_inputs, Error,
              "expected {} tensor inputs, got {}", op.num_inputs, inputs.size());
  }
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    ATH_CHECK(inputs[i].defined(), ValueError, "input {} is an undefined tensor", i);
  }
  if (inputs.empty()) return kCPU;
  const Device device = inputs[0].device();
  for (std::size_t i = 1; i < inputs.size(); ++i) {
    ATH_CHECK(inputs[i].device() == device, ValueError,
              "expected all inputs on one device: input 0 is on {}, input {} on {}",
              to_string(device), i, to_string(inputs[i].device()));
  }
  return device;
}

Outputs allocate_outputs(OutputSpec& spec, Device device) {
  Outputs out;
  for (TensorMeta& m : spec.outputs) {
    m.device = device;
    out.push_back(empty(m.shape, m.dtype, device));
  }
  return out;
}

void check_provided_outputs(const OutputSpec& spec, Device device,
                            std::span<const Tensor> outputs) {
  ATH_CHECK(outputs.size() == spec.outputs.size(), ValueError,
            "the op makes {} outputs, {} buffers were provided for them", spec.outputs.size(),
            outputs.size());
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    const Tensor& o = outputs[i];
    const TensorMeta& m = spec.outputs[i];
    ATH_CHECK(
        o.defined() && o.shape() == m.shape && o.dtype() == m.dtype && o.device() == device &&
            o.is_contiguous(),
        ValueError,
        "the shape rule makes output {} a contiguous {} {} on {}, but the buffer provided for "
        "it is {} (a replay of a graph whose shapes depend on the data gets this)",
        i, m.dtype, m.shape, to_string(device),
        o.defined() ? fmt::format("{} {} on {}{}", o.dtype(), o.shape(), to_string(o.device()),
                                  o.is_contiguous() ? "" : " (strided)")
                    : std::string("undefined"));
  }
}

TensorSpan promote(const OpDef& op, TensorSpan inputs, DType dtype, std::vector<Tensor>& storage) {
  bool needed = false;
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    if ((op.promote_inputs >> std::min<std::size_t>(i, 31) & 1u) && inputs[i].dtype() != dtype) {
      needed = true;
    }
  }
  if (!needed) return inputs;
  storage.assign(inputs.begin(), inputs.end());
  NoGradGuard no_grad;  // the op's own node differentiates through the conversion
  for (std::size_t i = 0; i < storage.size(); ++i) {
    if ((op.promote_inputs >> std::min<std::size_t>(i, 31) & 1u) && storage[i].dtype() != dtype) {
      storage[i] = storage[i].to(dtype);
    }
  }
  return storage;
}

void missing_kernel(const OpDef& /*op*/, DeviceType device, DType dtype) {
  ATH_THROW(NotImplementedError, "no {} kernel for dtype {}", device_name(device),
            dtype_name(dtype));
}

bool any_requires_grad(TensorSpan inputs) {
  for (const Tensor& t : inputs) {
    const AutogradMeta* m = autograd_meta_if(t);
    if (m != nullptr && m->requires_grad) return true;
  }
  return false;
}

namespace {
thread_local std::span<std::byte> t_workspace;
}  // namespace

WorkspaceScope::WorkspaceScope(std::size_t bytes, Device device)
    : WorkspaceScope(bytes, device, {}) {}

WorkspaceScope::WorkspaceScope(std::size_t bytes, Device device, std::span<std::byte> provided)
    : previous_(t_workspace) {
  if (bytes > 0 && provided.size() >= bytes) {
    t_workspace = provided.first(bytes);
    return;
  }
  if (bytes == 0) {
    t_workspace = {};
    return;
  }
  buffer_ = empty({static_cast<int64_t>(bytes)}, kUInt8, device);
  t_workspace = std::span<std::byte>(static_cast<std::byte*>(buffer_.data_ptr()), bytes);
}

WorkspaceScope::~WorkspaceScope() { t_workspace = previous_; }

void check_written_inputs(const OpDef& op, TensorSpan inputs, const void* attrs) {
  if (!GradMode::is_enabled()) return;
  const int n = static_cast<int>(inputs.size());
  for (int i = 0; i < n; ++i) {
    const AutogradMeta* m = autograd_meta_if(inputs[static_cast<std::size_t>(i)]);
    ATH_CHECK(m == nullptr || !m->requires_grad || !op.mutates_input(i, n, attrs), ValueError,
              "input {} requires grad and would be written in place; run the update under "
              "NoGradGuard (optimizers do)",
              i);
  }
}

void bump_written_inputs(const OpDef& op, TensorSpan inputs, const void* attrs) {
  const int n = static_cast<int>(inputs.size());
  for (int i = 0; i < n; ++i) {
    if (op.mutates_input(i, n, attrs)) inputs[static_cast<std::size_t>(i)].bump_version();
  }
}

void add_context(Error& e, const OpDef& op) {
  std::string prefix = op.name + ": ";
  if (e.message().compare(0, prefix.size(), prefix) != 0) e.prepend(prefix);
}

namespace {
Tensor saved_alias(const Tensor& t) {
  // An alias without autograd metadata: saving an output in its own grad_fn must not create a
  // reference cycle (output -> grad_fn -> output).
  return make_view(t, t.shape(), t.strides(), t.storage_offset());
}
}  // namespace

void wire_node(Node& node, BackwardContext& ctx, const OpDef& op, TensorSpan inputs,
               std::span<Tensor> outputs) {
  const std::size_t n_in = inputs.size();
  node.next_edges.resize(n_in);
  ctx.input_meta_.resize(n_in);
  ctx.needs_grad_.assign(n_in, false);
  ctx.saved_inputs_.resize(n_in);
  ctx.saved_input_versions_.resize(n_in);
  ctx.op_name_ = op.name;
  for (std::size_t i = 0; i < n_in; ++i) {
    const Tensor& t = inputs[i];
    ctx.input_meta_[i] = {t.shape(), t.dtype(), t.device()};
    node.next_edges[i] = gradient_edge(t);
    ctx.needs_grad_[i] = node.next_edges[i].valid();
    if (op.save_inputs >> std::min<std::size_t>(i, 31) & 1u) {
      ctx.saved_inputs_[i] = t;
      ctx.saved_input_versions_[i] = t.version();
    }
  }
  std::shared_ptr<Node> self = node.shared_from_this();
  ctx.saved_outputs_.resize(outputs.size());
  ctx.saved_output_versions_.resize(outputs.size());
  for (std::size_t i = 0; i < outputs.size(); ++i) {
    Tensor& out = outputs[i];
    node.output_meta.push_back({out.shape(), out.dtype()});
    if (op.save_outputs >> i & 1u) {
      ctx.saved_outputs_[i] = saved_alias(out);
      ctx.saved_output_versions_[i] = out.version();
    }
    if (!is_floating(out.dtype())) continue;  // indices and masks carry no gradient
    AutogradMeta& m = autograd_meta(out);
    m.requires_grad = true;
    m.grad_fn = self;
    m.output_nr = static_cast<uint32_t>(i);
  }
}

namespace {
void check_version(const Tensor& t, uint32_t saved, std::string_view op, const char* what,
                   std::size_t i) {
  if (!t.defined()) return;
  ATH_CHECK(t.version() == saved, AutogradError,
            "one of the tensors needed for gradient computation has been modified by an "
            "in-place operation: {} {} of '{}' (shape {}, dtype {}) is at version {}; expected "
            "version {}",
            what, i, op, to_string(t.shape()), dtype_name(t.dtype()), t.version(), saved);
}
}  // namespace

GradList run_backward(Node& node, BackwardContext& ctx, const OpDef& op, GradList&& grads,
                      void (*fn)(BackwardContext&, const void*), const void* attrs) {
  ATH_CHECK(!ctx.released_, AutogradError,
            "trying to backward through the graph a second time (through '{}'); its saved "
            "tensors were freed. Pass retain_graph=true to the first backward.",
            op.name);
  for (std::size_t i = 0; i < ctx.saved_inputs_.size(); ++i) {
    check_version(ctx.saved_inputs_[i], ctx.saved_input_versions_[i], op.name, "input", i);
  }
  for (std::size_t i = 0; i < ctx.saved_outputs_.size(); ++i) {
    check_version(ctx.saved_outputs_[i], ctx.saved_output_versions_[i], op.name, "output", i);
  }
  ctx.output_meta_ = node.output_meta;
  ctx.grad_outputs_ = std::move(grads);
  ctx.grad_inputs_.assign(ctx.input_meta_.size(), Tensor());
  ctx.node_ = &node;
  AutocastPause autocast_pause;  // backward runs in the dtypes forward chose
  try {
    fn(ctx, attrs);
  } catch (Error& e) {
    ctx.node_ = nullptr;
    ctx.unpacked_outputs_.clear();
    e.prepend("backward of " + op.name + ": ");
    throw;
  }
  ctx.node_ = nullptr;
  ctx.unpacked_outputs_.clear();
  GradList result = std::move(ctx.grad_inputs_);
  ctx.grad_outputs_.clear();
  for (std::size_t i = 0; i < result.size(); ++i) {
    Tensor& g = result[i];
    if (!g.defined()) continue;
    if (!ctx.needs_grad_[i]) {
      g = Tensor();
      continue;
    }
    const TensorMeta& m = ctx.input_meta_[i];
    ATH_CHECK(g.shape() == m.shape, AutogradError,
              "backward of '{}' returned a gradient of shape {} for input {} of shape {}", op.name,
              to_string(g.shape()), i, to_string(m.shape));
    ATH_CHECK(g.device() == m.device, AutogradError,
              "backward of '{}' returned a gradient on {} for input {} on {}", op.name,
              to_string(g.device()), i, to_string(m.device));
    if (g.dtype() != m.dtype) g = g.to(m.dtype);
  }
  return result;
}

void release(BackwardContext& ctx) {
  ctx.saved_inputs_.clear();
  ctx.saved_outputs_.clear();
  ctx.released_ = true;
}

// ---- in-place -------------------------------------------------------------------------------

void check_inplace_target(const OpDef& op, const Tensor& self, const OutputSpec& spec) {
  const TensorMeta& r = spec.outputs[0];
  ATH_CHECK(r.shape == self.shape(), ShapeError,
            "output with shape {} doesn't match the broadcast shape {} of the in-place op",
            to_string(self.shape()), to_string(r.shape));
  ATH_CHECK(is_floating(self.dtype()) || !is_floating(r.dtype), DTypeError,
            "result type {} can't be cast to the in-place output's dtype {}", dtype_name(r.dtype),
            dtype_name(self.dtype()));
  (void)op;
}

void check_inplace_autograd(const OpDef& op, const Tensor& self) {
  const AutogradMeta* m = autograd_meta_if(self);
  if (m == nullptr) return;
  ATH_CHECK(!(m->requires_grad && !m->grad_fn), AutogradError,
            "{}_: a leaf tensor that requires grad is being used in an in-place operation",
            op.name);
  ATH_CHECK(!(m->grad_fn && m->grad_fn->is_view()), NotImplementedError,
            "{}_: in-place modification of a view ('{}') of a tensor that requires grad is not "
            "supported; apply the op out of place",
            op.name, m->grad_fn->name());
}

std::vector<Tensor> protect_saved_self(const OpDef& op, TensorSpan inputs) {
  std::vector<Tensor> v(inputs.begin(), inputs.end());
  if ((op.save_inputs & 1u) && !v.empty()) v[0] = v[0].clone();
  return v;
}

void copy_into(Tensor& dst, const Tensor& src) {
  NoGradGuard no_grad;
  dst.copy_(src);
}

void rebase_inplace(const OpDef& op, Tensor& self, const Tensor& result) {
  ATH_CHECK(result.shape() == self.shape(), ShapeError,
            "{}_: output with shape {} doesn't match the broadcast shape {}", op.name,
            to_string(self.shape()), to_string(result.shape()));
  copy_into(self, result);
  const AutogradMeta* rm = autograd_meta_if(result);
  if (rm == nullptr || !rm->grad_fn) return;
  AutogradMeta& m = autograd_meta(self);
  m.requires_grad = true;
  m.grad_fn = rm->grad_fn;
  m.output_nr = rm->output_nr;
  if (result.dtype() != self.dtype()) {  // the node's gradient slot must match self's dtype
    m.grad_fn->output_meta[m.output_nr].dtype = self.dtype();
  }
}

}  // namespace detail

// ---- BackwardContext -------------------------------------------------------------------------

const Tensor& BackwardContext::input(int i) const {
  const Tensor& t = saved_inputs_.at(static_cast<std::size_t>(i));
  ATH_CHECK(t.defined(), Error, "backward of '{}' reads input {}, which its op does not save",
            op_name_, i);
  return t;
}

const Tensor& BackwardContext::output(int i) const {
  const auto k = static_cast<std::size_t>(i);
  const Tensor& t = saved_outputs_.at(k);
  ATH_CHECK(t.defined(), Error, "backward of '{}' reads output {}, which its op does not save",
            op_name_, i);
  // The saved alias carries no history (it would make the node own itself). A formula recorded
  // for double backward must still differentiate through it, so under grad mode the output is
  // handed out re-attached to this node, as torch's SavedVariable does.
  if (!GradMode::is_enabled() || node_ == nullptr || !is_floating(t.dtype())) return t;
  unpacked_outputs_.resize(saved_outputs_.size());
  Tensor& u = unpacked_outputs_[k];
  if (!u.defined()) {
    u = make_view(t, t.shape(), t.strides(), t.storage_offset());
    AutogradMeta& m = autograd_meta(u);
    m.requires_grad = true;
    m.grad_fn = node_->shared_from_this();
    m.output_nr = static_cast<uint32_t>(i);
  }
  return u;
}

bool BackwardContext::grad_output_defined(int i) const {
  return grad_outputs_[static_cast<std::size_t>(i)].defined();
}

const Tensor& BackwardContext::grad_output(int i) {
  Tensor& g = grad_outputs_[static_cast<std::size_t>(i)];
  if (!g.defined()) {
    const GradSlotMeta& m = output_meta_[static_cast<std::size_t>(i)];
    g = zeros(m.shape, m.dtype);
  }
  return g;
}

void BackwardContext::set_grad_input(int i, Tensor g) {
  grad_inputs_[static_cast<std::size_t>(i)] = std::move(g);
}

std::span<std::byte> kernel_workspace() { return detail::t_workspace; }

}  // namespace ath

// The autograd methods of Tensor (declared in tensor.h).
#include "athanor/autograd/engine.h"
#include "athanor/ops/accumulate_grad.h"
#include "athanor/tensor/autograd_meta.h"

namespace ath {

bool Tensor::requires_grad() const {
  const AutogradMeta* m = autograd_meta_if(*this);
  return m != nullptr && m->requires_grad;
}

const Tensor& Tensor::requires_grad_(bool flag) const {
  AutogradMeta& m = autograd_meta(*this);
  ATH_CHECK(!flag || is_floating(dtype()), AutogradError,
            "only tensors of floating point dtype can require gradients, got {}",
            dtype_name(dtype()));
  ATH_CHECK(flag || !m.grad_fn, AutogradError,
            "requires_grad_(false) on a non-leaf tensor; use detach() to get one without history");
  m.requires_grad = flag;
  return *this;
}

Tensor& Tensor::requires_grad_(bool flag) {
  static_cast<const Tensor&>(*this).requires_grad_(flag);
  return *this;
}

bool Tensor::is_leaf() const {
  const AutogradMeta* m = autograd_meta_if(*this);
  return m == nullptr || !m->grad_fn;
}

Tensor Tensor::grad() const {
  const AutogradMeta* m = autograd_meta_if(*this);
  return m != nullptr && m->grad ? Tensor(m->grad) : Tensor();
}

void Tensor::set_grad(const Tensor& g) const {
  if (g.defined()) {
    ATH_CHECK(g.shape() == shape(), ShapeError,
              "set_grad: gradient shape {} doesn't match tensor shape {}",
              ath::to_string(g.shape()), ath::to_string(shape()));
    ATH_CHECK(g.dtype() == dtype(), DTypeError,
              "set_grad: gradient dtype {} doesn't match tensor dtype {}", dtype_name(g.dtype()),
              dtype_name(dtype()));
  }
  autograd_meta(*this).grad = g.defined() ? g.impl_ptr() : nullptr;
}

std::shared_ptr<Node> Tensor::grad_fn() const {
  const AutogradMeta* m = autograd_meta_if(*this);
  return m != nullptr ? m->grad_fn : nullptr;
}

uint32_t Tensor::output_nr() const {
  const AutogradMeta* m = autograd_meta_if(*this);
  return m != nullptr ? m->output_nr : 0;
}

void Tensor::retain_grad() const {
  AutogradMeta& m = autograd_meta(*this);
  ATH_CHECK(m.requires_grad, AutogradError,
            "can't retain_grad on a tensor that has requires_grad=false");
  if (!m.grad_fn || m.retains_grad) return;  // leaves keep their grad anyway
  m.retains_grad = true;
  std::weak_ptr<TensorImpl> weak = impl_ptr();  // weak: the node must not keep the tensor alive
  m.grad_fn->pre_hooks.push_back({m.output_nr, {next_hook_id(), [weak](const Tensor& g) {
                                                  if (auto impl = weak.lock()) {
                                                    AutogradMeta& meta = *impl->autograd;
                                                    meta.grad =
                                                        meta.grad
                                                            ? (Tensor(meta.grad) + g).impl_ptr()
                                                            : g.clone().impl_ptr();
                                                  }
                                                  return Tensor();
                                                }}});
}

bool Tensor::retains_grad() const {
  const AutogradMeta* m = autograd_meta_if(*this);
  return m != nullptr && m->retains_grad;
}

int64_t Tensor::register_hook(GradHook hook) const {
  AutogradMeta& m = autograd_meta(*this);
  ATH_CHECK(m.requires_grad, AutogradError,
            "cannot register a hook on a tensor that doesn't require gradient");
  int64_t id = next_hook_id();
  if (m.grad_fn) {
    m.grad_fn->pre_hooks.push_back({m.output_nr, {id, std::move(hook)}});
  } else {
    m.hooks.emplace_back(id, std::move(hook));
  }
  return id;
}

int64_t Tensor::register_post_accumulate_grad_hook(PostAccumulateGradHook hook) const {
  AutogradMeta& m = autograd_meta(*this);
  ATH_CHECK(m.requires_grad, AutogradError,
            "cannot register a post-accumulate-grad hook on a tensor that doesn't require "
            "gradient");
  ATH_CHECK(!m.grad_fn, AutogradError,
            "post-accumulate-grad hooks cannot be registered on non-leaf tensors");
  int64_t id = next_hook_id();
  m.post_accumulate_hooks.emplace_back(id, std::move(hook));
  return id;
}

void Tensor::remove_hook(int64_t handle) const {
  AutogradMeta* m = autograd_meta_if(*this);
  if (m == nullptr) return;
  std::erase_if(m->hooks, [handle](const auto& h) { return h.first == handle; });
  std::erase_if(m->post_accumulate_hooks, [handle](const auto& h) { return h.first == handle; });
  if (m->grad_fn) {
    std::erase_if(m->grad_fn->pre_hooks,
                  [handle](const auto& h) { return h.second.first == handle; });
  }
}

void Tensor::backward(const Tensor& gradient, bool retain_graph, bool create_graph) const {
  std::vector<Tensor> grads;
  if (gradient.defined()) grads.push_back(gradient);
  ath::backward({*this}, grads, {.retain_graph = retain_graph, .create_graph = create_graph});
}

Tensor Tensor::detach() const { return make_view(*this, shape(), strides(), storage_offset()); }

void Tensor::set_data(const Tensor& new_data) const {
  ATH_CHECK(new_data.defined(), ValueError, "set_data: new data is undefined");
  const AutogradMeta* m = autograd_meta_if(*this);
  ATH_CHECK(m == nullptr || m->grad_fn == nullptr, AutogradError,
            "set_data: only a leaf tensor's data can be replaced (this one has grad_fn)");
  TensorImpl& dst = *impl();
  const TensorImpl& src = *new_data.impl();
  dst.storage = src.storage;
  dst.sizes = src.sizes;
  dst.strides = src.strides;
  dst.offset = src.offset;
  dst.dtype = src.dtype;
  dst.refresh_contiguity();
}

Tensor& Tensor::detach_() {
  if (AutogradMeta* m = autograd_meta_if(*this)) {
    m->grad_fn.reset();
    m->requires_grad = false;
    m->output_nr = 0;
  }
  return *this;
}

}  // namespace ath

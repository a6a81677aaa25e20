#include "athanor/graph/tracer.h"

#include <fmt/format.h>

#include "athanor/core/error.h"

namespace ath::graph {

namespace {
thread_local Tracer* t_tracer = nullptr;
}

Tracer::Tracer(std::span<const Tensor> arguments) {
  for (const Tensor& a : arguments) {
    ATH_CHECK(a.defined(), ValueError, "graph::Tracer: argument {} is an undefined tensor",
              graph_.arguments.size());
    if (seen_.count(a.impl()) != 0) {
      fail(fmt::format("argument {} is the same tensor as an earlier argument",
                       graph_.arguments.size()));
    }
    const ValueId v = graph_.add_argument({a.shape(), a.dtype(), a.device()}, a.strides());
    bind(a, v);
  }
  previous_observer_ = set_op_observer(this);
  previous_host_read_ = std::exchange(detail::t_host_read_observer, &Tracer::on_host_read);
  previous_tracer_ = std::exchange(t_tracer, this);
}

Tracer::~Tracer() {
  if (!finished_) {
    set_op_observer(previous_observer_);
    detail::t_host_read_observer = previous_host_read_;
    t_tracer = previous_tracer_;
  }
}

void Tracer::fail(std::string why) {
  if (failure_.empty()) failure_ = std::move(why);
}

void Tracer::fail_active(std::string why) {
  Tracer* self = t_tracer;
  if (self != nullptr && detail::t_observer == self) self->fail(std::move(why));
}

Tracer::Pause::Pause() {
  if (t_tracer != nullptr && detail::t_observer == t_tracer) {
    paused_ = detail::t_observer;
    detail::t_observer = nullptr;
  }
}

Tracer::Pause::~Pause() {
  if (paused_ != nullptr) detail::t_observer = paused_;
}

void Tracer::on_host_read(const char* what) {
  Tracer* self = t_tracer;
  // Reads inside a kernel (the observer is paused there) are the op's own business.
  if (self == nullptr || detail::t_observer != self) return;
  const std::string after = self->graph_.nodes.empty()
                                ? std::string("before the first op")
                                : fmt::format("after op {} ({})", self->graph_.nodes.size() - 1,
                                              self->graph_.nodes.back().op->name);
  self->fail(
      fmt::format("a host read ({}) {}: what runs next may depend on the value, which a "
                  "replay would not read",
                  what, after));
}

void Tracer::bind(const Tensor& t, ValueId v) {
  seen_[t.impl()] = Seen{t.impl_ptr(), v};
  Buffer* buffer = live_buffer(t);
  if (buffer == nullptr) {
    buffer = &buffers_[t.impl()->storage.get()];
    buffer->storage = t.impl()->storage;
    buffer->owner = graph_.storage_of(v);
  }
  buffer->placed.push_back({v, t.storage_offset()});
}

Tracer::Buffer* Tracer::live_buffer(const Tensor& t) {
  auto it = buffers_.find(t.impl()->storage.get());
  if (it == buffers_.end()) return nullptr;
  if (it->second.storage.expired()) {  // freed; its address was reused
    buffers_.erase(it);
    return nullptr;
  }
  return &it->second;
}

ValueId Tracer::same_layout_value(const Buffer& buffer, const Tensor& t) const {
  // Newest first: after an in-place write the newest version holds the buffer's contents.
  for (auto p = buffer.placed.rbegin(); p != buffer.placed.rend(); ++p) {
    const Value& v = graph_.value(p->value);
    if (p->offset == t.storage_offset() && v.meta.dtype == t.dtype() && v.meta.shape == t.shape() &&
        v.strides == t.strides())
      return p->value;
  }
  return kNoValue;
}

ValueId Tracer::value_of(const Tensor& t, const std::string& where) {
  auto it = seen_.find(t.impl());
  if (it != seen_.end() && !it->second.impl.expired()) return it->second.value;
  // First sight of a tensor the traced code did not make: state (or a constant, decided when
  // the trace finishes). Its buffer may be shared with an earlier input (a view of a
  // parameter): both then name the first as their storage.
  ValueId storage = kNoValue;
  if (const Buffer* buffer = live_buffer(t)) {
    if (graph_.value(buffer->owner).origin == ValueOrigin::Node) {
      if (const ValueId alias = same_layout_value(*buffer, t); alias != kNoValue) {
        seen_[t.impl()] = Seen{t.impl_ptr(), alias};
        return alias;
      }
      fail(
          fmt::format("{} is a tensor first seen there that shares the buffer of %{}, a result of "
                      "the trace, without an op having made it (a view built outside the registry)",
                      where, buffer->owner));
    } else {
      storage = buffer->owner;
    }
  }
  const ValueId v = graph_.add_state(t);
  if (storage != kNoValue) graph_.values[static_cast<std::size_t>(v)].storage = storage;
  bind(t, v);
  return v;
}

void Tracer::on_op(const OpDef& op, TensorSpan inputs, std::span<const Tensor> outputs,
                   const void* attrs) {
  if (finished_) return;
  const auto k = static_cast<int32_t>(graph_.nodes.size());
  Node n{.op = &op, .attrs = op.clone_attrs(attrs)};
  if (const AttrSource* source = current_attr_source(op)) n.attr_source = *source;
  for (std::size_t i = 0; i < inputs.size(); ++i)
    n.inputs.push_back(value_of(inputs[i], fmt::format("input {} of op {} ({})", i, k, op.name)));

  const bool into_self = !op.writes_inputs && op.kind != OpKind::View && outputs.size() == 1 &&
                         !inputs.empty() && outputs[0].impl() == inputs[0].impl();
  auto version_of = [&](ValueId old, int32_t slot) {
    const Value& base = graph_.value(old);
    Value v{.meta = base.meta, .strides = base.strides};
    v.node = k;
    v.output = slot;
    v.version_of = old;
    v.storage = base.storage;
    return graph_.add_value(std::move(v));
  };
  if (into_self) {
    n.write = WriteKind::IntoSelf;
    const ValueId next = version_of(n.inputs[0], 0);
    n.writes.emplace_back(n.inputs[0], next);
    bind(outputs[0], next);
  } else {
    for (std::size_t i = 0; i < outputs.size(); ++i) {
      const Tensor& t = outputs[i];
      auto it = seen_.find(t.impl());
      if (it != seen_.end() && !it->second.impl.expired()) {
        fail(fmt::format("op {} ({}) returned a tensor the trace already knows (%{})", k, op.name,
                         it->second.value));
      }
      Value v{.meta = {t.shape(), t.dtype(), t.device()}, .strides = t.strides()};
      v.node = k;
      v.output = static_cast<int32_t>(i);
      if (op.kind == OpKind::View) v.storage = graph_.storage_of(n.inputs[0]);
      const ValueId id = graph_.add_value(std::move(v));
      n.outputs.push_back(id);
      bind(t, id);
    }
    if (op.writes_inputs) {
      const int num = static_cast<int>(inputs.size());
      for (int i = 0; i < num; ++i) {
        if (!op.mutates_input(i, num, attrs)) continue;
        const ValueId old = n.inputs[static_cast<std::size_t>(i)];
        const ValueId next =
            version_of(old, static_cast<int32_t>(n.outputs.size() + n.writes.size()));
        n.writes.emplace_back(old, next);
        bind(inputs[static_cast<std::size_t>(i)], next);
      }
      if (!n.writes.empty()) n.write = WriteKind::Inputs;
    }
  }
  graph_.nodes.push_back(std::move(n));
}

Graph Tracer::finish(std::span<const Tensor> outputs) {
  ATH_CHECK(!finished_, ValueError, "graph::Tracer::finish called twice");
  set_op_observer(previous_observer_);
  detail::t_host_read_observer = previous_host_read_;
  t_tracer = previous_tracer_;
  finished_ = true;
  for (const Tensor& o : outputs) {
    ATH_CHECK(o.defined(), ValueError, "graph::Tracer::finish: an output is undefined");
    graph_.outputs.push_back(value_of(o, fmt::format("output {}", graph_.outputs.size())));
  }
  // Gradients the engine assigned (not accumulated with an op) to parameters the graph reads.
  for (std::size_t s = 0; s < graph_.state.size(); ++s) {
    const Tensor& p = graph_.state_tensors[s];
    const Tensor grad = p.requires_grad() ? p.grad() : Tensor();
    if (!grad.defined()) continue;
    auto it = seen_.find(grad.impl());
    if (it == seen_.end() || it->second.impl.expired()) continue;
    if (graph_.value(it->second.value).origin == ValueOrigin::Node)
      graph_.grads.push_back({static_cast<int32_t>(s), it->second.value});
  }
  // Inputs that nothing but the graph holds any more are constants: their values are part of
  // the graph (a pass may fold them). The rest stay state, bound by identity.
  std::vector<ValueId> state = std::move(graph_.state);
  std::vector<Tensor> tensors = std::move(graph_.state_tensors);
  graph_.state.clear();
  graph_.state_tensors.clear();
  std::vector<int32_t> new_slot(state.size(), -1);
  for (std::size_t s = 0; s < state.size(); ++s) {
    Value& v = graph_.values[static_cast<std::size_t>(state[s])];
    const bool shared_storage = v.storage != state[s];
    if (tensors[s].impl_ptr().use_count() == 1 && !shared_storage && !tensors[s].requires_grad()) {
      v.origin = ValueOrigin::Constant;
      v.index = static_cast<int32_t>(graph_.constants.size());
      graph_.constants.push_back(std::move(tensors[s]));
    } else {
      v.index = static_cast<int32_t>(graph_.state.size());
      new_slot[s] = v.index;
      graph_.state.push_back(state[s]);
      graph_.state_tensors.push_back(std::move(tensors[s]));
    }
  }
  graph_.state_grad_of.assign(graph_.state.size(), -1);
  for (std::size_t p = 0; p < graph_.state.size(); ++p) {
    const Tensor& param = graph_.state_tensors[p];
    const Tensor grad = param.requires_grad() ? param.grad() : Tensor();
    if (!grad.defined()) continue;
    for (std::size_t s = 0; s < graph_.state.size(); ++s) {
      if (graph_.state_tensors[s].impl() == grad.impl())
        graph_.state_grad_of[s] = static_cast<int32_t>(p);
    }
  }
  for (GradBinding& b : graph_.grads) b.state = new_slot[static_cast<std::size_t>(b.state)];
  std::erase_if(graph_.grads, [](const GradBinding& b) { return b.state < 0; });
  seen_.clear();
  buffers_.clear();
  return std::move(graph_);
}

}  // namespace ath::graph

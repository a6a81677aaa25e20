// Pointwise fusion: a group of element-wise nodes whose intermediates nothing else reads becomes
// one fused_pointwise node (ops/fused_pointwise.h) at the place of the group's last node, which
// reads the group's inputs once and writes its one result.
//
// A node joins a group when:
// - its op has a PointwiseCode (add, mul, div, neg, the comparisons, to_dtype bool -> float32)
//   and it computes in float32 (bool for the comparisons' results and to_dtype's input);
// - its inputs are 0-d or have its output's shape, contiguous (no broadcasting but scalars);
// - its result is read only by nodes of the group: not a graph output, not an assigned
//   gradient, never written in place, never a saved value another node reads;
// - nothing writes the buffers it reads between it and the group's last node, since the fused
//   node reads them there.
// Groups are grown backwards from a sink (the group's last node) through producers; a group of
// one node is left alone. Non-float32 0-d constants (a double 0 in relu's mask) are converted to
// float32 here, as the eager kernel converts them on every call.
#include <algorithm>
#include <optional>

#include "athanor/graph/passes.h"
#include "athanor/ops/comparison.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/fused_pointwise.h"
#include "athanor/ops/pointwise.h"

namespace ath::graph {

namespace {

struct Code {
  PointwiseCode code;
  float alpha = 1.0f;
};

std::optional<Code> code_of(const Node& n) {
  const OpDef* op = n.op;
  if (op == &op_add()) {
    const auto& a = *static_cast<const AlphaAttrs*>(n.attrs.get());
    return Code{PointwiseCode::Add, a.alpha.to<float>()};
  }
  if (op == &op_mul()) return Code{PointwiseCode::Mul};
  if (op == &op_div()) return Code{PointwiseCode::Div};
  if (op == &op_neg()) return Code{PointwiseCode::Neg};
  if (op == &op_gt()) return Code{PointwiseCode::Gt};
  if (op == &op_lt()) return Code{PointwiseCode::Lt};
  if (op == &op_ge()) return Code{PointwiseCode::Ge};
  if (op == &op_le()) return Code{PointwiseCode::Le};
  if (op == &op_eq()) return Code{PointwiseCode::Eq};
  if (op == &op_ne()) return Code{PointwiseCode::Ne};
  if (op == &op_to_dtype()) {
    if (static_cast<const ToDTypeAttrs*>(n.attrs.get())->dtype != kFloat32) return std::nullopt;
    return Code{PointwiseCode::ToFloat};
  }
  return std::nullopt;
}

bool contiguous(const Value& v) { return v.strides == contiguous_strides(v.meta.shape); }

class Fuser {
 public:
  explicit Fuser(Graph& g) : g_(g), users_(g.values.size()), external_(g.values.size(), false) {
    for (std::size_t k = 0; k < g.nodes.size(); ++k) {
      for (ValueId in : g.nodes[k].inputs) users_[static_cast<std::size_t>(in)].push_back(k);
      for (const auto& w : g.nodes[k].writes) {
        writes_.emplace_back(k, g.storage_of(w.first));
        written_.push_back(g.storage_of(w.first));
      }
    }
    for (ValueId o : g.outputs) external_[static_cast<std::size_t>(o)] = true;
    for (const GradBinding& b : g.grads) external_[static_cast<std::size_t>(b.grad)] = true;
  }

  int run() {
    std::vector<bool> grouped(g_.nodes.size(), false);
    std::vector<std::vector<std::size_t>> groups;
    for (std::size_t k = g_.nodes.size(); k-- > 0;) {
      if (grouped[k] || !fusible(k)) continue;
      std::vector<std::size_t> members = grow(k, grouped);
      if (members.size() < 2) continue;
      for (std::size_t m : members) grouped[m] = true;
      groups.push_back(std::move(members));
    }
    if (groups.empty()) return 0;
    std::vector<bool> keep(g_.nodes.size(), true);
    for (auto& members : groups) replace_with_fused(members, keep);
    rewrite(g_, keep, std::vector<ValueId>(g_.values.size(), kNoValue));
    return static_cast<int>(groups.size());
  }

 private:
  bool fusible(std::size_t k) const {
    const Node& n = g_.nodes[k];
    if (n.write != WriteKind::None || n.attr_source || n.outputs.size() != 1) return false;
    const std::optional<Code> c = code_of(n);
    if (!c) return false;
    const Value& out = g_.value(n.outputs[0]);
    if (out.meta.device != kCPU || !contiguous(out) ||
        out.meta.dtype != pointwise_code_dtype(c->code))
      return false;
    const DType operand = c->code == PointwiseCode::ToFloat ? kBool : kFloat32;
    for (ValueId in : n.inputs) {
      const Value& v = g_.value(in);
      if (v.meta.shape.empty()) {  // a scalar: float32, or a constant converted below
        if (v.meta.dtype != operand && !(v.origin == ValueOrigin::Constant && operand == kFloat32))
          return false;
        continue;
      }
      if (v.meta.dtype != operand || v.meta.shape != out.meta.shape || !contiguous(v)) return false;
    }
    return true;
  }

  bool written_between(ValueId v, std::size_t from, std::size_t to) const {
    const ValueId storage = g_.storage_of(v);
    for (const auto& [k, s] : writes_)
      if (s == storage && k > from && k <= to) return true;
    return false;
  }
  bool ever_written(ValueId v) const {
    return std::find(written_.begin(), written_.end(), g_.storage_of(v)) != written_.end();
  }

  // The sink and the producers that can join it, in schedule order.
  std::vector<std::size_t> grow(std::size_t sink, const std::vector<bool>& grouped) const {
    std::vector<std::size_t> members{sink};
    auto is_member = [&](std::size_t k) {
      return std::find(members.begin(), members.end(), k) != members.end();
    };
    for (bool changed = true; changed;) {
      changed = false;
      for (std::size_t i = 0; i < members.size(); ++i) {
        for (ValueId in : g_.nodes[members[i]].inputs) {
          const Value& v = g_.value(in);
          if (v.origin != ValueOrigin::Node || v.version_of != kNoValue) continue;
          const auto p = static_cast<std::size_t>(v.node);
          if (is_member(p) || grouped[p] || !fusible(p)) continue;
          if (external_[static_cast<std::size_t>(in)] || ever_written(in)) continue;
          const auto& users = users_[static_cast<std::size_t>(in)];
          if (!std::all_of(users.begin(), users.end(), is_member)) continue;
          bool inputs_stable = true;
          for (ValueId pin : g_.nodes[p].inputs)
            inputs_stable = inputs_stable && !written_between(pin, p, sink);
          if (!inputs_stable) continue;
          members.push_back(p);
          changed = true;
        }
      }
    }
    // The sink's own inputs, and every member's, are read at the sink.
    for (std::size_t m : members) {
      for (ValueId in : g_.nodes[m].inputs) {
        if (written_between(in, m, sink)) return {sink};
      }
    }
    std::sort(members.begin(), members.end());
    return members;
  }

  void replace_with_fused(const std::vector<std::size_t>& members, std::vector<bool>& keep) {
    PointwiseProgram program;
    std::vector<ValueId> inputs;
    std::vector<std::pair<ValueId, int32_t>> reg;  // value -> register
    auto register_of = [&](ValueId v) -> int32_t {
      for (const auto& [value, r] : reg)
        if (value == v) return r;
      return -1;
    };
    // External inputs first (the program's inputs come before its steps).
    for (std::size_t m : members) {
      for (ValueId in : g_.nodes[m].inputs) {
        const Value& v = g_.value(in);
        const bool inside =
            v.origin == ValueOrigin::Node && v.version_of == kNoValue &&
            std::binary_search(members.begin(), members.end(), static_cast<std::size_t>(v.node));
        if (inside || register_of(in) >= 0) continue;
        ValueId bound = in;
        if (v.meta.shape.empty() && v.meta.dtype != kFloat32 && v.meta.dtype != kBool) {
          bound = g_.add_constant(
              g_.constants[static_cast<std::size_t>(v.index)].to(kFloat32).contiguous());
        }
        reg.emplace_back(in, program.add_input(g_.value(bound).meta.dtype));
        inputs.push_back(bound);
      }
    }
    for (std::size_t m : members) {
      const Node& n = g_.nodes[m];
      const Code c = *code_of(n);
      const int32_t a = register_of(n.inputs[0]);
      const int32_t b = n.inputs.size() > 1 ? register_of(n.inputs[1]) : -1;
      reg.emplace_back(n.outputs[0], program.add_step(c.code, a, b, c.alpha));
    }
    Node& sink = g_.nodes[members.back()];
    const FusedPointwiseAttrs attrs{program.encode()};
    sink.op = &op_fused_pointwise();
    sink.attrs = op_fused_pointwise().clone_attrs(&attrs);
    sink.inputs = std::move(inputs);
    for (std::size_t i = 0; i + 1 < members.size(); ++i) keep[members[i]] = false;
  }

  Graph& g_;
  std::vector<std::vector<std::size_t>> users_;          // by value: the nodes that read it
  std::vector<bool> external_;                           // outputs and assigned gradients
  std::vector<std::pair<std::size_t, ValueId>> writes_;  // (node, storage) per write
  std::vector<ValueId> written_;                         // storages written anywhere
};

}  // namespace

int fuse_pointwise(Graph& g) { return Fuser(g).run(); }

}  // namespace ath::graph

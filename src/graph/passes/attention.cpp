// attention (inference only): the scaled, masked softmax of attention scores becomes
// attention_softmax (ops/attention.h), which applies the scale and a causal mask while it reads
// each row once:
//
//   s = matmul(q [* c1], k^T [* c2]) [* c3 | / c3] [+ M] -> softmax(s, -1)
//     ->  attention_softmax(matmul(q, k^T), scale = c1 * c2 * c3 (or / c3), causal = M given)
//
// The TorchScript exporter scales q and k^T by sqrt(scale) each (two full copies of q and k);
// others scale the scores. c1, c2, c3 are one-element constants; each scaled value must be read
// only by the next node of the pattern. M must be a constant that is exactly causal for the
// scores' [L, S]: 0 where column j <= row i, -inf elsewhere (what PyTorch's causal masks and
// nn.Transformer.generate_square_subsequent_mask hold), broadcast over the leading dims; any
// other additive mask is left alone, since the scale would then apply to it as well.
//
// Not bit-identical (the scale is applied once, inside the softmax, instead of to q and k before
// the product); within a few ulp of the scores.
#include "athanor/ops/attention.h"

#include <limits>
#include <optional>
#include <utility>

#include "athanor/ops/linalg.h"
#include "athanor/ops/nn_functional.h"
#include "athanor/ops/pointwise.h"
#include "graph_edit.h"

namespace ath::graph {

namespace {

using detail::GraphEdit;
using detail::ValueUses;

// Whether constant m, broadcast over the scores' leading dims, is 0 on and below the diagonal
// of each [l, s] matrix and -inf above it.
bool is_causal_mask(const Tensor& m, const Shape& scores) {
  const std::size_t nd = scores.size();
  if (!is_floating(m.dtype()) || m.dim() < 2 || static_cast<std::size_t>(m.dim()) > nd)
    return false;
  const int64_t l = scores[nd - 2], s = scores[nd - 1];
  if (m.size(-2) != l || m.size(-1) != s) return false;
  for (int64_t d = 0; d + 2 < m.dim(); ++d)
    if (m.shape()[d] != 1) return false;
  const std::vector<double> v = m.to(kFloat64).reshape({l * s}).to_vector<double>();
  constexpr double kInf = std::numeric_limits<double>::infinity();
  for (int64_t i = 0; i < l; ++i) {
    for (int64_t j = 0; j < s; ++j) {
      if (v[static_cast<std::size_t>(i * s + j)] != (j <= i ? 0.0 : -kInf)) return false;
    }
  }
  return true;
}

struct Match {
  int32_t product = -1;                        // the matmul
  ValueId operands[2] = {kNoValue, kNoValue};  // its inputs, unscaled
  std::vector<int32_t> removed;                // scaling muls/divs and the mask add
  double scale = 1.0;
  bool causal = false;
};

class Matcher {
 public:
  Matcher(const Graph& g, const ValueUses& uses) : g_(g), uses_(uses) {}

  // The pattern ending at softmax node k, or nullopt.
  std::optional<Match> match(int32_t k) const {
    const Node& sm = g_.nodes[static_cast<std::size_t>(k)];
    const Value& z = g_.value(sm.inputs[0]);
    const auto rank = static_cast<int64_t>(z.meta.shape.size());
    const int64_t dim = static_cast<const SoftmaxAttrs*>(sm.attrs.get())->dim;
    if (rank < 2 || (dim != -1 && dim != rank - 1) || !is_floating(z.meta.dtype)) return {};
    Match m;
    ValueId v = sm.inputs[0];
    int32_t reader = k;
    auto step = [&](ValueId next) {  // v's producer joins the pattern; continue from `next`
      reader = g_.value(v).node;
      m.removed.push_back(reader);
      v = next;
    };
    if (const Node* add = producer_only(v, reader); add != nullptr && add->op == &op_add() &&
                                                    add->inputs.size() == 2 && !add->attr_source &&
                                                    alpha_is_one(*add)) {
      for (std::size_t i = 0; i < 2; ++i) {
        const Tensor* mask = detail::constant_tensor(g_, add->inputs[i]);
        if (mask != nullptr && is_causal_mask(*mask, z.meta.shape)) {
          m.causal = true;
          step(add->inputs[1 - i]);
          break;
        }
      }
    }
    if (const Node* s = producer_only(v, reader); s != nullptr) {
      if (const auto c = scaling(*s, v); c.has_value()) {
        m.scale *= c->first;
        step(c->second);
      }
    }
    const Node* p = producer_only(v, reader);
    if (p == nullptr || (p->op != &op_matmul() && p->op != &op_bmm()) || p->inputs.size() != 2 ||
        p->inputs[0] == p->inputs[1])
      return {};
    m.product = g_.value(v).node;
    for (std::size_t i = 0; i < 2; ++i) {
      ValueId o = p->inputs[i];
      if (const Node* s = producer_only(o, m.product); s != nullptr && s->op == &op_mul()) {
        if (const auto c = scaling(*s, o); c.has_value()) {
          m.scale *= c->first;
          m.removed.push_back(g_.value(o).node);
          o = c->second;
        }
      }
      m.operands[i] = o;
    }
    if (m.removed.empty()) return {};
    return m;
  }

 private:
  static bool alpha_is_one(const Node& add) {
    return static_cast<const AlphaAttrs*>(add.attrs.get())->alpha == Scalar(1);
  }

  // v's producer when v is read by node `reader` alone.
  const Node* producer_only(ValueId v, int32_t reader) const {
    return uses_.only(v, reader) ? detail::producer(g_, v) : nullptr;
  }

  // mul(x, c), mul(c, x) or div(x, c), c a nonzero one-element constant, out with x's type:
  // {the factor (1 / c for div), x}.
  std::optional<std::pair<double, ValueId>> scaling(const Node& n, ValueId out) const {
    if (n.inputs.size() != 2 || n.attr_source || (n.op != &op_mul() && n.op != &op_div()))
      return std::nullopt;
    const Value& o = g_.value(out);
    for (std::size_t i = n.op == &op_div() ? 1 : 0; i < 2; ++i) {
      const std::optional<double> c = detail::scalar_constant(g_, n.inputs[i]);
      const ValueId x = n.inputs[1 - i];
      const Value& xv = g_.value(x);
      if (!c.has_value() || *c == 0 || xv.meta.shape != o.meta.shape ||
          xv.meta.dtype != o.meta.dtype)
        continue;
      return std::pair{n.op == &op_div() ? 1.0 / *c : *c, x};
    }
    return std::nullopt;
  }

  const Graph& g_;
  const ValueUses& uses_;
};

}  // namespace

int fuse_attention_softmax(Graph& g) {
  if (g.nodes.empty() || detail::writes_memory(g)) return 0;
  const ValueUses uses = detail::value_uses(g);
  const Matcher matcher(g, uses);
  GraphEdit edit(g);
  int changed = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    if (g.nodes[k].op != &op_softmax() || g.nodes[k].attr_source) continue;
    const std::optional<Match> m = matcher.match(static_cast<int32_t>(k));
    if (!m.has_value()) continue;
    for (int32_t r : m->removed) edit.remove(r);
    Node& p = edit.node(m->product);
    p.inputs = {m->operands[0], m->operands[1]};
    Node& sm = edit.node(static_cast<int32_t>(k));
    const AttentionSoftmaxAttrs a{.scale = m->scale, .causal = m->causal};
    sm.op = &op_attention_softmax();
    sm.attrs = op_attention_softmax().clone_attrs(&a);
    sm.inputs = {p.outputs[0]};
    ++changed;
  }
  edit.finish();
  return changed;
}

}  // namespace ath::graph

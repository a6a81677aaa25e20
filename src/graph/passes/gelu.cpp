// gelu (inference only): the exact GELU as exporters spell it out — x * 0.5 * (1 + erf(x / sqrt 2))
// in five element-wise nodes — becomes the registry's gelu (ops/activations.h), one vectorized pass
// that reads x once and writes the result once, instead of five passes and four intermediates.
//
// Matched from the erf node: its input is div(x, sqrt 2) or mul(x, 1 / sqrt 2); erf's result
// goes to add(., 1) (either order); the remaining factors x and 0.5 (or a division by 2) are
// applied by up to two more multiplications in any order and grouping:
//   mul(mul(x, A), 0.5)   mul(mul(A, 0.5), x)   mul(mul(x, 0.5), A)   div(mul(x, A), 2) ...
// where A = 1 + erf(x / sqrt 2). Every intermediate must be read only by the next node of the
// pattern, and every shape must be x's (the constants are one-element scalars). Runs before
// "fuse", which would otherwise merge the tail into a fused_pointwise node.
//
// Not bit-identical: gelu evaluates Phi(x) by a polynomial (gelu_math.h, within 2 ulp of the
// float64 value), where the pattern rounds after each of its five steps.
#include <array>

#include "athanor/ops/activations.h"
#include "athanor/ops/pointwise.h"
#include "graph_edit.h"

namespace ath::graph {

namespace {

using detail::GraphEdit;
using detail::ValueUses;

constexpr double kSqrt2 = 1.41421356237309504880;
constexpr double kTol = 1e-6;  // float32 spellings of sqrt 2 and 1/sqrt 2 are within 1e-7

struct Matcher {
  const Graph& g;
  const ValueUses& uses;

  const Node& at(int32_t k) const { return g.nodes[static_cast<std::size_t>(k)]; }

  bool same_type(ValueId a, ValueId b) const {
    return g.value(a).meta.shape == g.value(b).meta.shape &&
           g.value(a).meta.dtype == g.value(b).meta.dtype;
  }

  // For a binary mul/div/add node reading `v`, its other operand (kNoValue if it does not
  // read v exactly once).
  static ValueId other(const Node& n, ValueId v) {
    if (n.inputs.size() != 2) return kNoValue;
    if (n.inputs[0] == v && n.inputs[1] != v) return n.inputs[1];
    if (n.inputs[1] == v && n.inputs[0] != v) return n.inputs[0];
    return kNoValue;
  }

  bool is_half(ValueId c) const { return detail::scalar_is(g, c, 0.5); }

  // The erf's input is x / sqrt 2 (div) or x * (1 / sqrt 2) (mul): x, else kNoValue.
  ValueId scaled_input(ValueId s, int32_t erf_k) const {
    const Node* d = detail::producer(g, s);
    if (d == nullptr || !uses.only(s, erf_k) || d->inputs.size() != 2) return kNoValue;
    const ValueId x = d->inputs[0];
    if (d->op == &op_div() && detail::scalar_is(g, d->inputs[1], kSqrt2, kTol)) return x;
    if (d->op == &op_mul()) {
      for (int i = 0; i < 2; ++i) {
        if (detail::scalar_is(g, d->inputs[static_cast<std::size_t>(i)], 1 / kSqrt2, kTol))
          return d->inputs[static_cast<std::size_t>(1 - i)];
      }
    }
    return kNoValue;
  }

  // Nodes of the pattern after the add, ending at the node making the GELU; empty if the
  // factors x and 0.5 are not applied exactly once each.
  std::vector<int32_t> tail(ValueId a, ValueId x) const {
    const int32_t k1 = uses.sole_reader(a);
    if (k1 < 0) return {};
    const Node& m1 = at(k1);
    const ValueId f = other(m1, a);
    if (m1.op != &op_mul() || f == kNoValue || !same_type(m1.outputs[0], x)) return {};
    const ValueId y1 = m1.outputs[0];
    if (f == x || is_half(f)) {  // one factor applied: the other comes next
      const int32_t k2 = uses.sole_reader(y1);
      if (k2 < 0) return {};
      const Node& m2 = at(k2);
      const ValueId f2 = other(m2, y1);
      if (f2 == kNoValue || !same_type(m2.outputs[0], x)) return {};
      const bool ok =
          f == x ? (m2.op == &op_mul() && is_half(f2)) ||
                       (m2.op == &op_div() && m2.inputs[1] == f2 && detail::scalar_is(g, f2, 2.0))
                 : m2.op == &op_mul() && f2 == x;
      return ok ? std::vector<int32_t>{k1, k2} : std::vector<int32_t>{};
    }
    // mul(A, h) with h = mul(x, 0.5), or x / 2, read by this mul alone.
    const Node* h = detail::producer(g, f);
    if (h == nullptr || !uses.only(f, k1) || h->inputs.size() != 2) return {};
    const ValueId hx = other(*h, x);
    const bool half = (h->op == &op_mul() && hx != kNoValue && is_half(hx)) ||
                      (h->op == &op_div() && h->inputs[0] == x && detail::scalar_is(g, hx, 2.0));
    if (!half) return {};
    return {g.value(f).node, k1};
  }
};

}  // namespace

int fuse_gelu(Graph& g) {
  if (g.nodes.empty() || detail::writes_memory(g)) return 0;
  const ValueUses uses = detail::value_uses(g);
  const Matcher m{g, uses};
  GraphEdit edit(g);
  int changed = 0;
  for (std::size_t k = 0; k < g.nodes.size(); ++k) {
    const Node& e = g.nodes[k];
    if (e.op != &op_erf() || e.inputs.size() != 1 || e.attr_source) continue;
    const auto erf_k = static_cast<int32_t>(k);
    const ValueId x = m.scaled_input(e.inputs[0], erf_k);
    if (x == kNoValue || !is_floating(g.value(x).meta.dtype) || !m.same_type(e.outputs[0], x))
      continue;
    const int32_t add_k = uses.sole_reader(e.outputs[0]);
    if (add_k < 0) continue;
    const Node& add = m.at(add_k);
    const ValueId one = Matcher::other(add, e.outputs[0]);
    if (add.op != &op_add() || one == kNoValue || !detail::scalar_is(g, one, 1.0) ||
        !(static_cast<const AlphaAttrs*>(add.attrs.get())->alpha == Scalar(1)) ||
        !m.same_type(add.outputs[0], x))
      continue;
    const std::vector<int32_t> rest = m.tail(add.outputs[0], x);
    if (rest.empty()) continue;
    // The last node (the one making the result, read by whatever read the GELU) becomes gelu.
    const std::array<int32_t, 3> gone{g.value(e.inputs[0]).node, erf_k, add_k};
    for (int32_t r : gone) edit.remove(r);
    for (std::size_t i = 0; i + 1 < rest.size(); ++i) edit.remove(rest[i]);
    Node& last = edit.node(rest.back());
    const GeluAttrs exact{};
    last.op = &op_gelu();
    last.attrs = op_gelu().clone_attrs(&exact);
    last.inputs = {x};
    ++changed;
  }
  edit.finish();
  return changed;
}

}  // namespace ath::graph

// Op-table rows: cross_entropy (class indices and probabilities), cross_entropy_backward,
// nll_loss, nll_loss_backward. References are naive float64 loops over [outer, C, inner].
#include <cmath>
#include <limits>

#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

struct Layout {
  int64_t outer = 1, c = 1, inner = 1;
};

Layout layout(const Shape& s) {
  if (s.size() == 1) return {1, s[0], 1};
  Layout l{s[0], s[1], 1};
  for (std::size_t d = 2; d < s.size(); ++d) l.inner *= s[d];
  return l;
}

Shape positions(const Shape& s) {
  Shape p = s;
  p.erase(p.begin() + (s.size() == 1 ? 0 : 1));
  return p;
}

// Element (position p, class c) of x's row-major values.
double at(const std::vector<double>& xv, const Layout& l, int64_t p, int64_t c) {
  return xv[static_cast<std::size_t>(((p / l.inner) * l.c + c) * l.inner + p % l.inner)];
}

std::vector<double> weights_or_ones(const Tensor& w, int64_t c) {
  return w.defined() ? values(w) : std::vector<double>(static_cast<std::size_t>(c), 1.0);
}

struct ClassOpts {
  Tensor weight;
  int64_t ignore = -100;
  Reduction reduction = Reduction::Mean;
  double ls = 0;
};

double log_sum_exp(const std::vector<double>& xv, const Layout& l, int64_t p) {
  double m = -std::numeric_limits<double>::infinity(), s = 0;
  for (int64_t c = 0; c < l.c; ++c) m = std::max(m, at(xv, l, p, c));
  for (int64_t c = 0; c < l.c; ++c) s += std::exp(at(xv, l, p, c) - m);
  return m + std::log(s);
}

// torch: (1 - ls) * nll + ls / C * smooth, nll = -w[t] * logp[t], smooth = -sum_c w[c] logp[c];
// 'mean' divides both sums by the summed weight of the non-ignored targets.
Tensor cross_entropy_ref(const Tensor& x, const Tensor& target, const ClassOpts& o,
                         bool log_probs_input = false) {
  const Layout l = layout(x.shape());
  std::vector<double> xv = values(x), w = weights_or_ones(o.weight, l.c);
  std::vector<int64_t> t = target.to(kInt64).to_vector<int64_t>();
  std::vector<double> per(t.size());
  double nll_sum = 0, smooth_sum = 0, wt_sum = 0;
  for (int64_t p = 0; p < static_cast<int64_t>(t.size()); ++p) {
    if (t[p] == o.ignore) continue;
    const double lse = log_probs_input ? 0 : log_sum_exp(xv, l, p);
    const double nll = -w[t[p]] * (at(xv, l, p, t[p]) - lse);
    double smooth = 0;
    for (int64_t c = 0; c < l.c; ++c) smooth -= w[c] * (at(xv, l, p, c) - lse);
    per[p] = (1 - o.ls) * nll + (o.ls > 0 ? o.ls / l.c * smooth : 0);
    nll_sum += nll;
    smooth_sum += smooth;
    wt_sum += w[t[p]];
  }
  if (o.reduction == Reduction::None) return make_f64(positions(x.shape()), per);
  double v = (1 - o.ls) * nll_sum + (o.ls > 0 ? o.ls / l.c * smooth_sum : 0);
  if (o.reduction == Reduction::Mean) {
    v = (1 - o.ls) * nll_sum / wt_sum + (o.ls > 0 ? o.ls / l.c * smooth_sum / wt_sum : 0);
  }
  return make_f64({}, {v});
}

// -sum(w * target' * log_softmax(x)) over classes, target' = target * (1 - ls) + ls / C.
Tensor cross_entropy_probs_ref(const Tensor& x, const Tensor& target, const ClassOpts& o) {
  const Layout l = layout(x.shape());
  std::vector<double> xv = values(x), tv = values(target), w = weights_or_ones(o.weight, l.c);
  const int64_t npos = l.outer * l.inner;
  std::vector<double> per(static_cast<std::size_t>(npos));
  double total = 0;
  for (int64_t p = 0; p < npos; ++p) {
    const double lse = log_sum_exp(xv, l, p);
    for (int64_t c = 0; c < l.c; ++c) {
      const double tc = at(tv, l, p, c) * (1 - o.ls) + o.ls / l.c;
      per[p] -= w[c] * tc * (at(xv, l, p, c) - lse);
    }
    total += per[p];
  }
  if (o.reduction == Reduction::None) return make_f64(positions(x.shape()), per);
  if (o.reduction == Reduction::Sum) return make_f64({}, {total});
  return make_f64({}, {npos == 0 ? kNaN : total / static_cast<double>(npos)});
}

// dx = G / denom * [(1 - ls) * w[t] * (p - onehot) + ls / C * (sum(w) * p - w)] per position.
Tensor cross_entropy_backward_ref(const Tensor& g, const Tensor& x, const Tensor& target,
                                  const ClassOpts& o) {
  const Layout l = layout(x.shape());
  std::vector<double> xv = values(x), gv = values(g), w = weights_or_ones(o.weight, l.c);
  std::vector<int64_t> t = target.to(kInt64).to_vector<int64_t>();
  double wsum = 0, denom = 0;
  for (double v : w) wsum += v;
  for (int64_t v : t) denom += v == o.ignore ? 0 : w[v];
  if (o.reduction != Reduction::Mean) denom = 1;
  std::vector<double> dx(xv.size(), 0.0);
  for (int64_t p = 0; p < static_cast<int64_t>(t.size()); ++p) {
    if (t[p] == o.ignore) continue;
    const double G = (o.reduction == Reduction::None ? gv[p] : gv[0]) / denom;
    const double lse = log_sum_exp(xv, l, p);
    for (int64_t c = 0; c < l.c; ++c) {
      const double pc = std::exp(at(xv, l, p, c) - lse);
      double d = (1 - o.ls) * w[t[p]] * (pc - (c == t[p] ? 1 : 0));
      d += o.ls / l.c * (wsum * pc - w[c]);
      dx[static_cast<std::size_t>(((p / l.inner) * l.c + c) * l.inner + p % l.inner)] = G * d;
    }
  }
  return make_f64(x.shape(), dx);
}

// nll_loss_backward: zeros except dx[t] = -w[t] * G / denom.
Tensor nll_loss_backward_ref(const Tensor& g, const Tensor& target, const Shape& xs,
                             const ClassOpts& o) {
  const Layout l = layout(xs);
  std::vector<double> gv = values(g), w = weights_or_ones(o.weight, l.c);
  std::vector<int64_t> t = target.to(kInt64).to_vector<int64_t>();
  double denom = 0;
  for (int64_t v : t) denom += v == o.ignore ? 0 : w[v];
  if (o.reduction != Reduction::Mean) denom = 1;
  std::vector<double> dx(static_cast<std::size_t>(numel(xs)), 0.0);
  for (int64_t p = 0; p < static_cast<int64_t>(t.size()); ++p) {
    if (t[p] == o.ignore) continue;
    const double G = (o.reduction == Reduction::None ? gv[p] : gv[0]) / denom;
    dx[static_cast<std::size_t>(((p / l.inner) * l.c + t[p]) * l.inner + p % l.inner)] =
        -w[t[p]] * G;
  }
  return make_f64(xs, dx);
}

// The total weight of the non-ignored targets, as the forward ops' second output.
Tensor total_weight(const Tensor& target, const Tensor& w, int64_t c, int64_t ignore, DType t) {
  std::vector<double> wv = weights_or_ones(w, c);
  double s = 0;
  for (int64_t v : target.to(kInt64).to_vector<int64_t>()) s += v == ignore ? 0 : wv[v];
  return full({}, s, t);
}

CrossEntropyLossOptions ce_options(const ClassOpts& o, const Tensor& w) {
  return {.weight = w, .ignore_index = o.ignore, .reduction = o.reduction, .label_smoothing = o.ls};
}

// Rows call the public function; In 2 (when present) is the weight.
Row ce_row(std::string label, std::vector<In> ins, ClassOpts o, bool probs = false) {
  const bool weighted = ins.size() > 2;
  return Row("cross_entropy", std::move(label))
      .inputs(std::move(ins))
      .call([o, weighted, probs](const Tensors& x) {
        Tensor t = probs ? x[1] : x[1].is_floating_point() ? x[1].to(kInt64) : x[1];
        return cross_entropy(x[0], t, ce_options(o, weighted ? x[2] : Tensor()));
      })
      .ref([o, weighted, probs](const Tensors& x) {
        ClassOpts r = o;
        if (weighted) r.weight = x[2];
        return probs ? cross_entropy_probs_ref(x[0], x[1], r) : cross_entropy_ref(x[0], x[1], r);
      });
}

Row ce_backward_row(std::string label, std::vector<In> ins, ClassOpts o) {
  const bool weighted = ins.size() > 3;
  CrossEntropyAttrs a{.reduction = o.reduction,
                      .ignore_index = o.ignore,
                      .label_smoothing = o.ls,
                      .has_weight = weighted};
  return Row("cross_entropy_backward", std::move(label))
      .inputs(std::move(ins))
      .call([a, weighted](const Tensors& x) {
        // lse and total_weight come from the forward op, so they are x's (as the op requires).
        Tensor t = x[2].is_floating_point() ? x[2].to(kInt64) : x[2];
        Tensor w = weighted ? x[3] : empty({0});
        Outputs f = call(op_cross_entropy(), std::vector<Tensor>{x[1], t, w}, a);
        return call1(op_cross_entropy_backward(), {x[0], x[1], t, w, f[1], f[2]}, a);
      })
      .ref([o, weighted](const Tensors& x) {
        ClassOpts r = o;
        if (weighted) r.weight = x[3];
        return cross_entropy_backward_ref(x[0], x[1], x[2], r);
      });
}

Row nll_row(std::string label, std::vector<In> ins, ClassOpts o) {
  const bool weighted = ins.size() > 2;
  return Row("nll_loss", std::move(label))
      .inputs(std::move(ins))
      .call([o, weighted](const Tensors& x) {
        Tensor t = x[1].is_floating_point() ? x[1].to(kInt64) : x[1];
        return nll_loss(x[0], t,
                        {.weight = weighted ? x[2] : Tensor(),
                         .ignore_index = o.ignore,
                         .reduction = o.reduction});
      })
      .ref([o, weighted](const Tensors& x) {
        ClassOpts r = o;
        r.ls = 0;
        if (weighted) r.weight = x[2];
        return cross_entropy_ref(x[0], x[1], r, /*log_probs_input=*/true);
      });
}

Row nll_backward_row(std::string label, std::vector<In> ins, Shape xs, ClassOpts o) {
  const bool weighted = ins.size() > 2;
  NllLossAttrs a{.reduction = o.reduction,
                 .ignore_index = o.ignore,
                 .has_weight = weighted,
                 .input_shape = xs};
  return Row("nll_loss_backward", std::move(label))
      .inputs(std::move(ins))
      .call([a, weighted, o](const Tensors& x) {
        Tensor t = x[1].is_floating_point() ? x[1].to(kInt64) : x[1];
        Tensor w = weighted ? x[2] : empty({0});
        const int64_t c = a.input_shape[a.input_shape.size() == 1 ? 0 : 1];
        Tensor tw = total_weight(t, weighted ? x[2] : Tensor(), c, o.ignore, kFloat64);
        return call1(op_nll_loss_backward(), {x[0], t, w, tw}, a);
      })
      .ref([o, weighted, xs](const Tensors& x) {
        ClassOpts r = o;
        if (weighted) r.weight = x[2];
        return nll_loss_backward_ref(x[0], x[1], xs, r);
      });
}

In targets(Shape s, std::vector<double> v) {
  return In::fixed(std::move(s), std::move(v)).no_grad();
}
In class_weight(int64_t c) { return In::positive({c}, 0.3, 2.0).no_grad(); }

const std::vector<DType> kAllFloat{kFloat32, kFloat64, kBFloat16, kFloat16};

void ce_bad_calls(Row& r) {
  r.bad("target out of range",
        [] {
          cross_entropy(zeros({3, 4}), full({3}, int64_t(4)));
        })
      .bad("negative target",
           [] {
             cross_entropy(zeros({3, 4}), full({3}, int64_t(-1)));
           })
      .bad("float target of the wrong shape",
           [] {
             cross_entropy(zeros({3, 4}), zeros({3}));
           })
      .bad("int16-like target dtype",
           [] {
             cross_entropy(zeros({3, 4}), zeros({3}, kBool));
           })
      .bad("batch size mismatch",
           [] {
             cross_entropy(zeros({3, 4}), zeros({2}, kInt64));
           })
      .bad("K-dim target mismatch",
           [] {
             cross_entropy(zeros({2, 3, 4}), zeros({2, 5}, kInt64));
           })
      .bad("target with the class dim",
           [] {
             cross_entropy(zeros({3, 4}), zeros({3, 1}, kInt64));
           })
      .bad("1-D input, 1-D target", [] { cross_entropy(zeros({4}), zeros({1}, kInt64)); })
      .bad("weight of the wrong length",
           [] {
             cross_entropy(zeros({3, 4}), zeros({3}, kInt64), {.weight = ones({3})});
           })
      .bad("integer weight",
           [] {
             cross_entropy(zeros({3, 4}), zeros({3}, kInt64), {.weight = ones({4}, kInt64)});
           })
      .bad("weight requiring grad",
           [] {
             Tensor w = ones({4}).requires_grad_();
             cross_entropy(zeros({3, 4}), zeros({3}, kInt64), {.weight = w});
           })
      .bad("label_smoothing above 1",
           [] {
             cross_entropy(zeros({3, 4}), zeros({3}, kInt64), {.label_smoothing = 1.5});
           })
      .bad("negative label_smoothing",
           [] {
             cross_entropy(zeros({3, 4}), zeros({3}, kInt64), {.label_smoothing = -0.1});
           })
      .bad("batchmean",
           [] {
             cross_entropy(zeros({3, 4}), zeros({3}, kInt64), {.reduction = Reduction::BatchMean});
           })
      .bad("integer input",
           [] {
             cross_entropy(zeros({3, 4}, kInt64), zeros({3}, kInt64));
           })
      .bad("0-dim input and target", [] { cross_entropy(zeros({}), zeros({}, kInt64)); })
      .bad("probabilities with ignore_index >= 0",
           [] {
             cross_entropy(zeros({3, 4}), zeros({3, 4}), {.ignore_index = 0});
           })
      .bad("integer probabilities",
           [] {
             cross_entropy(zeros({3, 4}), zeros({3, 4}, kInt64));
           })
      .bad("probabilities with label_smoothing above 1",
           [] {
             cross_entropy(zeros({3, 4}), zeros({3, 4}), {.label_smoothing = 2});
           })
      .bad("probabilities with a bad weight", [] {
        cross_entropy(zeros({3, 4}), zeros({3, 4}), {.weight = ones({2})});
      });
}

}  // namespace

ATH_OP_ROWS(losses_class) {
  std::vector<Row> rows;
  // ---- cross_entropy, class indices ----
  Row r =
      ce_row("2d_mean_ignored", {In::randn({6, 5}), targets({6}, {0, 4, -100, 2, 1, -100})}, {});
  r.dtypes(kAllFloat);
  ce_bad_calls(r);
  rows.push_back(std::move(r));
  rows.push_back(ce_row("2d_sum_weight_smoothing",
                        {In::randn({6, 5}).strided(), In::ints({6}, 0, 5), class_weight(5)},
                        {.reduction = Reduction::Sum, .ls = 0.15})
                     .dtypes(kAllFloat));
  rows.push_back(ce_row("2d_mean_weight_smoothing_ignored",
                        {In::randn({5, 4}), targets({5}, {3, -100, 0, 3, 1}), class_weight(4)},
                        {.reduction = Reduction::Mean, .ls = 0.3}));
  rows.push_back(ce_row("2d_long_rows_weight_smoothing_ignored",  // C >= 16: the 16-lane path
                        {In::randn({5, 40}), targets({5}, {39, -100, 0, 17, 16}), class_weight(40)},
                        {.reduction = Reduction::Mean, .ls = 0.2})
                     .dtypes(kAllFloat));
  rows.push_back(ce_row("4d_none_weight_smoothing",
                        {In::randn({2, 4, 3, 2}), In::ints({2, 3, 2}, 0, 4), class_weight(4)},
                        {.reduction = Reduction::None, .ls = 0.1})
                     .dtypes(kAllFloat));
  rows.push_back(ce_row("3d_mean_ignore_index_in_range",
                        {In::randn({3, 4, 70}).strided(), In::ints({3, 70}, 0, 4)},
                        {.ignore = 2, .reduction = Reduction::Mean, .ls = 0.2}));
  rows.push_back(ce_row("1d_none", {In::randn({5}), targets({}, {3})},
                        {.reduction = Reduction::None, .ls = 0.1}));
  rows.push_back(ce_row("int32_targets", {In::randn({4, 3}), In::ints({4}, 0, 3, kInt32)}, {}));
  rows.push_back(ce_row("uint8_targets", {In::randn({4, 3}), In::ints({4}, 0, 3, kUInt8)},
                        {.reduction = Reduction::Sum}));
  rows.push_back(
      ce_row("large_logits", {In::uniform({4, 7}, -300, 300), In::ints({4}, 0, 7)}, {.ls = 0.05})
          .grad_tol(1e-3, 1e-4));
  rows.push_back(ce_row("many_rows_parallel_blocks", {In::randn({4100, 3}), In::ints({4100}, 0, 3)},
                        {.reduction = Reduction::Sum, .ls = 0.1})
                     .tol(1e-5, 1e-3)
                     .no_gradcheck());  // gradient covered by the smaller rows
  rows.push_back(ce_row("empty_batch_mean", {In::randn({0, 4}), targets({0}, {})}, {}));
  rows.push_back(ce_row("empty_batch_none", {In::randn({0, 4}), targets({0}, {})},
                        {.reduction = Reduction::None}));
  // every target ignored: 'mean' is 0 / 0 (NaN; its gradient is zero, checked by the goldens)
  rows.push_back(
      ce_row("all_ignored_mean", {In::randn({3, 4}), targets({3}, {-100, -100, -100})}, {.ls = 0.1})
          .no_gradcheck());
  rows.push_back(ce_row("all_ignored_sum", {In::randn({3, 4}), targets({3}, {-100, -100, -100})},
                        {.reduction = Reduction::Sum}));
  // ---- cross_entropy, class probabilities (a composition; differentiable in the target) ----
  rows.push_back(ce_row("probs_mean_weight_smoothing",
                        {In::randn({4, 5}), In::uniform({4, 5}, 0, 1), class_weight(5)},
                        {.reduction = Reduction::Mean, .ls = 0.2}, true));
  rows.push_back(ce_row("probs_4d_none", {In::randn({2, 3, 2, 2}), In::uniform({2, 3, 2, 2}, 0, 1)},
                        {.reduction = Reduction::None}, true));
  rows.push_back(ce_row("probs_1d_sum", {In::randn({4}), In::uniform({4}, 0, 1)},
                        {.reduction = Reduction::Sum}, true));
  rows.push_back(
      ce_row("probs_empty_mean", {In::randn({0, 3}), In::uniform({0, 3}, 0, 1)}, {}, true));

  // ---- cross_entropy_backward (lse and total_weight from the forward op on the same x) ----
  Row b = ce_backward_row(
      "2d_mean_weight_smoothing",
      {In::randn({}), In::randn({5, 4}), targets({5}, {3, -100, 0, 3, 1}), class_weight(4)},
      {.reduction = Reduction::Mean, .ls = 0.1});
  b.dtypes(kAllFloat)
      .bad("gradient of the wrong shape",
           [] {
             CrossEntropyAttrs a{};
             call1(
                 op_cross_entropy_backward(),
                 {zeros({3}), zeros({3, 4}), zeros({3}, kInt64), empty({0}), zeros({3}), zeros({})},
                 a);
           })
      .bad("lse of the wrong shape",
           [] {
             CrossEntropyAttrs a{.reduction = Reduction::Sum};
             call1(
                 op_cross_entropy_backward(),
                 {zeros({}), zeros({3, 4}), zeros({3}, kInt64), empty({0}), zeros({2}), zeros({})},
                 a);
           })
      .bad("target out of range", [] {
        CrossEntropyAttrs a{.reduction = Reduction::Sum};
        call1(op_cross_entropy_backward(),
              {zeros({}), zeros({3, 4}), full({3}, int64_t(7)), empty({0}), zeros({3}), zeros({})},
              a);
      });
  rows.push_back(std::move(b));
  rows.push_back(
      ce_backward_row("3d_none",
                      {In::randn({2, 3}), In::randn({2, 4, 3}).strided(), In::ints({2, 3}, 0, 4)},
                      {.reduction = Reduction::None})
          .dtypes(kAllFloat));
  rows.push_back(ce_backward_row(
      "4d_sum_weight_smoothing_ignored",
      {In::randn({}), In::randn({2, 3, 2, 3}),
       targets({2, 2, 3}, {0, 2, -100, 1, 1, 0, 2, -100, 0, 1, 2, 2}), class_weight(3)},
      {.reduction = Reduction::Sum, .ls = 0.25}));
  rows.push_back(ce_backward_row("2d_long_rows_none_weight_smoothing",
                                 {In::randn({4}), In::randn({4, 33}),
                                  targets({4}, {32, 0, -100, 20}), class_weight(33)},
                                 {.reduction = Reduction::None, .ls = 0.1})
                     .dtypes(kAllFloat));
  rows.push_back(ce_backward_row("1d_none_smoothing",
                                 {In::randn({}), In::randn({6}), targets({}, {5})},
                                 {.reduction = Reduction::None, .ls = 0.4}));

  // ---- nll_loss ----
  Row n = nll_row("2d_mean_weight_ignored",
                  {In::randn({5, 4}), targets({5}, {3, -100, 0, 3, 1}), class_weight(4)}, {});
  n.dtypes(kAllFloat)
      .bad("target out of range",
           [] {
             nll_loss(zeros({3, 4}), full({3}, int64_t(4)));
           })
      .bad("float target",
           [] {
             nll_loss(zeros({3, 4}), zeros({3}));
           })
      .bad("batch size mismatch",
           [] {
             nll_loss(zeros({3, 4}), zeros({4}, kInt64));
           })
      .bad("weight of the wrong length",
           [] {
             nll_loss(zeros({3, 4}), zeros({3}, kInt64), {.weight = ones({5})});
           })
      .bad("batchmean",
           [] {
             nll_loss(zeros({3, 4}), zeros({3}, kInt64), {.reduction = Reduction::BatchMean});
           })
      .bad("0-dim input", [] { nll_loss(zeros({}), zeros({}, kInt64)); });
  rows.push_back(std::move(n));
  rows.push_back(nll_row("4d_none", {In::randn({2, 3, 2, 2}).strided(), In::ints({2, 2, 2}, 0, 3)},
                         {.reduction = Reduction::None})
                     .dtypes(kAllFloat));
  rows.push_back(nll_row("3d_sum_ignore_in_range", {In::randn({2, 3, 5}), In::ints({2, 5}, 0, 3)},
                         {.ignore = 1, .reduction = Reduction::Sum}));
  rows.push_back(nll_row("1d_mean", {In::randn({4}), targets({}, {2})}, {}));
  rows.push_back(nll_row("empty_batch_mean", {In::randn({0, 3}), targets({0}, {})}, {}));
  rows.push_back(nll_row("all_ignored_mean", {In::randn({2, 3}), targets({2}, {-100, -100})}, {})
                     .no_gradcheck());

  // ---- nll_loss_backward ----
  Row nb = nll_backward_row("2d_mean_weight_ignored",
                            {In::randn({}), targets({5}, {3, -100, 0, 3, 1}), class_weight(4)},
                            {5, 4}, {});
  nb.dtypes(kAllFloat)
      .bad("target out of range",
           [] {
             call1(op_nll_loss_backward(), {zeros({}), full({2}, int64_t(9)), empty({0}), ones({})},
                   NllLossAttrs{.input_shape = {2, 3}});
           })
      .bad("gradient of the wrong shape", [] {
        call1(op_nll_loss_backward(), {zeros({2}), zeros({2}, kInt64), empty({0}), ones({})},
              NllLossAttrs{.input_shape = {2, 3}});
      });
  rows.push_back(std::move(nb));
  rows.push_back(nll_backward_row("4d_none", {In::randn({2, 2, 3}), In::ints({2, 2, 3}, 0, 4)},
                                  {2, 4, 2, 3}, {.reduction = Reduction::None}));
  rows.push_back(nll_backward_row("1d_sum", {In::randn({}), targets({}, {1})}, {3},
                                  {.reduction = Reduction::Sum}));
  return rows;
}

}  // namespace ath::testing

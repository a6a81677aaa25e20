// Op-table rows: the elementwise losses (mse_loss, l1_loss, smooth_l1_loss, huber_loss,
// binary_cross_entropy, binary_cross_entropy_with_logits, kl_div) and their backward ops. The
// backward rows' gradcheck exercises the double-backward formulas.
#include <cmath>
#include <limits>

#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

enum class L { Mse, L1, SmoothL1, Huber, Bce, BceLogits, KlDiv };

struct Spec {
  L kind = L::Mse;
  Reduction reduction = Reduction::Mean;
  double param = 1;  // beta / delta
  bool log_target = false;
  bool has_w = false, has_pw = false;
};

double sgn(double d) { return d > 0 ? 1 : d < 0 ? -1 : 0; }

double softplus_neg(double x) {  // log(1 + exp(-x))
  return x < -30 ? -x + std::log1p(std::exp(x)) : std::log1p(std::exp(-x));
}

double value(const Spec& s, double x, double y, double w, double pw) {
  const double d = x - y, z = std::abs(d);
  switch (s.kind) {
    case L::Mse:
      return d * d;
    case L::L1:
      return z;
    case L::SmoothL1:
      return s.param == 0 ? z : z < s.param ? 0.5 * d * d / s.param : z - 0.5 * s.param;
    case L::Huber:
      return z < s.param ? 0.5 * d * d : s.param * (z - 0.5 * s.param);
    case L::Bce:
      return -w * (y * std::max(std::log(x), -100.0) + (1 - y) * std::max(std::log(1 - x), -100.0));
    case L::BceLogits:
      return w * ((1 - y) * x + (1 + (pw - 1) * y) * softplus_neg(x));
    case L::KlDiv:
      if (s.log_target) return std::exp(y) * (y - x);
      return (y == 0 ? 0.0 : y * std::log(y)) - y * x;
  }
  return kNaN;
}

// (dL/dx, dL/dy).
std::pair<double, double> grad(const Spec& s, double x, double y, double w, double pw) {
  const double d = x - y;
  switch (s.kind) {
    case L::Mse:
      return {2 * d, -2 * d};
    case L::L1:
      return {sgn(d), -sgn(d)};
    case L::SmoothL1: {
      double g = s.param == 0 || std::abs(d) >= s.param ? sgn(d) : d / s.param;
      return {g, -g};
    }
    case L::Huber: {
      double g = std::abs(d) < s.param ? d : s.param * sgn(d);
      return {g, -g};
    }
    case L::Bce:
      return {w * d / std::max(x * (1 - x), double(1e-12f)), w * (std::log(1 - x) - std::log(x))};
    case L::BceLogits: {
      const double sig = 1 / (1 + std::exp(-x));
      return {w * ((1 + (pw - 1) * y) * sig - pw * y), w * ((pw - 1) * softplus_neg(x) - x)};
    }
    case L::KlDiv:
      if (s.log_target) return {-std::exp(y), std::exp(y) * (y - x + 1)};
      return {-y, std::log(y) + 1 - x};
  }
  return {kNaN, kNaN};
}

double divisor(Reduction r, const Shape& input, int64_t n) {
  if (r == Reduction::Mean) return static_cast<double>(n);
  if (r == Reduction::BatchMean) return input.empty() ? 1.0 : static_cast<double>(input[0]);
  return 1;
}

// The value of optional operand k (weights broadcast to `shape`) at multi-index idx, or 1.
double operand(const Tensors& x, std::size_t k, const std::vector<int64_t>& idx,
               const Shape& shape) {
  if (k >= x.size()) return 1;
  return values(x[k])[static_cast<std::size_t>(broadcast_index(idx, shape, x[k].shape()))];
}

// Forward reference: x, y broadcast against each other; weights at x[2] (and x[3]).
Tensor loss_ref(const Spec& s, const Tensors& x) {
  const Shape shape = broadcast_shapes(x[0].shape(), x[1].shape());
  const int64_t n = numel(shape);
  std::vector<double> xv = values(x[0]), yv = values(x[1]), per(static_cast<std::size_t>(n));
  double total = 0;
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> idx = unravel(i, shape);
    double w = s.has_w ? operand(x, 2, idx, shape) : 1;
    double pw = s.has_pw ? operand(x, s.has_w ? 3 : 2, idx, shape) : 1;
    per[i] = value(s, xv[broadcast_index(idx, shape, x[0].shape())],
                   yv[broadcast_index(idx, shape, x[1].shape())], w, pw);
    total += per[i];
  }
  if (s.reduction == Reduction::None) return make_f64(shape, per);
  return make_f64({}, {total / divisor(s.reduction, x[0].shape(), n)});
}

// Backward-op reference: inputs g, x, y (one shape), weights; returns stack(dx, dy).
Tensor loss_backward_ref(const Spec& s, const Tensors& in) {
  const Shape& shape = in[1].shape();
  const int64_t n = numel(shape);
  std::vector<double> gv = values(in[0]), xv = values(in[1]), yv = values(in[2]);
  std::vector<double> out(static_cast<std::size_t>(2 * n));
  const double r = 1 / divisor(s.reduction, shape, n);
  for (int64_t i = 0; i < n; ++i) {
    std::vector<int64_t> idx = unravel(i, shape);
    double w = s.has_w ? operand(in, 3, idx, shape) : 1;
    double pw = s.has_pw ? operand(in, s.has_w ? 4 : 3, idx, shape) : 1;
    const double G = (s.reduction == Reduction::None ? gv[i] : gv[0]) * r;
    auto [dx, dy] = grad(s, xv[i], yv[i], w, pw);
    out[i] = G * dx;
    out[n + i] = G * dy;
  }
  Shape os = shape;
  os.insert(os.begin(), 2);
  return make_f64(os, out);
}

const char* op_name(L k) {
  switch (k) {
    case L::Mse:
      return "mse_loss";
    case L::L1:
      return "l1_loss";
    case L::SmoothL1:
      return "smooth_l1_loss";
    case L::Huber:
      return "huber_loss";
    case L::Bce:
      return "binary_cross_entropy";
    case L::BceLogits:
      return "binary_cross_entropy_with_logits";
    case L::KlDiv:
      return "kl_div";
  }
  return "";
}

Tensor call_loss(const Spec& s, const Tensors& x) {
  Tensor w = s.has_w ? x[2] : Tensor();
  Tensor pw = s.has_pw ? x[s.has_w ? 3 : 2] : Tensor();
  switch (s.kind) {
    case L::Mse:
      return mse_loss(x[0], x[1], s.reduction);
    case L::L1:
      return l1_loss(x[0], x[1], s.reduction);
    case L::SmoothL1:
      return smooth_l1_loss(x[0], x[1], {.reduction = s.reduction, .beta = s.param});
    case L::Huber:
      return huber_loss(x[0], x[1], {.reduction = s.reduction, .delta = s.param});
    case L::Bce:
      return binary_cross_entropy(x[0], x[1], {.weight = w, .reduction = s.reduction});
    case L::BceLogits:
      return binary_cross_entropy_with_logits(
          x[0], x[1], {.weight = w, .pos_weight = pw, .reduction = s.reduction});
    case L::KlDiv:
      return kl_div(x[0], x[1], {.reduction = s.reduction, .log_target = s.log_target});
  }
  return {};
}

const Op<PointwiseLossAttrs>& backward_op(L k) {
  switch (k) {
    case L::Mse:
      return op_mse_loss_backward();
    case L::L1:
      return op_l1_loss_backward();
    case L::SmoothL1:
      return op_smooth_l1_loss_backward();
    case L::Huber:
      return op_huber_loss_backward();
    case L::Bce:
      return op_binary_cross_entropy_backward();
    case L::BceLogits:
      return op_binary_cross_entropy_with_logits_backward();
    case L::KlDiv:
      break;
  }
  return op_kl_div_backward();
}

Row loss_row(std::string label, Spec s, std::vector<In> ins) {
  return Row(op_name(s.kind), std::move(label))
      .inputs(std::move(ins))
      .call([s](const Tensors& x) { return call_loss(s, x); })
      .ref([s](const Tensors& x) { return loss_ref(s, x); });
}

// Calls the backward op on (g, x, y[, weights]) with placeholders for absent weights.
Row backward_row(std::string label, Spec s, std::vector<In> ins) {
  return Row(std::string(op_name(s.kind)) + "_backward", std::move(label))
      .inputs(std::move(ins))
      .call([s](const Tensors& x) {
        std::vector<Tensor> in{x[0], x[1], x[2]};
        std::size_t next = 3;
        if (s.kind == L::Bce || s.kind == L::BceLogits) {
          in.push_back(s.has_w ? x[next++] : empty({0}));
        }
        if (s.kind == L::BceLogits) in.push_back(s.has_pw ? x[next] : empty({0}));
        PointwiseLossAttrs a{.reduction = s.reduction,
                             .param = s.param,
                             .log_target = s.log_target,
                             .has_weight = s.has_w,
                             .has_pos_weight = s.has_pw};
        Outputs d = call(backward_op(s.kind), in, a);
        return stack({d[0], d[1]});
      })
      .ref([s](const Tensors& x) { return loss_backward_ref(s, x); });
}

const std::vector<DType> kAllFloat{kFloat32, kFloat64, kBFloat16, kFloat16};

In probs(Shape s) { return In::uniform(std::move(s), 0.1, 0.9); }
In weight(Shape s) { return In::positive(std::move(s), 0.5, 1.5).no_grad(); }

}  // namespace

ATH_OP_ROWS(losses_pointwise) {
  using R = Reduction;
  std::vector<Row> rows;
  // ---- mse_loss ----
  rows.push_back(
      loss_row("mean", {}, {In::randn({3, 4}).strided(), In::randn({3, 4})})
          .dtypes(kAllFloat)
          .bad("shapes not broadcastable",
               [] {
                 mse_loss(zeros({3, 4}), zeros({3}));
               })
          .bad("integer input", [] { mse_loss(zeros({3}, kInt64), zeros({3}, kInt64)); })
          .bad("batchmean", [] { mse_loss(zeros({3}), zeros({3}), Reduction::BatchMean); }));
  rows.push_back(loss_row("none_broadcast_target", {.reduction = R::None},
                          {In::randn({3, 4}), In::randn({4})}));
  rows.push_back(loss_row("sum_broadcast_input", {.reduction = R::Sum},
                          {In::randn({3, 1}), In::randn({3, 4})}));
  rows.push_back(loss_row("empty_mean", {}, {In::randn({0, 3}), In::randn({0, 3})}));
  rows.push_back(loss_row("0dim_none", {.reduction = R::None}, {In::randn({}), In::randn({})}));
  rows.push_back(
      loss_row("many_chunks_sum", {.reduction = R::Sum}, {In::randn({3, 6000}), In::randn({6000})})
          .tol(1e-5, 1e-3));
  // ---- l1_loss ----
  rows.push_back(
      loss_row("sum", {.kind = L::L1, .reduction = R::Sum}, {In::randn({4, 3}), In::randn({4, 3})})
          .dtypes(kAllFloat)
          .bad("shapes not broadcastable", [] { l1_loss(zeros({2}), zeros({3})); })
          .bad("batchmean", [] { l1_loss(zeros({2}), zeros({2}), Reduction::BatchMean); }));
  rows.push_back(loss_row("none_strided", {.kind = L::L1, .reduction = R::None},
                          {In::randn({2, 5}), In::randn({2, 5}).strided()}));
  // ---- smooth_l1_loss ----
  rows.push_back(
      loss_row("mean_beta1", {.kind = L::SmoothL1}, {In::randn({5, 4}), In::randn({5, 4})})
          .dtypes(kAllFloat)
          .bad("negative beta", [] { smooth_l1_loss(zeros({2}), zeros({2}), {.beta = -1}); }));
  rows.push_back(loss_row("none_beta05", {.kind = L::SmoothL1, .reduction = R::None, .param = 0.5},
                          {In::uniform({3, 4}, -2, 2), In::randn({4})}));
  rows.push_back(loss_row("sum_beta0_is_l1", {.kind = L::SmoothL1, .reduction = R::Sum, .param = 0},
                          {In::randn({3, 3}), In::randn({3, 3})}));
  // ---- huber_loss ----
  rows.push_back(
      loss_row("mean_delta1", {.kind = L::Huber}, {In::randn({4, 4}), In::randn({4, 4})})
          .dtypes(kAllFloat)
          .bad("zero delta", [] { huber_loss(zeros({2}), zeros({2}), {.delta = 0}); })
          .bad("negative delta", [] { huber_loss(zeros({2}), zeros({2}), {.delta = -1}); }));
  rows.push_back(loss_row("none_delta03", {.kind = L::Huber, .reduction = R::None, .param = 0.3},
                          {In::randn({2, 3}).strided(), In::randn({2, 3})}));
  // ---- binary_cross_entropy ----
  rows.push_back(
      loss_row("mean", {.kind = L::Bce}, {probs({3, 4}), In::uniform({3, 4}, 0, 1)})
          .dtypes(kAllFloat)
          .bad("input above 1", [] { binary_cross_entropy(full({2}, 1.5), zeros({2})); })
          .bad("NaN input", [] { binary_cross_entropy(full({2}, std::nan("")), zeros({2})); })
          .bad("target of another shape",
               [] {
                 binary_cross_entropy(full({2, 3}, 0.5), zeros({3}));
               })
          .bad("weight not broadcastable",
               [] {
                 binary_cross_entropy(full({2, 3}, 0.5), zeros({2, 3}), {.weight = ones({2})});
               })
          .bad("weight requiring grad", [] {
            Tensor w = ones({3}).requires_grad_();
            binary_cross_entropy(full({2, 3}, 0.5), zeros({2, 3}), {.weight = w});
          }));
  rows.push_back(loss_row("none_class_weight",
                          {.kind = L::Bce, .reduction = R::None, .has_w = true},
                          {probs({3, 4}).strided(), In::uniform({3, 4}, 0, 1), weight({4})}));
  rows.push_back(loss_row("sum_full_weight", {.kind = L::Bce, .reduction = R::Sum, .has_w = true},
                          {probs({2, 3}), In::uniform({2, 3}, 0, 1), weight({2, 3})}));
  rows.push_back(loss_row("saturated_log_clamp", {.kind = L::Bce, .reduction = R::None},
                          {In::fixed({5}, {0, 1, 0, 1, 1e-30}), In::fixed({5}, {0, 0, 1, 1, 1})})
                     .no_gradcheck());  // infinite slopes at 0 and 1
  // ---- binary_cross_entropy_with_logits ----
  rows.push_back(loss_row("mean", {.kind = L::BceLogits},
                          {In::uniform({3, 4}, -4, 4), In::uniform({3, 4}, 0, 1)})
                     .dtypes(kAllFloat)
                     .bad("target of another shape",
                          [] {
                            binary_cross_entropy_with_logits(zeros({2, 3}), zeros({3}));
                          })
                     .bad("pos_weight not broadcastable",
                          [] {
                            binary_cross_entropy_with_logits(zeros({2, 3}), zeros({2, 3}),
                                                             {.pos_weight = ones({2})});
                          })
                     .bad("pos_weight growing the output",
                          [] {
                            binary_cross_entropy_with_logits(zeros({2, 3}), zeros({2, 3}),
                                                             {.pos_weight = ones({4, 2, 3})});
                          })
                     .bad("integer target", [] {
                       binary_cross_entropy_with_logits(zeros({2, 3}), zeros({2, 3}, kInt64));
                     }));
  rows.push_back(loss_row("none_pos_weight",
                          {.kind = L::BceLogits, .reduction = R::None, .has_pw = true},
                          {In::uniform({3, 4}, -4, 4), In::uniform({3, 4}, 0, 1),
                           In::positive({4}, 0.2, 3).no_grad()})
                     .dtypes(kAllFloat));
  rows.push_back(
      loss_row("sum_weight_pos_weight",
               {.kind = L::BceLogits, .reduction = R::Sum, .has_w = true, .has_pw = true},
               {In::uniform({3, 4}, -4, 4).strided(), In::uniform({3, 4}, 0, 1), weight({3, 1}),
                In::positive({4}, 0.2, 3).no_grad()}));
  rows.push_back(
      loss_row("large_logits", {.kind = L::BceLogits, .reduction = R::None},
               {In::fixed({4}, {-1000, 1000, 60, -60}), In::fixed({4}, {0.3, 0.6, 1, 0})})
          .no_gradcheck());  // saturated: finite differences see no slope
  // ---- kl_div ----
  rows.push_back(loss_row("batchmean", {.kind = L::KlDiv, .reduction = R::BatchMean},
                          {In::randn({3, 5}), In::positive({3, 5}, 0.1, 1)})
                     .dtypes(kAllFloat)
                     .bad("shapes not broadcastable", [] { kl_div(zeros({2}), zeros({3})); }));
  rows.push_back(loss_row("log_target_mean", {.kind = L::KlDiv, .log_target = true},
                          {In::randn({2, 4}), In::uniform({2, 4}, -3, 0)}));
  rows.push_back(loss_row("none_strided", {.kind = L::KlDiv, .reduction = R::None},
                          {In::randn({2, 3}).strided(), In::positive({2, 3}, 0.1, 1)}));
  rows.push_back(loss_row("sum_zero_target", {.kind = L::KlDiv, .reduction = R::Sum},
                          {In::randn({3}), In::fixed({3}, {0, 0.5, 0.25})})
                     .no_gradcheck());  // d/dtarget is NaN at 0 (torch's xlogy rule)
  rows.push_back(loss_row("batchmean_broadcast_input",
                          {.kind = L::KlDiv, .reduction = R::BatchMean},
                          {In::randn({3}), In::positive({2, 3}, 0.1, 1)}));
  rows.push_back(loss_row("batchmean_empty", {.kind = L::KlDiv, .reduction = R::BatchMean},
                          {In::randn({0, 3}), In::positive({0, 3}, 0.1, 1)}));

  // ---- the backward ops (gradcheck: their own gradient, i.e. double backward) ----
  rows.push_back(backward_row("mean", {}, {In::randn({}), In::randn({3, 4}), In::randn({3, 4})})
                     .dtypes(kAllFloat)
                     .bad("gradient of the wrong shape", [] {
                       call(op_mse_loss_backward(),
                            std::vector<Tensor>{zeros({3}), zeros({3}), zeros({3})},
                            PointwiseLossAttrs{});
                     }));
  rows.push_back(backward_row("none", {.reduction = R::None},
                              {In::randn({2, 3}), In::randn({2, 3}).strided(), In::randn({2, 3})}));
  rows.push_back(backward_row("sum", {.kind = L::L1, .reduction = R::Sum},
                              {In::randn({}), In::randn({3, 3}), In::randn({3, 3})})
                     .dtypes(kAllFloat));
  rows.push_back(backward_row("none_beta07",
                              {.kind = L::SmoothL1, .reduction = R::None, .param = 0.7},
                              {In::randn({3, 4}), In::uniform({3, 4}, -2, 2), In::randn({3, 4})})
                     .dtypes(kAllFloat));
  rows.push_back(backward_row("mean_delta05", {.kind = L::Huber, .param = 0.5},
                              {In::randn({}), In::uniform({3, 4}, -2, 2), In::randn({3, 4})})
                     .dtypes(kAllFloat));
  rows.push_back(
      backward_row("mean_weight", {.kind = L::Bce, .has_w = true},
                   {In::randn({}), probs({3, 4}), In::uniform({3, 4}, 0, 1), weight({4})})
          .dtypes(kAllFloat));
  rows.push_back(backward_row("none", {.kind = L::Bce, .reduction = R::None},
                              {In::randn({2, 3}), probs({2, 3}), In::uniform({2, 3}, 0, 1)}));
  rows.push_back(
      backward_row("none_weight_pos_weight",
                   {.kind = L::BceLogits, .reduction = R::None, .has_w = true, .has_pw = true},
                   {In::randn({3, 4}), In::uniform({3, 4}, -3, 3), In::uniform({3, 4}, 0, 1),
                    weight({3, 1}), In::positive({4}, 0.2, 3).no_grad()})
          .dtypes(kAllFloat));
  rows.push_back(
      backward_row("sum", {.kind = L::BceLogits, .reduction = R::Sum},
                   {In::randn({}), In::uniform({2, 5}, -3, 3), In::uniform({2, 5}, 0, 1)}));
  rows.push_back(backward_row("batchmean_log_target",
                              {.kind = L::KlDiv, .reduction = R::BatchMean, .log_target = true},
                              {In::randn({}), In::randn({3, 4}), In::uniform({3, 4}, -2, 0)})
                     .dtypes(kAllFloat));
  rows.push_back(backward_row("sum", {.kind = L::KlDiv, .reduction = R::Sum},
                              {In::randn({}), In::randn({2, 4}), In::positive({2, 4}, 0.2, 1)}));
  return rows;
}

}  // namespace ath::testing

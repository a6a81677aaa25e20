// Op-table rows: ctc_loss. The reference enumerates every frame path (C^T of them, small shapes)
// in float64, collapses each (merge repeats, drop blanks) and sums the probabilities of those
// that spell the target: the definition itself, independent of the forward-backward recursion.
// The gradcheck differentiates log_probs directly (athanor's gradient is the exact one).
#include <cmath>
#include <limits>

#include "support/op_table.h"
#include "support/reference.h"

namespace ath::testing {
namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

struct CtcCase {
  std::vector<std::vector<int64_t>> targets;  // per sample
  std::vector<int64_t> input_lengths;
  CtcLossOptions options;
  bool concatenated = false;
};

// -log P(target | log_probs[:frames, b, :]) by enumeration.
double brute_force_nll(const std::vector<double>& lp, int64_t n, int64_t c, int64_t b,
                       int64_t frames, const std::vector<int64_t>& target, int64_t blank) {
  double best = -kInf;
  std::vector<double> scores;
  std::vector<int64_t> path(static_cast<std::size_t>(frames), 0);
  int64_t count = 1;
  for (int64_t t = 0; t < frames; ++t) count *= c;
  for (int64_t p = 0; p < count; ++p) {
    int64_t v = p;
    for (int64_t t = 0; t < frames; ++t, v /= c) path[static_cast<std::size_t>(t)] = v % c;
    std::vector<int64_t> collapsed;
    int64_t prev = -1;
    double score = 0;
    for (int64_t t = 0; t < frames; ++t) {
      const int64_t k = path[static_cast<std::size_t>(t)];
      if (k != prev && k != blank) collapsed.push_back(k);
      prev = k;
      score += lp[static_cast<std::size_t>((t * n + b) * c + k)];
    }
    if (collapsed != target) continue;
    scores.push_back(score);
    best = std::max(best, score);
  }
  if (scores.empty()) return kInf;
  double s = 0;
  for (double v : scores) s += std::exp(v - best);
  return -(best + std::log(s));
}

Tensor ctc_reference(const Tensor& log_probs, const CtcCase& k) {
  const std::vector<double> lp = values(log_probs);
  const int64_t n = log_probs.shape()[1], c = log_probs.shape()[2];
  std::vector<double> per;
  double total = 0;
  for (int64_t b = 0; b < n; ++b) {
    const auto& tg = k.targets[static_cast<std::size_t>(b)];
    double v = brute_force_nll(lp, n, c, b, k.input_lengths[static_cast<std::size_t>(b)], tg,
                               k.options.blank);
    if (k.options.zero_infinity && std::isinf(v)) v = 0;
    per.push_back(v);
    total += k.options.reduction == Reduction::Mean
                 ? v / static_cast<double>(std::max<std::size_t>(tg.size(), 1))
                 : v;
  }
  if (k.options.reduction == Reduction::None) return make_f64({n}, per);
  if (k.options.reduction == Reduction::Sum) return make_f64({}, {total});
  return make_f64({}, {total / static_cast<double>(n)});
}

// The targets as the op takes them: padded [N, S_max] (zeros after each) or concatenated.
Tensor target_tensor(const CtcCase& k) {
  std::vector<int64_t> flat;
  std::size_t width = 0;
  for (const auto& t : k.targets) width = std::max(width, t.size());
  for (const auto& t : k.targets) {
    flat.insert(flat.end(), t.begin(), t.end());
    if (!k.concatenated) flat.insert(flat.end(), width - t.size(), 0);
  }
  Tensor v = from_vector(flat);
  return k.concatenated
             ? v
             : v.reshape({static_cast<int64_t>(k.targets.size()), static_cast<int64_t>(width)});
}

std::vector<int64_t> target_lengths(const CtcCase& k) {
  std::vector<int64_t> l;
  for (const auto& t : k.targets) l.push_back(static_cast<int64_t>(t.size()));
  return l;
}

Row ctc_row(std::string label, Shape shape, CtcCase k) {
  return Row("ctc_loss", std::move(label))
      .inputs({In::randn(std::move(shape))})
      .call([k](const Tensors& x) {
        return ctc_loss(x[0], target_tensor(k), k.input_lengths, target_lengths(k), k.options);
      })
      .ref([k](const Tensors& x) { return ctc_reference(x[0], k); });
}

// A valid batch the bad calls below vary: log_probs [4, 2, 3], targets [[1, 2], [2, 0]].
void ctc_bad_calls(Row& r) {
  const Tensor lp = zeros({4, 2, 3});
  const Tensor tg = from_vector<int64_t>({1, 2, 2, 0}).reshape({2, 2});
  const std::vector<int64_t> il{4, 4}, tl{2, 1};
  r.bad("input length past the frames",
        [=] {
          ctc_loss(lp, tg, std::vector<int64_t>{5, 4}, tl);
        })
      .bad("negative input length",
           [=] {
             ctc_loss(lp, tg, std::vector<int64_t>{-1, 4}, tl);
           })
      .bad("target length past the padded width",
           [=] {
             ctc_loss(lp, tg, il, std::vector<int64_t>{3, 1});
           })
      .bad("concatenated targets shorter than the lengths' sum",
           [=] {
             ctc_loss(lp, from_vector<int64_t>({1, 2}), il, tl);
           })
      .bad("negative label",
           [=] {
             ctc_loss(lp, from_vector<int64_t>({1, -1, 2, 0}).reshape({2, 2}), il, tl);
           })
      .bad("label == blank",
           [=] {
             ctc_loss(lp, from_vector<int64_t>({1, 0, 2, 0}).reshape({2, 2}), il, tl);
           })
      .bad("label past the classes",
           [=] {
             ctc_loss(lp, from_vector<int64_t>({1, 3, 2, 0}).reshape({2, 2}), il, tl);
           })
      .bad("blank past the classes", [=] { ctc_loss(lp, tg, il, tl, {.blank = 3}); })
      .bad("log_probs not 3-D",
           [=] {
             ctc_loss(zeros({2, 4, 2, 3}), tg, il, tl);
           })
      .bad("integer log_probs",
           [=] {
             ctc_loss(zeros({4, 2, 3}, kInt64), tg, il, tl);
           })
      .bad("float targets", [=] { ctc_loss(lp, tg.to(kFloat32), il, tl); })
      .bad("padded targets of another batch size",
           [=] {
             ctc_loss(lp, from_vector<int64_t>({1, 2}).reshape({1, 2}), il, tl);
           })
      .bad("one length for two samples", [=] { ctc_loss(lp, tg, std::vector<int64_t>{4}, tl); })
      .bad("batchmean reduction",
           [=] { ctc_loss(lp, tg, il, tl, {.reduction = Reduction::BatchMean}); });
}

// The backward op's rows are the ctc_loss rows' gradchecks (finite differences of the brute-force
// likelihood) and test_ctc_golden.cpp's gradients against PyTorch's.
const CoveredElsewhere covered{"ctc_loss_backward",
                               "table_ctc.cpp gradchecks, test_ctc_golden.cpp"};

}  // namespace

ATH_OP_ROWS(ctc) {
  const CtcCase base{.targets = {{1, 2}, {3}, {2, 3}}, .input_lengths = {5, 4, 3}};
  auto with = [&](auto change) {
    CtcCase k = base;
    change(k);
    return k;
  };
  std::vector<Row> rows{
      ctc_row("mean", {5, 3, 4}, base),
      ctc_row("none", {5, 3, 4}, with([](CtcCase& k) { k.options.reduction = Reduction::None; })),
      ctc_row("sum_concatenated", {5, 3, 4}, with([](CtcCase& k) {
                k.options.reduction = Reduction::Sum;
                k.concatenated = true;
              })),
      // "1 1" needs a blank between: 3 frames at least; "2 2 2" needs 5.
      ctc_row("repeats", {5, 2, 3},
              CtcCase{.targets = {{1, 1}, {2, 2, 2}},
                      .input_lengths = {4, 5},
                      .options = {.reduction = Reduction::None}}),
      ctc_row("empty_target_and_blank_2", {4, 3, 3},
              CtcCase{.targets = {{}, {0, 1}, {1}},
                      .input_lengths = {4, 4, 2},
                      .options = {.blank = 2, .reduction = Reduction::None}}),
      // Sample 1 cannot fit "1 2 3" in 2 frames: zero_infinity makes its loss (and gradient) 0.
      ctc_row("impossible_zero_infinity", {4, 2, 4},
              CtcCase{.targets = {{1, 2}, {1, 2, 3}},
                      .input_lengths = {4, 2},
                      .options = {.reduction = Reduction::None, .zero_infinity = true}}),
  };
  ctc_bad_calls(rows[0]);
  return rows;
}

}  // namespace ath::testing

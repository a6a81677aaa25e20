// NonMaxSuppression (opset 10/11): greedy suppression per batch and class, as registry ops.
//
// Per batch, the boxes' pairwise IoU is one [N, N] matrix (corners normalized, so flipped boxes
// work; a box of zero area suppresses nothing, as in onnxruntime). Per class, the boxes are
// ranked by score (descending, ties by index) and the greedy rule — a box is kept when it is a
// candidate (score > score_threshold) and no kept box ranked before it overlaps it by more than
// iou_threshold — is solved as a fixed point: keep = candidate & !any(keep[j] & blocks[j, i]),
// iterated from keep = candidate. Box i's value depends only on boxes ranked before it, so the
// recurrence has one solution, reached after at most (longest suppression chain + 1)
// iterations; equality with the previous iterate is the stop. The first max_output_boxes_per_class
// kept boxes in rank order are selected (a cumulative count). Memory is O(N^2) per batch.
//
// The output's length depends on the values (NonZero's case): the trace fails and the key runs
// eagerly; the convergence test reads a flag on the host once per iteration.
#include "../op_table.h"
#include "athanor/graph/tracer.h"
#include "athanor/ops/comparison.h"
#include "athanor/ops/copy.h"
#include "athanor/ops/creation.h"
#include "athanor/ops/indexing.h"
#include "athanor/ops/pointwise.h"
#include "athanor/ops/reduction.h"
#include "athanor/ops/shaping.h"
#include "athanor/ops/views.h"

namespace ath::onnx::detail {

namespace {

// [N, N] bool: box j overlaps box i by more than `threshold` (IoU), for one batch's [N, 4] boxes.
Tensor overlaps(const Tensor& boxes, bool center_point_box, double threshold) {
  Tensor x1, y1, x2, y2;
  if (center_point_box) {  // [x_center, y_center, width, height]
    const Tensor half_w = mul(select(boxes, 1, 2), Scalar(0.5));
    const Tensor half_h = mul(select(boxes, 1, 3), Scalar(0.5));
    x1 = sub(select(boxes, 1, 0), half_w);
    x2 = add(select(boxes, 1, 0), half_w);
    y1 = sub(select(boxes, 1, 1), half_h);
    y2 = add(select(boxes, 1, 1), half_h);
  } else {  // [y1, x1, y2, x2], either corner first
    y1 = minimum(select(boxes, 1, 0), select(boxes, 1, 2));
    y2 = maximum(select(boxes, 1, 0), select(boxes, 1, 2));
    x1 = minimum(select(boxes, 1, 1), select(boxes, 1, 3));
    x2 = maximum(select(boxes, 1, 1), select(boxes, 1, 3));
  }
  const Tensor area = mul(sub(x2, x1), sub(y2, y1));
  auto pairwise = [](const Tensor& a, auto&& f) { return f(unsqueeze(a, 1), unsqueeze(a, 0)); };
  auto side = [&](const Tensor& lo, const Tensor& hi) {
    const Tensor top = pairwise(hi, [](const Tensor& a, const Tensor& b) { return minimum(a, b); });
    const Tensor bottom =
        pairwise(lo, [](const Tensor& a, const Tensor& b) { return maximum(a, b); });
    return clamp_min(sub(top, bottom), Scalar(0));
  };
  const Tensor inter = mul(side(x1, x2), side(y1, y2));
  const Tensor both = pairwise(area, [](const Tensor& a, const Tensor& b) { return add(a, b); });
  const Tensor uni = sub(both, inter);
  // As onnxruntime and ONNX's reference: boxes without area or overlap suppress nothing
  // (whatever the threshold), and the division is masked there, not trusted.
  const Tensor valid =
      logical_and(pairwise(gt(area, Scalar(0)),
                           [](const Tensor& a, const Tensor& b) { return logical_and(a, b); }),
                  logical_and(gt(inter, Scalar(0)), gt(uni, Scalar(0))));
  const Tensor safe_union = where(valid, uni, ones_like(uni));
  return logical_and(valid, gt(div(inter, safe_union), Scalar(threshold)));
}

// The selected boxes of one batch and class, in rank order: int64 [K] box indices.
Tensor select_class(const Tensor& scores, const Tensor& over, std::optional<double> score_threshold,
                    int64_t max_boxes) {
  const int64_t n = scores.numel();
  if (n == 0) return zeros({0}, kInt64);
  const Tensor order = argsort(scores, 0, /*descending=*/true, /*stable=*/true);
  const Tensor rank = scatter(zeros({n}, kInt64), 0, order, arange(Scalar(n)));
  // blocks[j, i]: j is ranked before i and overlaps it.
  const Tensor blocks = logical_and(over, lt(unsqueeze(rank, 1), unsqueeze(rank, 0)));
  const Tensor candidate =
      score_threshold ? gt(scores, Scalar(*score_threshold)) : ones({n}, kBool);
  Tensor keep = candidate;
  for (int64_t it = 0; it <= n; ++it) {
    const Tensor suppressed = any(logical_and(unsqueeze(keep, 1), blocks), {0});
    Tensor next = logical_and(candidate, logical_not(suppressed));
    const bool converged = equal(next, keep);
    keep = std::move(next);
    if (converged) break;
  }
  const Tensor kept_in_rank_order = index_select(keep, 0, order);
  const Tensor within_limit =
      le(cumsum(to_dtype(kept_in_rank_order, kInt64), 0), Scalar(max_boxes));
  const Tensor positions = reshape(nonzero(logical_and(kept_in_rank_order, within_limit)), {-1});
  return index_select(order, 0, positions);
}

void lower_nms(NodeContext& c) {
  graph::Tracer::fail_active("NonMaxSuppression's output length depends on its input's values");
  Tensor boxes = c.in(0), scores = c.in(1);
  ATH_CHECK(boxes.dim() == 3 && boxes.size(2) == 4, ShapeError,
            "boxes must be [num_batches, spatial_dimension, 4], got {}", to_string(boxes.shape()));
  ATH_CHECK(scores.dim() == 3 && scores.size(0) == boxes.size(0) && scores.size(2) == boxes.size(1),
            ShapeError,
            "scores must be [num_batches, num_classes, spatial_dimension] = [{}, C, {}], got {}",
            boxes.size(0), boxes.size(1), to_string(scores.shape()));
  // Half precision computes in float32; float32 and float64 as given.
  if (boxes.dtype() == kFloat16 || boxes.dtype() == kBFloat16) boxes = to_dtype(boxes, kFloat32);
  scores = to_dtype(scores, boxes.dtype());
  auto scalar_input = [&](int i) -> std::optional<double> {
    if (!c.has(i) || c.in(i).numel() == 0) return std::nullopt;
    return c.doubles(i).at(0);
  };
  const int64_t max_boxes = c.has(2) && c.in(2).numel() > 0 ? c.ints(2).at(0) : 0;
  const double iou_threshold = scalar_input(3).value_or(0.0);
  const std::optional<double> score_threshold = scalar_input(4);
  const bool center = c.attr_int("center_point_box", 0) != 0;

  std::vector<Tensor> rows;
  if (max_boxes > 0) {
    for (int64_t b = 0; b < boxes.size(0); ++b) {
      const Tensor over = overlaps(select(boxes, 0, b), center, iou_threshold);
      for (int64_t k = 0; k < scores.size(1); ++k) {
        const Tensor chosen =
            select_class(select(select(scores, 0, b), 0, k), over, score_threshold, max_boxes);
        const Shape col{chosen.numel()};
        rows.push_back(
            stack({full(col, Scalar(b), kInt64), full(col, Scalar(k), kInt64), chosen}, 1));
      }
    }
  }
  c.out(0, rows.empty() ? zeros({0, 3}, kInt64) : cat(rows, 0));
}

}  // namespace

void add_nms_ops(OpTable& t) {
  t["NonMaxSuppression"] = {lower_nms, (1u << 2) | (1u << 3) | (1u << 4), 10, kFloatTypes};
}

}  // namespace ath::onnx::detail

#include "classification_input.h"

#include <cmath>

#include "athanor/core/error.h"

namespace ath::train::detail {
namespace {

// argmax order: NaN above everything (as torch.argmax), ties to the lower index.
bool beats(double a, double b) { return (std::isnan(a) && !std::isnan(b)) || a > b; }

std::string shape_str(const Tensor& t) { return to_string(t.shape()); }

}  // namespace

ClassificationBatch decode_classification(const char* metric, const Tensor& preds,
                                          const Tensor& target, int64_t num_classes, int64_t top_k,
                                          std::optional<int64_t> ignore_index) {
  ATH_CHECK(preds.defined() && target.defined(), ValueError, "{}: preds and target must be defined",
            metric);
  ATH_CHECK(is_integral(target.dtype()), DTypeError,
            "{}: target must hold class indices (an integer dtype), got {}", metric,
            target.dtype());
  ClassificationBatch out;
  const bool scores = preds.dim() == target.dim() + 1;
  if (scores) {
    ATH_CHECK(preds.is_floating_point(), DTypeError,
              "{}: preds {} with one dim more than target {} must be scores of a floating dtype, "
              "got {}",
              metric, shape_str(preds), shape_str(target), preds.dtype());
    ATH_CHECK(preds.dim() >= 2, ShapeError, "{}: scores must be (N, C, ...), got preds {}", metric,
              shape_str(preds));
    bool match = preds.size(0) == target.size(0);
    for (int64_t d = 2; d < preds.dim(); ++d) match = match && preds.size(d) == target.size(d - 1);
    ATH_CHECK(match, ShapeError,
              "{}: scores {} do not match target {} (expected (N, C, ...) and (N, ...))", metric,
              shape_str(preds), shape_str(target));
    const int64_t c = preds.size(1);
    ATH_CHECK(num_classes == 0 || c == num_classes, ShapeError,
              "{}: scores {} have {} classes, expected num_classes={}", metric, shape_str(preds), c,
              num_classes);
    ATH_CHECK(c >= 1, ShapeError, "{}: scores {} have no classes", metric, shape_str(preds));
    ATH_CHECK(top_k <= c, ValueError, "{}: top_k={} exceeds the {} classes", metric, top_k, c);
    num_classes = c;
  } else {
    ATH_CHECK(preds.dim() == target.dim(), ShapeError,
              "{}: preds {} and target {} must have the same shape (class indices) or preds one "
              "more dim (scores (N, C, ...))",
              metric, shape_str(preds), shape_str(target));
    ATH_CHECK(preds.shape() == target.shape(), ShapeError,
              "{}: preds {} and target {} must have the same shape", metric, shape_str(preds),
              shape_str(target));
    ATH_CHECK(is_integral(preds.dtype()), DTypeError,
              "{}: preds with target's shape must be class indices (an integer dtype), got {}; "
              "pass scores as (N, C, ...)",
              metric, preds.dtype());
    ATH_CHECK(top_k == 1, ValueError, "{}: top_k={} needs scores (N, C, ...), not class indices",
              metric, top_k);
  }
  out.num_classes = num_classes;

  const std::vector<int64_t> t = target.to_vector<int64_t>();
  const auto n = static_cast<int64_t>(t.size());
  auto check_class = [&](int64_t k, const char* what) {
    ATH_CHECK(k >= 0 && (num_classes == 0 || k < num_classes), IndexError,
              "{}: {} contains class {}, outside [0, {})", metric, what, k,
              num_classes == 0 ? std::string("inf") : std::to_string(num_classes));
  };
  out.target.reserve(t.size());
  out.pred.reserve(t.size());
  if (!scores) {
    const std::vector<int64_t> p = preds.to_vector<int64_t>();
    for (int64_t i = 0; i < n; ++i) {
      if (ignore_index && t[i] == *ignore_index) continue;
      check_class(t[i], "target");
      check_class(p[i], "preds");
      out.target.push_back(t[i]);
      out.pred.push_back(p[i]);
    }
    return out;
  }
  // scores laid out (N, C, S): element (i, c, s) at (i * C + c) * S + s; sample = (i, s).
  const std::vector<double> v = preds.to_vector<double>();
  const int64_t c = num_classes;
  int64_t inner = 1;
  for (int64_t d = 2; d < preds.dim(); ++d) inner *= preds.size(d);
  if (top_k > 1) out.in_top_k.reserve(t.size());
  for (int64_t i = 0; i < n; ++i) {
    if (ignore_index && t[i] == *ignore_index) continue;
    check_class(t[i], "target");
    const int64_t row = i / inner, s = i % inner;
    const double* base = v.data() + row * c * inner + s;
    int64_t best = 0;
    for (int64_t k = 1; k < c; ++k) {
      if (beats(base[k * inner], base[best * inner])) best = k;
    }
    out.target.push_back(t[i]);
    out.pred.push_back(best);
    if (top_k > 1) {
      // The target is in the top k when fewer than k classes rank above it.
      const double tv = base[t[i] * inner];
      int64_t above = 0;
      for (int64_t k = 0; k < c && above < top_k; ++k) {
        const double kv = base[k * inner];
        if (beats(kv, tv) || (k < t[i] && !beats(tv, kv))) ++above;
      }
      out.in_top_k.push_back(above < top_k ? 1 : 0);
    }
  }
  return out;
}

}  // namespace ath::train::detail

// Shared loss argument checks and the Reduction names.
#include "loss_checks.h"

namespace ath {

const char* reduction_name(Reduction r) {
  switch (r) {
    case Reduction::None:
      return "none";
    case Reduction::Mean:
      return "mean";
    case Reduction::Sum:
      return "sum";
    case Reduction::BatchMean:
      return "batchmean";
  }
  return "(invalid reduction)";
}

namespace detail {

Shape check_class_target(const Shape& input, DType input_dtype, const Tensor& target) {
  ATH_CHECK(is_floating(input_dtype), DTypeError, "expected a floating input, got {} (shape {})",
            dtype_name(input_dtype), to_string(input));
  ATH_CHECK(!input.empty(), ShapeError, "expected an input of 1 or more dims, got shape {}",
            to_string(input));
  DType t = target.dtype();
  ATH_CHECK(t == kInt64 || t == kInt32 || t == kUInt8, DTypeError,
            "expected class-index targets of dtype int64 (or int32, uint8), got {} (shape {}); "
            "class probabilities must have the input's shape {}",
            dtype_name(t), to_string(target.shape()), to_string(input));
  const Shape& ts = target.shape();
  if (input.size() == 1) {
    ATH_CHECK(ts.empty(), ShapeError, "size mismatch (got input: {}, target: {})", to_string(input),
              to_string(ts));
    return ts;
  }
  ATH_CHECK(ts.size() + 1 == input.size(), ShapeError,
            "expected a target of shape {} without dim 1 (the classes), got target: {}",
            to_string(input), to_string(ts));
  ATH_CHECK(ts[0] == input[0], ShapeError,
            "expected input batch_size ({}) to match target batch_size ({})", input[0], ts[0]);
  bool ok = true;
  for (std::size_t d = 1; d < ts.size(); ++d) ok = ok && ts[d] == input[d + 1];
  ATH_CHECK(
      ok, ShapeError, "expected target of shape {} for input of shape {}, got {}",
      [&] {
        Shape want = input;
        want.erase(want.begin() + 1);
        return to_string(want);
      }(),
      to_string(input), to_string(ts));
  return ts;
}

void check_class_weight(const Tensor& w, bool present, int64_t classes) {
  if (!present) return;
  ATH_CHECK(is_floating(w.dtype()), DTypeError, "weight must be floating, got {}",
            dtype_name(w.dtype()));
  ATH_CHECK(w.dim() == 1 && w.shape()[0] == classes, ShapeError,
            "weight tensor should be defined either for all {} classes or no classes, but got "
            "weight of shape {}",
            classes, to_string(w.shape()));
  check_no_grad(w, "weight");
}

void check_broadcast_weight(const Tensor& w, bool present, const char* what, const Shape& input) {
  if (!present) return;
  ATH_CHECK(is_floating(w.dtype()), DTypeError, "{} must be floating, got {}", what,
            dtype_name(w.dtype()));
  bool ok = w.dim() <= static_cast<int64_t>(input.size());
  for (int64_t d = 1; ok && d <= w.dim(); ++d) {
    int64_t ws = w.shape()[w.dim() - d], is = input[input.size() - d];
    ok = ws == is || ws == 1;
  }
  ATH_CHECK(ok, ShapeError, "{} of shape {} doesn't broadcast to the input shape {}", what,
            to_string(w.shape()), to_string(input));
  check_no_grad(w, what);
}

}  // namespace detail
}  // namespace ath

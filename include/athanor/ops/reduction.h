// Reductions and scans, with PyTorch semantics. Reductions take any set of dims (an empty list
// reduces every dim; negative dims count from the end) and keepdim.
//
//   Tensor x = randn({2, 3, 4}), grad = randn({2, 3});
//   Tensor s = sum(x);                              // 0-dim
//   Tensor m = mean(x, {0, 2}, /*keepdim=*/true);
//   auto [v, i] = max(x, /*dim=*/1);                // values and int64 indices (first of ties)
//   Tensor a = argmax(x);                           // index into the flattened tensor
//   Tensor s2 = ath::std(x, {1}, /*correction=*/0); // population standard deviation
//   Tensor l = logsumexp(x, {-1});                  // max-shifted: no overflow
//   Tensor n = norm(x, INFINITY, {1});
//   Tensor c = cumsum(x, 0);
//   Tensor g = sum_to(grad, {1, 3});                // undo broadcasting (backward formulas)
//   assert(s.dim() == 0 && m.size(2) == 1 && i.dtype() == kInt64 && g.size(0) == 1);
//
// (Write ath::std: under `using namespace ath;` a bare `std(` names namespace std.)
//
// Results do not depend on the thread count: every reduction combines in a fixed order (fixed
// 16-lane strips and fixed-size chunks combined in sequence), so a seed gives bitwise-identical
// training with 1 or 2 threads.
//
// Gradients follow PyTorch: amax/amin (and max/min without a dim) split the gradient evenly among
// tied extrema; max/min along a dim route it to the returned index; prod and cumprod are exact
// with zeros in the input.
#pragma once

#include <optional>

#include "athanor/ops/op.h"

namespace ath {

struct ReduceAttrs {
  DimList dims;  // empty: all dims
  bool keepdim = false;
  std::optional<DType> dtype;  // accumulate/return in this dtype (sum, mean, prod)
  bool operator==(const ReduceAttrs&) const = default;
};

// ---- sums and products ----------------------------------------------------------------------
Tensor sum(const Tensor& x, const DimList& dims = {}, bool keepdim = false,
           std::optional<DType> dtype = {});
Tensor mean(const Tensor& x, const DimList& dims = {}, bool keepdim = false,
            std::optional<DType> dtype = {});
// Integer and bool inputs give int64, as in PyTorch.
Tensor prod(const Tensor& x, const DimList& dims = {}, bool keepdim = false,
            std::optional<DType> dtype = {});
// Sums x down to `shape`, which x's shape must broadcast from: the adjoint of expand.
Tensor sum_to(const Tensor& x, const Shape& shape);

// ---- extrema --------------------------------------------------------------------------------
// NaN propagates (it counts as the largest and the smallest value). Reducing a dim of size 0
// throws: there is no identity.
Tensor amax(const Tensor& x, const DimList& dims = {}, bool keepdim = false);
Tensor amin(const Tensor& x, const DimList& dims = {}, bool keepdim = false);
Tensor max(const Tensor& x);  // amax over all dims
Tensor min(const Tensor& x);

struct ValuesIndices {
  Tensor values;
  Tensor indices;  // int64
};
ValuesIndices max(const Tensor& x, int64_t dim, bool keepdim = false);
ValuesIndices min(const Tensor& x, int64_t dim, bool keepdim = false);
// Without a dim: the index into the flattened tensor (keepdim gives all-ones dims).
Tensor argmax(const Tensor& x, std::optional<int64_t> dim = {}, bool keepdim = false);
Tensor argmin(const Tensor& x, std::optional<int64_t> dim = {}, bool keepdim = false);

// ---- statistics -----------------------------------------------------------------------------
// Divides by max(0, N - correction): correction >= N gives inf (or nan for 0/0), like PyTorch.
// Floating inputs only.
Tensor var(const Tensor& x, const DimList& dims = {}, double correction = 1, bool keepdim = false);
Tensor std(const Tensor& x, const DimList& dims = {}, double correction = 1, bool keepdim = false);
// log(sum(exp(x))) computed as m + log(sum(exp(x - m))), m the max (0 where the max is +-inf).
// Integer inputs compute in float32, as in PyTorch 1.13.
Tensor logsumexp(const Tensor& x, const DimList& dims = {}, bool keepdim = false);
// The vector p-norm over dims (torch.linalg.vector_norm): p = 2, 1, +-inf, 0 (count of
// nonzeros) or any other real p. Floating inputs only.
Tensor norm(const Tensor& x, double p = 2, const DimList& dims = {}, bool keepdim = false);

// ---- logic ----------------------------------------------------------------------------------
// Whether all / any elements are nonzero (NaN counts as nonzero). Any dtype; the result is always
// bool (PyTorch 1.13 returns uint8 for a uint8 input). Empty reductions: all -> true, any -> false.
Tensor all(const Tensor& x, const DimList& dims = {}, bool keepdim = false);
Tensor any(const Tensor& x, const DimList& dims = {}, bool keepdim = false);

// ---- scans ----------------------------------------------------------------------------------
// Integer and bool inputs give int64 unless dtype says otherwise (x is converted to dtype first).
Tensor cumsum(const Tensor& x, int64_t dim, std::optional<DType> dtype = {});
Tensor cumprod(const Tensor& x, int64_t dim, std::optional<DType> dtype = {});

// ---- op definitions -------------------------------------------------------------------------
struct VarAttrs {
  DimList dims;  // normalized; empty: all dims
  double correction = 1;
  bool keepdim = false;
  bool operator==(const VarAttrs&) const = default;
};
struct NormAttrs {
  double p = 2;
  DimList dims;
  bool keepdim = false;
  bool operator==(const NormAttrs&) const = default;
};
struct DimKeepAttrs {  // max/min along one dim
  int64_t dim = 0;     // normalized
  bool keepdim = false;
  bool operator==(const DimKeepAttrs&) const = default;
};
struct ArgAttrs {
  std::optional<int64_t> dim;  // normalized; none: over the flattened tensor
  bool keepdim = false;
  bool operator==(const ArgAttrs&) const = default;
};
// Scans: out[i] = x[0] op ... op x[i] along dim. `exclusive` leaves x[i] out (out[0] is the
// identity), `reverse` runs from the end. The public functions use neither; backward formulas do.
struct ScanAttrs {
  int64_t dim = 0;  // normalized
  std::optional<DType> dtype;
  bool reverse = false;
  bool exclusive = false;
  bool operator==(const ScanAttrs&) const = default;
};

const Op<ReduceAttrs>& op_sum();
const Op<ReduceAttrs>& op_mean();
const Op<ReduceAttrs>& op_prod();
const Op<ReduceAttrs>& op_amax();
const Op<ReduceAttrs>& op_amin();
const Op<DimKeepAttrs>& op_max_dim();  // outputs: values, indices
const Op<DimKeepAttrs>& op_min_dim();
const Op<ArgAttrs>& op_argmax();
const Op<ArgAttrs>& op_argmin();
const Op<VarAttrs>& op_var();
const Op<VarAttrs>& op_std();
const Op<ReduceAttrs>& op_logsumexp();
const Op<NormAttrs>& op_norm();
const Op<ReduceAttrs>& op_all();
const Op<ReduceAttrs>& op_any();
const Op<ScanAttrs>& op_cumsum();
const Op<ScanAttrs>& op_cumprod();
// cumprod_backward(grad, x) = the gradient of cumprod w.r.t. x, exact with zeros in x (no
// division). Its own gradient is cumprod_double_backward(gg): zeros where gg is zero, and
// NotImplementedError (double backward with zeros) wherever it is not.
const Op<ScanAttrs>& op_cumprod_backward();
const Op<NoAttrs>& op_cumprod_double_backward();

// Scan with the internal options (see ScanAttrs).
Tensor cumsum(const Tensor& x, const ScanAttrs& attrs);
Tensor cumprod(const Tensor& x, const ScanAttrs& attrs);

// ---- helpers shared by reductions and their backward formulas -------------------------------
// The output shape of reducing `in` over `dims` (normalized), with or without kept dims.
Shape reduced_shape(const Shape& in, const DimList& dims, bool keepdim);
// Number of elements reduced into each output.
int64_t reduced_count(const Shape& in, const DimList& dims);
// Expands a reduced gradient (shape without keepdim) back to the input's shape.
Tensor expand_reduced_grad(const Tensor& grad, const Shape& input_shape, const DimList& dims,
                           bool keepdim);
// Views a reduced result with the reduced dims as size 1 (keepdim layout), for broadcasting.
Tensor keepdim_view(const Tensor& reduced, const Shape& input_shape, const DimList& dims,
                    bool keepdim);

}  // namespace ath

// CPU kernels for var, std and logsumexp: two passes over each output's elements (mean then
// squared deviations; max then shifted exponentials), each pass in reduce_loop's fixed 16-lane
// order, so the results do not depend on the thread count.
//
// Memory contract: x is viewed as [M, N] with the reduced elements innermost (copied into a
// permuted contiguous buffer when that is not a view); each row is read twice; each output is
// written once.
//
// norm: one pass of reduce_loop (see its header for the memory contract and the fixed,
// thread-count-independent order).
#include <cmath>
#include <limits>

#include "athanor/ops/reduction.h"
#include "common/reduce_loop.h"
#include "common/register.h"

namespace ath::kernels {

namespace {

// Calls row(i, p, n) for each of the M rows of x's [M, N] reduction view, in parallel;
// a single row (full reduction) is handed over whole so it can chunk internally.
template <class T, class Row>
void for_each_row(const Tensor& x, const DimList& dims, Row row) {
  int64_t m = 0, n = 0;
  Tensor xv = reduction_view(x, dims, m, n);
  const T* p = static_cast<const T*>(xv.data_ptr());
  if (m == 1) {
    row(0, p, n, /*whole=*/true);
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kPointwiseGrain / std::max<int64_t>(2 * n, 1));
  parallel_for(0, m, grain, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) row(i, p + i * n, n, /*whole=*/false);
  });
}

// Runs reduce_chunked for a whole (single-output) reduction, reduce_run otherwise: both fixed.
template <class T, class Acc, class Combine, class Map>
Acc reduce_row(const T* p, int64_t n, bool whole, Acc init, const Combine& c, const Map& m) {
  return whole ? reduce_chunked<T, Acc>(p, n, init, c, m) : reduce_run<T, Acc>(p, n, init, c, m);
}

template <class T, bool Std>
void var_kernel(TensorSpan in, std::span<Tensor> out, const VarAttrs& a) {
  if (out[0].numel() == 0) return;
  using C = compute_t<T>;
  using Acc = double;  // as PyTorch's CPU var: double accumulation for every floating dtype
  T* o = static_cast<T*>(out[0].data_ptr());
  const double correction = a.correction;
  auto plus = [](Acc u, Acc v) { return u + v; };
  for_each_row<T>(in[0], a.dims, [&](int64_t i, const T* p, int64_t n, bool whole) {
    const Acc mean = reduce_row<T, Acc>(p, n, whole, 0.0, plus, CastTo<Acc>{}) / Acc(n);
    const Acc ss = reduce_row<T, Acc>(p, n, whole, 0.0, plus, [mean](C v) {
      Acc d = Acc(v) - mean;
      return d * d;
    });
    Acc r = ss / std::max(0.0, double(n) - correction);  // /0 gives inf or nan, as PyTorch
    o[i] = static_cast<T>(static_cast<C>(Std ? std::sqrt(r) : r));
  });
}

template <class T>
void logsumexp_kernel(TensorSpan in, std::span<Tensor> out, const ReduceAttrs& a) {
  if (out[0].numel() == 0) return;
  using C = compute_t<T>;
  T* o = static_cast<T*>(out[0].data_ptr());
  auto same = [](C v) { return v; };
  for_each_row<T>(in[0], a.dims, [&](int64_t i, const T* p, int64_t n, bool whole) {
    C mx = reduce_row<T, C>(
        p, n, whole, -std::numeric_limits<C>::infinity(),
        [](C u, C v) { return (v > u || v != v) ? v : u; }, same);
    // An infinite max shifts by 0 (PyTorch): all -inf gives -inf, any +inf gives +inf.
    if (std::isinf(mx)) mx = 0;
    C s = reduce_row<T, C>(
        p, n, whole, C(0), [](C u, C v) { return u + v; }, [mx](C v) { return std::exp(v - mx); });
    o[i] = static_cast<T>(std::log(s) + mx);
  });
}

template <class T>
void norm_kernel(TensorSpan in, std::span<Tensor> out, const NormAttrs& a) {
  using C = compute_t<T>;
  const Tensor& x = in[0];
  Tensor& o = out[0];
  auto plus = [](C u, C v) { return u + v; };
  auto same = [](C v) { return v; };
  auto abs = [](C v) { return std::abs(v); };
  const double p = a.p;
  if (p == 2) {
    reduce_loop<T, C, T>(
        x, a.dims, o, C(0), plus, [](C v) { return std::sqrt(v); }, [](C v) { return v * v; });
  } else if (p == 1) {
    reduce_loop<T, C, T>(x, a.dims, o, C(0), plus, same, abs);
  } else if (p == 0) {
    reduce_loop<T, C, T>(x, a.dims, o, C(0), plus, same, [](C v) { return C(v != C(0)); });
  } else if (p > 0 && std::isinf(p)) {
    reduce_loop<T, C, T>(x, a.dims, o, C(0), max_nan<C>, same, abs);
  } else if (std::isinf(p)) {
    reduce_loop<T, C, T>(x, a.dims, o, std::numeric_limits<C>::infinity(), min_nan<C>, same, abs);
  } else {
    const C cp = static_cast<C>(p), inv = static_cast<C>(1.0 / p);
    reduce_loop<T, C, T>(
        x, a.dims, o, C(0), plus, [inv](C v) { return std::pow(v, inv); },
        [cp](C v) { return std::pow(std::abs(v), cp); });
  }
}

const bool registered = [] {
  register_cpu_floating(op_var(), []<class T>() { return &var_kernel<T, false>; });
  register_cpu_floating(op_std(), []<class T>() { return &var_kernel<T, true>; });
  register_cpu_floating(op_logsumexp(), []<class T>() { return &logsumexp_kernel<T>; });
  register_cpu_floating(op_norm(), []<class T>() { return &norm_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels

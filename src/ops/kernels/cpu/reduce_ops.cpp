// CPU kernels for prod, amax, amin, all, any and norm: all run on reduce_loop (see its header
// for the memory contract and the fixed, thread-count-independent order).
#include <cmath>
#include <limits>

#include "athanor/ops/reduction.h"
#include "reduce_loop.h"
#include "register.h"

namespace ath::kernels {

namespace {

template <class C>
inline constexpr bool kFloat = std::is_floating_point_v<C>;

// Max/min that propagate NaN, as torch.amax/amin.
template <class C>
C max_nan(C a, C b) {
  if constexpr (kFloat<C>) {
    return (b > a || b != b) ? b : a;
  } else {
    return b > a ? b : a;
  }
}
template <class C>
C min_nan(C a, C b) {
  if constexpr (kFloat<C>) {
    return (b < a || b != b) ? b : a;
  } else {
    return b < a ? b : a;
  }
}

template <class T>
void prod_kernel(TensorSpan in, std::span<Tensor> out, const ReduceAttrs& a) {
  using C = compute_t<T>;
  if constexpr (kFloat<C>) {
    reduce_loop<T, C, T>(
        in[0], a.dims, out[0], C(1), [](C x, C y) { return x * y; }, [](C v) { return v; });
  } else {  // wraps on overflow like PyTorch (unsigned arithmetic: no UB)
    reduce_loop<T, int64_t, T>(
        in[0], a.dims, out[0], int64_t{1},
        [](int64_t x, int64_t y) {
          return static_cast<int64_t>(static_cast<uint64_t>(x) * static_cast<uint64_t>(y));
        },
        [](int64_t v) { return v; });
  }
}

// The identity of max (Max) or min: -inf/+inf for floats, the extreme value otherwise.
template <class C, bool Max>
C extremum_identity() {
  using L = std::numeric_limits<C>;
  if constexpr (kFloat<C>) {
    return Max ? -L::infinity() : L::infinity();
  } else {
    return Max ? L::lowest() : L::max();
  }
}

template <class T, bool Max>
void extremum_kernel(TensorSpan in, std::span<Tensor> out, const ReduceAttrs& a) {
  using C = compute_t<T>;
  const C init = extremum_identity<C, Max>();
  auto same = [](C v) { return v; };
  if constexpr (Max) {
    reduce_loop<T, C, T>(in[0], a.dims, out[0], init, max_nan<C>, same);
  } else {
    reduce_loop<T, C, T>(in[0], a.dims, out[0], init, min_nan<C>, same);
  }
}

// Bytes rather than bool as the accumulator: partials live in arrays written by threads.
template <class T, bool All>
void logic_kernel(TensorSpan in, std::span<Tensor> out, const ReduceAttrs& a) {
  using C = compute_t<T>;
  auto nonzero = [](C v) { return static_cast<uint8_t>(v != C(0)); };  // NaN is nonzero
  auto finalize = [](uint8_t v) { return v != 0; };
  if constexpr (All) {
    reduce_loop<T, uint8_t, bool>(
        in[0], a.dims, out[0], uint8_t{1}, [](uint8_t x, uint8_t y) { return uint8_t(x & y); },
        finalize, nonzero);
  } else {
    reduce_loop<T, uint8_t, bool>(
        in[0], a.dims, out[0], uint8_t{0}, [](uint8_t x, uint8_t y) { return uint8_t(x | y); },
        finalize, nonzero);
  }
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
  register_cpu_numeric(op_prod(), []<class T>() { return &prod_kernel<T>; });
  register_cpu_all(op_amax(), []<class T>() { return &extremum_kernel<T, true>; });
  register_cpu_all(op_amin(), []<class T>() { return &extremum_kernel<T, false>; });
  register_cpu_all(op_all(), []<class T>() { return &logic_kernel<T, true>; });
  register_cpu_all(op_any(), []<class T>() { return &logic_kernel<T, false>; });
  register_cpu_floating(op_norm(), []<class T>() { return &norm_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels

// CPU kernels for comparisons, logical ops and isnan/isinf/isfinite.
// Memory contract: inputs arrive in the kernel dtype (the operands' common dtype; the input's own
// for the unary ones), read once per output element; out[0] is a fresh bool tensor written once.
#include "athanor/ops/comparison.h"

#include "common/unary_kernel.h"

namespace ath::kernels {
namespace {

// A bool result from one or two operands of dtype T; F gets compute-type values.
template <class F, class T>
void binary_bool_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  using C = compute_t<T>;
  pointwise_loop<bool, T, T>(out[0], {&in[0], &in[1]}, [](C x, C y) { return F{}(x, y); });
}
template <class F, class T>
void unary_bool_kernel(TensorSpan in, std::span<Tensor> out, const NoAttrs&) {
  using C = compute_t<T>;
  pointwise_loop<bool, T>(out[0], {&in[0]}, [](C x) { return F{}(x); });
}

template <class F>
void register_binary_bool(const Op<NoAttrs>& op, F) {
  register_cpu_all(op, []<class T>() { return &binary_bool_kernel<F, T>; });
}
template <class F>
void register_unary_bool(const Op<NoAttrs>& op, F) {
  register_cpu_all(op, []<class T>() { return &unary_bool_kernel<F, T>; });
}

// Integers are never NaN or infinite.
template <class C>
constexpr bool is_float_v = std::is_floating_point_v<C>;

const bool registered = [] {
  register_binary_bool(op_eq(), [](auto x, auto y) { return x == y; });
  register_binary_bool(op_ne(), [](auto x, auto y) { return x != y; });
  register_binary_bool(op_lt(), [](auto x, auto y) { return x < y; });
  register_binary_bool(op_le(), [](auto x, auto y) { return x <= y; });
  register_binary_bool(op_gt(), [](auto x, auto y) { return x > y; });
  register_binary_bool(op_ge(), [](auto x, auto y) { return x >= y; });
  // Nonzero is true (NaN included, as torch).
  register_binary_bool(op_logical_and(), [](auto x, auto y) {
    return (x != decltype(x)(0)) & (y != decltype(y)(0));
  });
  register_binary_bool(op_logical_or(), [](auto x, auto y) {
    return (x != decltype(x)(0)) | (y != decltype(y)(0));
  });
  register_binary_bool(op_logical_xor(), [](auto x, auto y) {
    return (x != decltype(x)(0)) != (y != decltype(y)(0));
  });
  register_unary_bool(op_logical_not(), [](auto x) { return x == decltype(x)(0); });
  register_unary_bool(op_isnan(), [](auto x) {
    if constexpr (is_float_v<decltype(x)>) return x != x;
    return false;
  });
  register_unary_bool(op_isinf(), [](auto x) {
    using C = decltype(x);
    if constexpr (is_float_v<C>) return std::abs(x) == std::numeric_limits<C>::infinity();
    return false;
  });
  register_unary_bool(op_isfinite(), [](auto x) {
    using C = decltype(x);
    if constexpr (is_float_v<C>) return std::abs(x) < std::numeric_limits<C>::infinity();
    return true;
  });
  return true;
}();

}  // namespace
}  // namespace ath::kernels

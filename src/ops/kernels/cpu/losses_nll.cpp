// CPU kernels for nll_loss and nll_loss_backward.
//
// Memory contract. Forward: validates every target first, then reads one element of x per
// position (x[o, t, i]) and writes the per-position losses ('none') or one scalar, plus
// total_weight. Backward: zero-fills dx, then writes dx[o, t, i] = w[t] * -(g / denom) once per
// non-ignored position (positions own distinct elements, so blocks never collide).
// Determinism: fixed blocks of positions, double partial sums combined in block order.
#include <cstring>
#include <vector>

#include "athanor/ops/losses.h"
#include "common/register.h"
#include "loss_kernel_helpers.h"

namespace ath::kernels {
namespace {

struct NllPartial {
  double loss = 0, weight = 0;
};

template <class T>
void nll_loss_kernel(TensorSpan in, std::span<Tensor> out, const NllLossAttrs& a) {
  using C = compute_t<T>;
  Tensor x = dense(in[0]);
  const ClassLayout l = class_layout(x.shape());
  const int64_t nc = l.c, inner = l.inner, npos = l.positions();
  const T* xp = static_cast<const T*>(x.data_ptr());
  Values<C> wv(a.has_weight ? in[2] : Tensor());
  const C* w = wv.data();
  T* per_pos = a.reduction == Reduction::None ? static_cast<T*>(out[0].data_ptr()) : nullptr;
  const int64_t blocks = (npos + kLossBlockElems - 1) / kLossBlockElems;
  std::vector<NllPartial> partial(static_cast<std::size_t>(blocks));
  with_targets(in[1], nc, a.ignore_index, [&](const auto* tp) {
    for_each_block(blocks, kLossBlockElems, [&](int64_t b) {
      NllPartial& part = partial[static_cast<std::size_t>(b)];
      const int64_t p1 = std::min(npos, (b + 1) * kLossBlockElems);
      for (int64_t p = b * kLossBlockElems; p < p1; ++p) {
        const auto t = static_cast<int64_t>(tp[p]);
        if (t == a.ignore_index) {
          if (per_pos != nullptr) per_pos[p] = T(0);
          continue;
        }
        const int64_t o = p / inner, i = p % inner;
        const C wt = w != nullptr ? w[t] : C(1);
        const C v = -wt * C(xp[(o * nc + t) * inner + i]);
        if (per_pos != nullptr) per_pos[p] = T(v);
        part.loss += double(v);
        part.weight += double(wt);
      }
    });
  });
  NllPartial total;
  for (const NllPartial& p : partial) {
    total.loss += p.loss;
    total.weight += p.weight;
  }
  *static_cast<C*>(out[1].data_ptr()) = C(total.weight);
  if (a.reduction == Reduction::Sum) *static_cast<T*>(out[0].data_ptr()) = T(total.loss);
  if (a.reduction == Reduction::Mean) {
    *static_cast<T*>(out[0].data_ptr()) = T(total.loss / total.weight);  // 0 / 0: NaN
  }
}

template <class T>
void nll_loss_backward_kernel(TensorSpan in, std::span<Tensor> out, const NllLossAttrs& a) {
  using C = compute_t<T>;
  Tensor g = dense(in[0]);
  const ClassLayout l = class_layout(a.input_shape);
  const int64_t nc = l.c, inner = l.inner, npos = l.positions();
  const T* gp = static_cast<const T*>(g.data_ptr());
  T* dx = static_cast<T*>(out[0].data_ptr());
  Values<C> wv(a.has_weight ? in[2] : Tensor());
  const C* w = wv.data();
  const bool per_pos_g = a.reduction == Reduction::None;
  const C denom = a.reduction == Reduction::Mean ? C(in[3].item<double>()) : C(1);
  // Zero-fill in fixed slabs (in parallel for large outputs).
  const int64_t total = out[0].numel();
  const int64_t slabs = (total + kPointwiseGrain - 1) / kPointwiseGrain;
  for_each_block(slabs, kPointwiseGrain, [&](int64_t s) {
    const int64_t b = s * kPointwiseGrain, e = std::min(total, b + kPointwiseGrain);
    std::memset(static_cast<void*>(dx + b), 0, static_cast<std::size_t>(e - b) * sizeof(T));
  });
  const int64_t blocks = (npos + kLossBlockElems - 1) / kLossBlockElems;
  with_targets(in[1], nc, a.ignore_index, [&](const auto* tp) {
    for_each_block(blocks, kLossBlockElems, [&](int64_t b) {
      const int64_t p1 = std::min(npos, (b + 1) * kLossBlockElems);
      for (int64_t p = b * kLossBlockElems; p < p1; ++p) {
        const auto t = static_cast<int64_t>(tp[p]);
        if (t == a.ignore_index) continue;
        const int64_t o = p / inner, i = p % inner;
        const C gv = (per_pos_g ? C(gp[p]) : C(gp[0])) / denom;
        dx[(o * nc + t) * inner + i] = T((w != nullptr ? w[t] : C(1)) * -gv);
      }
    });
  });
}

const bool registered = [] {
  register_cpu_floating(op_nll_loss(), []<class T>() { return &nll_loss_kernel<T>; });
  register_cpu_floating(op_nll_loss_backward(),
                        []<class T>() { return &nll_loss_backward_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels

// CPU kernels for embedding and embedding_backward.
//
// Memory contract. embedding: validates every index first (nothing is written for bad input),
// then copies one weight row per index into the output (rows may repeat; weight is only read).
// embedding_backward: zero-fills the [num, dim] output, then adds each grad row at its index in
// index order. Threads split the *output rows* (each scans all indices and adds only those in
// its range), so every row's sum runs in the same order whatever the thread count. 16-bit
// floats accumulate in a float scratch and round once.
#include <cstring>
#include <vector>

#include "athanor/core/parallel.h"
#include "athanor/ops/nn_functional.h"
#include "common/nn_common.h"
#include "common/register.h"

namespace ath::kernels {
namespace {

// Calls fn(const I* indices) with the indices as int64 or int32, after checking each is in
// [0, num).
template <class Fn>
void with_checked_indices(const Tensor& idx_in, int64_t num, const Fn& fn) {
  Tensor idx = dense(idx_in);
  const int64_t n = idx.numel();
  auto run = [&]<class I>() {
    const I* ip = static_cast<const I*>(idx.data_ptr());
    for (int64_t k = 0; k < n; ++k) {
      ATH_CHECK(ip[k] >= 0 && ip[k] < num, IndexError,
                "index {} is out of range for num_embeddings={} (element {} of indices of shape "
                "{})",
                static_cast<int64_t>(ip[k]), num, k, to_string(idx.shape()));
    }
    fn(ip);
  };
  if (idx.dtype() == kInt64) {
    run.template operator()<int64_t>();
  } else {
    run.template operator()<int32_t>();
  }
}

template <class T>
void embedding_kernel(TensorSpan in, std::span<Tensor> out, const EmbeddingAttrs&) {
  Tensor w = dense(in[0]);
  const int64_t num = w.shape()[0], dim = w.shape()[1], n = in[1].numel();
  const T* wp = static_cast<const T*>(w.data_ptr());
  T* op = static_cast<T*>(out[0].data_ptr());
  with_checked_indices(in[1], num, [&](const auto* ip) {
    const int64_t grain = std::max<int64_t>(1, kPointwiseGrain / std::max<int64_t>(dim, 1));
    parallel_for(0, n, grain, [&](int64_t b, int64_t e) {
      for (int64_t k = b; k < e; ++k) {
        std::memcpy(op + k * dim, wp + static_cast<int64_t>(ip[k]) * dim,
                    static_cast<std::size_t>(dim) * sizeof(T));
      }
    });
  });
}

template <class T>
void embedding_backward_kernel(TensorSpan in, std::span<Tensor> out,
                               const EmbeddingBackwardAttrs& a) {
  using C = compute_t<T>;
  Tensor g = dense(in[0]);
  const int64_t num = a.num_weights, dim = out[0].shape()[1], n = in[1].numel();
  const T* gp = static_cast<const T*>(g.data_ptr());
  T* op = static_cast<T*>(out[0].data_ptr());
  constexpr bool kScratch = !std::is_same_v<T, C>;
  std::vector<C> scratch(kScratch ? static_cast<std::size_t>(num * dim) : 0);
  C* acc = kScratch ? scratch.data() : reinterpret_cast<C*>(op);
  if constexpr (!kScratch) std::memset(op, 0, out[0].nbytes());
  with_checked_indices(in[1], num, [&](const auto* ip) {
    auto rows = [&](int64_t r0, int64_t r1) {
      for (int64_t k = 0; k < n; ++k) {
        const int64_t r = static_cast<int64_t>(ip[k]);
        if (r < r0 || r >= r1 || r == a.padding_idx) continue;
        C* dst = acc + r * dim;
        const T* src = gp + k * dim;
        for (int64_t j = 0; j < dim; ++j) dst[j] += C(src[j]);
      }
    };
    if (n * dim <= kPointwiseGrain) {
      rows(0, num);
    } else {
      parallel_for(0, num, 1, rows);
    }
  });
  if constexpr (kScratch) {
    for (int64_t i = 0; i < num * dim; ++i) op[i] = T(acc[i]);
  }
}

const bool registered = [] {
  register_cpu_floating(op_embedding(), []<class T>() { return &embedding_kernel<T>; });
  register_cpu_floating(op_embedding_backward(),
                        []<class T>() { return &embedding_backward_kernel<T>; });
  return true;
}();

}  // namespace
}  // namespace ath::kernels

// The portable matrix product (float64, and anything oneDNN does not take): see gemm.h.
//
// Each output row block is owned by one thread and every c[i, j] sums over k in increasing
// order, so results do not depend on the thread count. B is packed row-major (unless its rows
// are already unit-stride), A is read in place; four rows of C are updated per pass over a
// block of B so each B load feeds four FMAs, and blocks of 256 k x 512 n keep B in L2.
#include <algorithm>
#include <vector>

#include "athanor/core/parallel.h"
#include "gemm.h"

namespace ath::kernels {

namespace {

constexpr int64_t kBlockK = 256, kBlockN = 512, kRowsPerTask = 16;

struct Mat {
  const void* data;
  int64_t s0, s1;  // strides of the two matrix dims, in elements
};

template <class T>
void gemm_2d(int64_t m, int64_t n, int64_t k, const T* a, int64_t sam, int64_t sak, const T* b,
             int64_t sbk, int64_t sbn, T* c, T alpha, const T* bias, int64_t sbias_m,
             int64_t sbias_n, T beta) {
  std::vector<T> packed;
  if (sbn != 1 && n > 1) {
    packed.resize(static_cast<std::size_t>(k * n));
    for (int64_t kk = 0; kk < k; ++kk)
      for (int64_t j = 0; j < n; ++j)
        packed[static_cast<std::size_t>(kk * n + j)] = b[kk * sbk + j * sbn];
    b = packed.data();
    sbk = n;
    sbn = 1;
  }
  parallel_for(
      0, (m + kRowsPerTask - 1) / kRowsPerTask,
      std::max<int64_t>(1, 65536 / std::max<int64_t>(1, n * k)), [&](int64_t t0, int64_t t1) {
        for (int64_t i0 = t0 * kRowsPerTask; i0 < std::min(m, t1 * kRowsPerTask); i0 += 4) {
          const int64_t rows = std::min<int64_t>(4, m - i0);
          for (int64_t r = 0; r < rows; ++r)
            std::fill(c + (i0 + r) * n, c + (i0 + r + 1) * n, T(0));
          for (int64_t j0 = 0; j0 < n; j0 += kBlockN) {
            const int64_t j1 = std::min(n, j0 + kBlockN);
            for (int64_t k0 = 0; k0 < k; k0 += kBlockK) {
              const int64_t k1 = std::min(k, k0 + kBlockK);
              if (rows == 4) {
                T* c0 = c + i0 * n;
                T* c1 = c0 + n;
                T* c2 = c1 + n;
                T* c3 = c2 + n;
                for (int64_t kk = k0; kk < k1; ++kk) {
                  const T a0 = a[i0 * sam + kk * sak], a1 = a[(i0 + 1) * sam + kk * sak];
                  const T a2 = a[(i0 + 2) * sam + kk * sak], a3 = a[(i0 + 3) * sam + kk * sak];
                  const T* br = b + kk * sbk;
                  for (int64_t j = j0; j < j1; ++j) {
                    const T bv = br[j];
                    c0[j] += a0 * bv;
                    c1[j] += a1 * bv;
                    c2[j] += a2 * bv;
                    c3[j] += a3 * bv;
                  }
                }
              } else {
                for (int64_t r = 0; r < rows; ++r) {
                  T* cr = c + (i0 + r) * n;
                  for (int64_t kk = k0; kk < k1; ++kk) {
                    const T av = a[(i0 + r) * sam + kk * sak];
                    const T* br = b + kk * sbk;
                    for (int64_t j = j0; j < j1; ++j) cr[j] += av * br[j];
                  }
                }
              }
            }
          }
          for (int64_t r = 0; r < rows; ++r) {
            const int64_t i = i0 + r;
            T* cr = c + i * n;
            if (bias != nullptr) {
              for (int64_t j = 0; j < n; ++j)
                cr[j] = alpha * cr[j] + beta * bias[i * sbias_m + j * sbias_n];
            } else if (alpha != T(1)) {
              for (int64_t j = 0; j < n; ++j) cr[j] = alpha * cr[j];
            }
          }
        }
      });
}

}  // namespace

Strides gemm_broadcast_strides(const Tensor& t, const Shape& shape) {
  Strides s(shape.size(), 0);
  const std::size_t off = shape.size() - static_cast<std::size_t>(t.dim());
  for (std::size_t d = 0; d < static_cast<std::size_t>(t.dim()); ++d)
    s[off + d] = t.shape()[d] == 1 ? 0 : t.strides()[d];
  return s;
}

void gemm_blocked(const GemmArgs& g) {
  const Shape& cs = g.c.shape();
  const std::size_t nd = cs.size();
  const int64_t m = cs[nd - 2], n = cs[nd - 1], k = g.a.shape()[g.a.dim() - 1];
  Shape batch(cs.begin(), cs.end() - 2);
  // Broadcast strides against c with a's / b's own matrix dims in the last two slots.
  Shape a_full = batch, b_full = batch;
  a_full.push_back(m);
  a_full.push_back(k);
  b_full.push_back(k);
  b_full.push_back(n);
  Strides sa = gemm_broadcast_strides(g.a, a_full), sb = gemm_broadcast_strides(g.b, b_full);
  Strides sbias = g.bias.defined() ? gemm_broadcast_strides(g.bias, cs) : Strides(nd, 0);
  dispatch_dtype(g.c.dtype(), [&]<class T>() {
    if constexpr (std::is_same_v<T, double> || std::is_same_v<T, float>) {
      const T* a = static_cast<const T*>(g.a.data_ptr());
      const T* b = static_cast<const T*>(g.b.data_ptr());
      const T* bias = g.bias.defined() ? static_cast<const T*>(g.bias.data_ptr()) : nullptr;
      T* c = static_cast<T*>(g.c.data_ptr());
      const int64_t nb = numel(batch);
      for (int64_t bi = 0; bi < nb; ++bi) {
        int64_t oa = 0, ob = 0, obias = 0, rem = bi;
        for (std::size_t d = batch.size(); d-- > 0;) {
          const int64_t idx = rem % batch[d];
          rem /= batch[d];
          oa += idx * sa[d];
          ob += idx * sb[d];
          obias += idx * sbias[d];
        }
        gemm_2d<T>(m, n, k, a + oa, sa[nd - 2], sa[nd - 1], b + ob, sb[nd - 2], sb[nd - 1],
                   c + bi * m * n, static_cast<T>(g.alpha), bias ? bias + obias : nullptr,
                   sbias[nd - 2], sbias[nd - 1], static_cast<T>(g.beta));
      }
    } else {
      ATH_THROW(NotImplementedError, "the blocked matmul kernel takes float32 or float64, not {}",
                dtype_name(g.c.dtype()));
    }
  });
}

}  // namespace ath::kernels
